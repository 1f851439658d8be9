//! Transparent huge pages off for the whole process.
//!
//! mimalloc purges free 64 KiB pages of its arenas. Where those arenas are backed by 2 MiB huge pages,
//! each later reuse faults in and zeroes a whole fresh huge page: a quarter of `pier serve`'s start-up
//! samples at 10,000 routes went to the kernel's `clear_page_erms`. The allocator is built without its
//! own request for huge pages (`no_thp` in `Cargo.toml`), but a host whose THP setting is `always` gives
//! them anyway; there, with THP left on, 10,000 routes were ready in 2.31–2.49 s at 255–279 MiB, and
//! with it off in 1.71–1.80 s at 249–250 MiB (`docs/performance.md`, "Allocator").

/// Asks the kernel for no transparent huge pages in this process (the flag is the process's memory
/// map's, and children inherit it). Where the kernel refuses (an old kernel, a seccomp profile), pier
/// runs as before, only slower to start: the reason is logged at debug.
pub fn disable_transparent_huge_pages() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(error = %e, "transparent huge pages stay on");
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    #[test]
    fn the_process_ends_up_without_transparent_huge_pages() {
        super::disable_transparent_huge_pages();
        assert_eq!(rustix::thread::transparent_huge_pages_are_disabled().ok(), Some(true));
    }
}
