//! Settings of the allocator (mimalloc, the binary's global allocator) that
//! bound the peak of one huge session. Measured on the 1 GB Claude Code
//! transcript of `benches/` (`check`, 2 cores): 276 MiB peak RSS with
//! mimalloc's defaults, 267 MiB without transparent huge pages, 251 MiB when
//! freed memory also goes back to the OS at once.

/// Input bytes of one session from which freed memory is returned to the
/// OS at once ([`return_freed_memory_at_once`]): 64 MiB.
pub const HUGE_SESSION_BYTES: u64 = 64 << 20;

/// mimalloc's `purge_delay` option: its index in the v2 `mi_option_e`
/// (`mimalloc.h` of libmimalloc-sys 0.1.49), milliseconds before freed
/// memory is returned to the OS (default 10; arenas 10 times that).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// From now on, freed memory goes back to the OS at once (`purge_delay` 0)
/// instead of after 10 to 100 ms, so what one step of a huge session frees
/// (a rule's id map, a view) is not still resident when the next step
/// allocates its own. Only for huge sessions: with many small ones, the
/// extra `madvise` calls made `check` of the many-sessions benchmark about
/// 30% slower.
pub fn return_freed_memory_at_once() {
    // SAFETY: sets one of mimalloc's runtime options; no memory is touched.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

/// No transparent huge pages for this process (Linux `PR_SET_THP_DISABLE`):
/// mimalloc asks for them on its arenas, and a 2 MiB page stays resident
/// while any byte of it is in use. No measurable cost in time. An error
/// leaves the system's setting.
pub fn no_huge_pages() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index names `purge_delay`: its default is 10 ms (the options
    /// beside it default to 1 and 0), and setting it reads back.
    #[test]
    fn the_purge_delay_index_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads one of mimalloc's options.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(get(), 10, "mimalloc's default purge delay");
        return_freed_memory_at_once();
        assert_eq!(get(), 0);
    }
}
