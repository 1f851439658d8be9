//! Full against incremental translation, criterion-measured, on the synthetic fleet of
//! `pier::testkit::workload` (N routes + N XBackends, half with TLS, N/4 Services with 8 endpoints and a
//! BackendTLSPolicy, one Gateway with an HTTP and an HTTPS listener):
//!
//! - `full/N`: `translate()` of the whole model (what every change cost before the engine).
//! - `incremental/CHANGE/N`: one [`Change`] applied to an engine that holds the model (the timed part),
//!   then reverted untimed, so every sample applies the same change to the same state.
//!
//! `cargo bench --bench incremental` (all sizes: 1k, 5k, 10k); `PIER_BENCH_SIZES=1000` narrows it.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pier::testkit::workload::{Change, Workload};
use pier::translate::engine::Engine;

fn sizes() -> Vec<usize> {
    std::env::var("PIER_BENCH_SIZES")
        .ok()
        .map(|s| {
            s.split(',')
                .map(|n| n.parse().expect("PIER_BENCH_SIZES: comma-separated numbers"))
                .collect()
        })
        .unwrap_or_else(|| vec![1000, 5000, 10_000])
}

fn full(c: &mut Criterion) {
    let opts = pier::Options::default();
    let mut group = c.benchmark_group("full");
    group.sample_size(10);
    for n in sizes() {
        let model = Workload::new(n).models(Change::RouteEdited).0;
        group.bench_with_input(BenchmarkId::from_parameter(n), &model, |b, m| {
            b.iter(|| pier::translate(m, &opts))
        });
    }
    group.finish();
}

fn incremental(c: &mut Criterion) {
    let opts = pier::Options::default();
    let mut group = c.benchmark_group("incremental");
    group.sample_size(30);
    for n in sizes() {
        let w = Workload::new(n);
        for change in Change::ALL {
            let (before, after) = w.models(change);
            let mut engine = Engine::with(before.clone(), opts.clone());
            group.bench_function(BenchmarkId::new(change.name(), n), |b| {
                b.iter_custom(|iters| {
                    let mut took = Duration::ZERO;
                    for _ in 0..iters {
                        let t = Instant::now();
                        let u = engine.update(after.clone());
                        took += t.elapsed();
                        assert!(!u.gateways.is_empty(), "{change:?} changed nothing");
                        engine.update(before.clone());
                    }
                    took
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, full, incremental);
criterion_main!(benches);
