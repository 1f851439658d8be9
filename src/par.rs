//! Mapping a slice on every core, results in input order, so what callers build from them — and the
//! first error they report — is what one thread would give. Pure: the same input gives the same output
//! whatever the thread count, which is why the core may use it.
//!
//! Three kinds of caller:
//! - reading files (`src/source/files/mod.rs`, the directory cache's full walk): parsing YAML is most of
//!   a whole-directory read, and each file parses on its own. The cache once read on one thread: under
//!   glibc's malloc, objects parsed on a second thread lived on in that thread's arena, and at 10,000
//!   routes the server idled at 512 MiB against 464 MiB. Under mimalloc (the binary's allocator) the
//!   parallel read costs no memory and the server is ready sooner (`docs/performance.md`).
//! - the engine's independent units (`src/translate/engine/gateways.rs`: routes attached where no
//!   route's hostnames can refuse another's; `src/translate/engine/gateway/`: clusters packed and
//!   routes encoded): pure functions of data no one writes meanwhile, each recording its reads on its
//!   own thread.
//! - writing `pier translate`'s YAML (`src/model/yaml/emit/root.rs`): its long lists rendered in
//!   batches, a batch per worker ([`map_batches`]).
//!
//! Below [`MIN_PARALLEL`] items everything runs on the caller's thread, so an update of a few routes
//! starts no thread ([`map_batches`] runs from two batches on: its caller cuts only long lists).
//! Plain `std::thread::scope` rather than rayon: one call site shape (map a slice, keep order), and
//! no global pool living on in a long-running server for what happens at start-up, on a full re-read
//! and on a Gateway's rebuild.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Below this many items the threads cost more than they save (a watcher's change is one file).
const MIN_PARALLEL: usize = 64;
/// Items a worker takes at a time: small enough to even out files of different sizes.
const CHUNK: usize = 16;
/// More threads than this only contend for the allocator.
const MAX_THREADS: usize = 8;

/// `items.iter().map(f).collect()`, spread over the machine's cores.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < MIN_PARALLEL {
        return items.iter().map(f).collect();
    }
    spread(items, CHUNK, f)
}

/// [`map`] for items that are each a batch the caller made (a few hundred resources to render): on
/// every core from two items on, one item at a time.
pub fn map_batches<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    spread(items, 1, f)
}

/// The workers take `chunk` items at a time; results in input order.
fn spread<T: Sync, R: Send>(items: &[T], chunk: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_THREADS)
        .min(items.len().div_ceil(chunk));
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(chunk, Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + chunk).min(items.len());
            done.push((start, items[start..end].iter().map(&f).collect::<Vec<R>>()));
        }
    };
    let mut chunks: Vec<(usize, Vec<R>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    chunks.sort_unstable_by_key(|(start, _)| *start);
    chunks.into_iter().flat_map(|(_, results)| results).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_input_order_at_every_size() {
        for n in [0, 1, 63, 64, 65, 1_000, 4_097] {
            let items: Vec<usize> = (0..n).collect();
            let out = map(&items, |i| i * 3);
            assert_eq!(out, items.iter().map(|i| i * 3).collect::<Vec<_>>(), "n = {n}");
            let batches = map_batches(&items, |i| i * 3);
            assert_eq!(batches, out, "batches, n = {n}");
        }
    }

    #[test]
    fn a_worker_panic_reaches_the_caller() {
        let items: Vec<usize> = (0..500).collect();
        let caught = std::panic::catch_unwind(|| map(&items, |&i| if i == 321 { panic!("item 321") } else { i }));
        assert!(caught.is_err());
    }
}
