//! Settings of the allocator (mimalloc, the binary's global allocator) that
//! bound the peak of one huge session. Measured on the 1 GB Claude Code
//! transcript of `benches/` (`check`, 2 cores): 276 MiB peak RSS with
//! mimalloc's defaults, 267 MiB without transparent huge pages, 251 MiB when
//! freed memory also goes back to the OS at once. Later (585549c), with
//! freed memory kept for 1 ms while the session loads
//! ([`loading_huge_session`]): `check` 1.99-2.03 -> 1.84-1.91 s (system time
//! 0.64-0.77 -> 0.56-0.65 s), 230-232 -> 236-239 MiB; the 1 GB Codex
//! rollout's `check` 4.7-5.3 -> 3.9-4.8 s (system time 2.3 -> 0.8-1.2 s)
//! at the same peak. Kept for 1 ms for the whole run, the Codex peak grew by
//! about 100 MiB (its compact plan). Later still (with 4 MiB reads), kept
//! for 5 ms while loading: page faults of the 1 GB Codex `check` 390-450k
//! -> 300k, system time 1.1-2.0 -> 0.9-1.1 s, wall 3.54-4.56 -> 3.47-3.87 s,
//! same peak; Claude Code 1.75-2.04 -> 1.70-1.72 s (faults 172k -> 142k),
//! peak 236-240 -> 241-244 MiB; opencode the same time, peak 197-201 ->
//! 214-219 MiB. Kept for 5 ms for the whole run, the Codex peak grew by
//! 130 MiB again.

/// Input bytes of one session from which freed memory is returned to the
/// OS at once ([`return_freed_memory_at_once`]): 64 MiB.
pub const HUGE_SESSION_BYTES: u64 = 64 << 20;

/// mimalloc's `purge_delay` option: its index in the v2 `mi_option_e`
/// (`mimalloc.h` of libmimalloc-sys 0.1.49), milliseconds before freed
/// memory is returned to the OS (default 10; arenas 10 times that).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Milliseconds freed memory stays before it goes back to the OS while a
/// huge session loads ([`loading_huge_session`]): 5 (measured in the
/// module notes).
pub const LOAD_PURGE_DELAY_MS: std::ffi::c_long = 5;

/// While a huge session loads, freed memory goes back to the OS after
/// [`LOAD_PURGE_DELAY_MS`], not at once: the parse frees and takes again
/// blocks and per-line buffers all the time, and returning them at once
/// cost a page fault per 4 KiB taken again. [`return_freed_memory_at_once`]
/// ends it. The option is the process's: with several huge sessions loading
/// on several workers, one worker's end of a load ends it for all, which
/// costs time, never memory.
pub fn loading_huge_session() {
    // SAFETY: sets one of mimalloc's runtime options; no memory is touched.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, LOAD_PURGE_DELAY_MS) };
}

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
        loading_huge_session();
        assert_eq!(get(), LOAD_PURGE_DELAY_MS);
        return_freed_memory_at_once();
        assert_eq!(get(), 0);
    }
}
