//! `parse DOCS [ROUNDS]`: reading one large manifest (a `helm template` or `kubectl get -o yaml` output)
//! against the same documents split over 24 files, through the loader `pier translate` and `pier serve`
//! use. The documents are a Service, its EndpointSlice and an HTTPRoute (a third of DOCS each) in block
//! style with the metadata `kubectl get -o yaml` prints (~25 lines each). Prints one JSON line per
//! round: the time per document of each layout and their ratio. Issue 22 saw 4,000 objects in one file
//! take 2.6× as long per document as split (each document was padded with every line before it, to
//! keep the file's line numbers).
//!
//! `parse-files DIR DOCS` writes both layouts (`DIR/one`, `DIR/split`), for whole-process runs of
//! `pier translate` with another build.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Files the split layout uses.
const FILES: usize = 24;

/// Writes `DIR/one/all.yaml` and `DIR/split/part-NN.yaml` with `docs` documents (and the Gateway in
/// each); returns the two directories.
pub fn write(dir: &Path, docs: usize) -> (PathBuf, PathBuf) {
    let services = docs / 3;
    let texts: Vec<String> = (0..services).map(rendered).collect();
    let gateway = pier::testkit::workload::Workload::new(0).gateway();
    let one = dir.join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::write(one.join("all.yaml"), texts.join("---\n")).unwrap();
    std::fs::write(one.join("gateway.yaml"), &gateway).unwrap();
    let split = dir.join("split");
    std::fs::create_dir_all(&split).unwrap();
    for (f, chunk) in texts.chunks(services.div_ceil(FILES)).enumerate() {
        std::fs::write(split.join(format!("part-{f:02}.yaml")), chunk.join("---\n")).unwrap();
    }
    std::fs::write(split.join("gateway.yaml"), &gateway).unwrap();
    (one, split)
}

/// Service `s-i`, its slice and route `r-i`, as `kubectl get -o yaml` prints them.
fn rendered(i: usize) -> String {
    let (a, b) = (i / 250 % 250, i % 250 + 1);
    let meta = |kind: &str, name: &str| {
        format!(
            "metadata:
  annotations:
    meta.helm.sh/release-name: apps
    meta.helm.sh/release-namespace: apps
  creationTimestamp: \"2026-11-01T10:00:00Z\"
  generation: 1
  labels:
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/name: {name}
  name: {name}
  namespace: apps
  resourceVersion: \"{rv}\"
  uid: 6c0f{i:08x}-{kind}-4b1e-9d2a-0242ac120002
",
            rv = 1000 + i
        )
    };
    format!(
        "apiVersion: v1
kind: Service
{svc}spec:
  clusterIP: 10.96.{a}.{b}
  ports:
  - name: http
    port: 80
    protocol: TCP
    targetPort: 8080
  selector:
    app.kubernetes.io/name: s-{i}
  type: ClusterIP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
addressType: IPv4
endpoints:
- addresses:
  - 10.{a}.{b}.1
  conditions:
    ready: true
  targetRef:
    kind: Pod
    name: s-{i}-abc12
    namespace: apps
- addresses:
  - 10.{a}.{b}.2
  conditions:
    ready: true
{slice}ports:
- name: http
  port: 8080
  protocol: TCP
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
{route}spec:
  hostnames:
  - h-{i}.example.com
  parentRefs:
  - group: gateway.networking.k8s.io
    kind: Gateway
    name: edge
    namespace: infra
  rules:
  - backendRefs:
    - group: \"\"
      kind: Service
      name: s-{i}
      port: 80
      weight: 1
    matches:
    - path:
        type: PathPrefix
        value: /
",
        svc = meta("svc", &format!("s-{i}")),
        slice = meta("eps", &format!("s-{i}-x7k2p"))
            .replace(
                "    app.kubernetes.io/name:",
                "    kubernetes.io/service-name: s-{i}\n    app.kubernetes.io/name:"
            )
            .replace("{i}", &i.to_string()),
        route = meta("rt", &format!("r-{i}")),
    )
}

pub fn run(docs: usize, rounds: usize) {
    let work = tempfile::tempdir().expect("work dir");
    let services = docs / 3;
    let (one, split) = write(work.path(), docs);
    let bytes = std::fs::metadata(one.join("all.yaml")).unwrap().len();
    for round in 0..rounds {
        let one_s = time(&one, services);
        let split_s = time(&split, services);
        let per = |s: f64| s * 1e6 / (services * 3) as f64;
        println!(
            "{}",
            serde_json::json!({
                "round": round, "documents": services * 3, "file_bytes": bytes,
                "one_file_us_per_doc": (per(one_s) * 100.0).round() / 100.0,
                "split_us_per_doc": (per(split_s) * 100.0).round() / 100.0,
                "one_file_over_split": (one_s / split_s * 1000.0).round() / 1000.0,
            })
        );
    }
}

/// Seconds to load `dir`, checking that every Service arrived.
fn time(dir: &Path, services: usize) -> f64 {
    let t = Instant::now();
    let loaded = pier::source::files::load_paths(&[PathBuf::from(dir)]).expect("loads");
    let took = t.elapsed().as_secs_f64();
    assert_eq!(loaded.model.services.len(), services);
    assert_eq!(loaded.model.endpoint_slices.len(), services);
    assert_eq!(loaded.model.http_routes.len(), services);
    took
}
