//! The containers and the network of one replicas run, removed on drop (containers, then the network,
//! then the images the run built), so a failing test leaves nothing behind. On a panic the containers'
//! logs are printed first: they are the only account of what happened inside.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crate::compose::run::run;

const QUICK: Duration = Duration::from_secs(60);

/// One Docker network of the run's own, with fixed addresses for its containers.
pub struct Net {
    pub name: String,
    /// `172.X.Y`: the /24 the network uses.
    pub prefix: String,
    containers: Vec<String>,
    pub images: Vec<String>,
}

/// `docker ARGS...`, panicking with its output when it fails.
pub fn docker(args: &[&str]) -> String {
    let mut cmd = Command::new("docker");
    cmd.args(args);
    run(&mut cmd, QUICK).unwrap_or_else(|e| panic!("{e}"))
}

impl Net {
    /// A bridge network named after `run`, on the first free /24 of 172.30–172.31.
    pub fn create(run_id: &str) -> Net {
        let name = format!("pier-replicas-{run_id}");
        for third in 0..=255u16 {
            let prefix = format!("172.{}.{}", 30 + third / 128, (third % 128) * 2);
            let subnet = format!("{prefix}.0/24");
            let mut cmd = Command::new("docker");
            cmd.args(["network", "create", "--driver", "bridge", "--subnet", &subnet])
                .args(["--label", "dev.pier.test=replicas", &name]);
            if run(&mut cmd, QUICK).is_ok() {
                return Net {
                    name,
                    prefix,
                    containers: Vec::new(),
                    images: Vec::new(),
                };
            }
        }
        panic!("no free /24 in 172.30.0.0/15 for the test's network");
    }

    pub fn ip(&self, host: u8) -> String {
        format!("{}.{host}", self.prefix)
    }

    /// Starts container `name` at `.host` on the network, from `image`, with `args` before the image
    /// (mounts, published ports) and `command` after it.
    pub fn start(&mut self, name: &str, host: u8, image: &str, args: &[&str], command: &[&str]) {
        let ip = self.ip(host);
        let mut all = vec!["run", "-d", "--name", name, "--network", &self.name, "--ip", &ip];
        all.extend(["--label", "dev.pier.test=replicas"]);
        all.extend_from_slice(args);
        all.push(image);
        all.extend_from_slice(command);
        self.containers.push(name.to_string());
        docker(&all);
    }

    /// The host address Docker published the container's `port` on.
    pub fn published(&self, container: &str, port: u16) -> SocketAddr {
        let out = docker(&["port", container, &format!("{port}/tcp")]);
        out.lines()
            .find_map(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("{container}:{port} is not published: {out}"))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for c in &self.containers {
                let mut cmd = Command::new("docker");
                cmd.args(["logs", "--tail", "60", c]);
                let logs = run(&mut cmd, QUICK).unwrap_or_else(|e| e);
                eprintln!("--- docker logs {c} ---\n{logs}");
            }
        }
        for c in &self.containers {
            let mut cmd = Command::new("docker");
            cmd.args(["rm", "-f", "-v", c]);
            let _ = run(&mut cmd, QUICK);
        }
        let mut cmd = Command::new("docker");
        cmd.args(["network", "rm", &self.name]);
        let _ = run(&mut cmd, QUICK);
        for image in &self.images {
            let mut cmd = Command::new("docker");
            cmd.args(["rmi", "-f", image]);
            let _ = run(&mut cmd, QUICK);
        }
    }
}
