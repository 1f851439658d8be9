//! One run's compose project and everything it owns, torn down on drop: `down --volumes --remove-orphans`
//! (containers, the network, the pier-state volume), then the images the test built, then its temporary
//! directory. So a failing or panicking test leaves nothing behind; on a panic the services' logs are
//! printed first, since they are the only account of what went wrong inside the containers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::run::{describe, run};

/// `up` pulls nothing and builds nothing; it waits for the two init steps, so the bound is generous.
const UP_TIMEOUT: Duration = Duration::from_secs(180);
const DOWN_TIMEOUT: Duration = Duration::from_secs(120);
const QUICK: Duration = Duration::from_secs(30);

/// How to run Compose: the `docker compose` plugin (what the README tells users) or the standalone
/// `docker-compose` (1.29, what Debian ships). Both read the same file.
#[derive(Debug, Clone)]
pub struct Compose(Vec<&'static str>);

impl Compose {
    /// `Err` says why the test is skipped: no Docker daemon answers. A daemon without Compose is a
    /// failure, with what to install.
    pub fn detect() -> Result<Compose, String> {
        // Only the server's version: without a daemon, all there is to print is why.
        let mut info = Command::new("docker");
        info.args(["info", "--format", "{{.ServerVersion}}"]);
        if let Err(e) = run(&mut info, QUICK) {
            return Err(format!("no Docker daemon answers: {}", one_line(&e)));
        }
        for words in [vec!["docker", "compose"], vec!["docker-compose"]] {
            let mut cmd = Command::new(words[0]);
            cmd.args(&words[1..]).arg("version");
            if run(&mut cmd, QUICK).is_ok() {
                return Ok(Compose(words));
            }
        }
        panic!(
            "Docker answers but Compose is missing: install the compose plugin (`docker compose`) or \
             Debian's docker-compose"
        );
    }
}

/// A command's error on one line, without the empty sections' headings.
fn one_line(text: &str) -> String {
    let lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.ends_with(':'));
    lines.collect::<Vec<_>>().join(" ")
}

/// A compose project: `docker-compose.yaml` from the repository with the test's override file.
pub struct Stack {
    compose: Compose,
    pub project: String,
    files: Vec<PathBuf>,
    /// Tags of the images this run built; removed on drop.
    pub images: Vec<String>,
    /// Holds the override, the config copy and the image contexts; removed last.
    pub work: tempfile::TempDir,
}

impl Stack {
    pub fn new(compose: Compose, project: String, override_file: PathBuf, work: tempfile::TempDir) -> Stack {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("docker-compose.yaml");
        Stack {
            compose,
            project,
            files: vec![base, override_file],
            images: Vec::new(),
            work,
        }
    }

    /// `docker compose -p PROJECT -f docker-compose.yaml -f OVERRIDE ARGS...`. The listener ports are left
    /// empty so Docker picks free ones (`127.0.0.1::8080`); the caller's environment could set them.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.compose.0[0]);
        cmd.args(&self.compose.0[1..]).args(["-p", &self.project]);
        for file in &self.files {
            cmd.arg("-f").arg(file);
        }
        cmd.args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("ENVOY_HTTP_PORT", "")
            .env("ENVOY_HTTPS_PORT", "")
            .env_remove("COMPOSE_FILE")
            .env_remove("COMPOSE_PROJECT_NAME");
        cmd
    }

    /// Runs a compose command; panics with its output when it fails.
    pub fn compose(&self, args: &[&str], timeout: Duration) -> String {
        run(&mut self.command(args), timeout).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The services the merged files define, sorted.
    pub fn services(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .compose(&["config", "--services"], QUICK)
            .lines()
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }

    /// `up -d` with the local images only; returns once the init steps have exited and the rest started.
    pub fn up(&self) {
        self.compose(&["up", "-d", "--no-build"], UP_TIMEOUT);
    }

    /// The host address Docker published `service`'s container port on (`docker compose port`).
    pub fn published(&self, service: &str, port: u16) -> std::net::SocketAddr {
        let out = self.compose(&["port", service, &port.to_string()], QUICK);
        out.trim()
            .parse()
            .unwrap_or_else(|e| panic!("`compose port {service} {port}` printed {out:?}: {e}"))
    }

    /// The last lines of every service's log.
    pub fn logs(&self) -> String {
        let mut cmd = self.command(&["logs", "--no-color", "--tail", "60"]);
        run(&mut cmd, QUICK).unwrap_or_else(|e| e)
    }

    /// `down --volumes --remove-orphans`, then removes the images. Returns what failed.
    pub fn tear_down(&mut self) -> Result<(), String> {
        let down = run(
            &mut self.command(&["down", "--volumes", "--remove-orphans", "--timeout", "5"]),
            DOWN_TIMEOUT,
        );
        let mut rmi = Command::new("docker");
        rmi.args(["rmi", "--force"]).args(&self.images);
        let removed = if self.images.is_empty() {
            Ok(String::new())
        } else {
            run(&mut rmi, QUICK)
        };
        self.images.clear();
        down.and(removed).map(drop)
    }

    /// What Docker still holds of this run: containers, networks and volumes by the project label, and
    /// the images by tag. Empty when the teardown was complete.
    pub fn leftovers(&self, images: &[String]) -> Vec<String> {
        let label = format!("label=com.docker.compose.project={}", self.project);
        let mut left = Vec::new();
        for kind in [["ps", "-a"], ["network", "ls"], ["volume", "ls"]] {
            let mut cmd = Command::new("docker");
            cmd.args(kind).args(["--quiet", "--filter", &label]);
            let what = describe(&cmd);
            match run(&mut cmd, QUICK) {
                Ok(out) => left.extend(out.lines().map(|id| format!("{what}: {id}"))),
                Err(e) => left.push(e),
            }
        }
        for tag in images {
            if run(Command::new("docker").args(["image", "inspect", tag]), QUICK).is_ok() {
                left.push(format!("image {tag}"));
            }
        }
        left
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("compose project {}: service logs\n{}", self.project, self.logs());
        }
        if let Err(e) = self.tear_down() {
            eprintln!("compose project {}: teardown failed: {e}", self.project);
        }
    }
}
