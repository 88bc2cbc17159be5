//! Giving the memory a big parse freed back to the system.

static RELEASE_FREE_MEMORY: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// For a program whose global allocator is not the C library's: how to give freed memory
/// back to the system after a big parse (the `kiwi` binary sets mimalloc's collection).
pub fn set_release_free_memory(release: fn()) {
    let _ = RELEASE_FREE_MEMORY.set(release);
}

/// Give the heap pages freed by a parse of many files (syntax trees, items not kept) back to
/// the system: glibc keeps them in its per-thread arenas otherwise, and a long-running server
/// would hold them for good.
pub fn release_free_memory() {
    if let Some(release) = RELEASE_FREE_MEMORY.get() {
        // On every thread of the pool too: memory freed on another thread than the one that
        // allocated it (a text let go of) is given back by its own thread's heap (11 MB more
        // of the language server's resident memory at 10,000 items). Not waited for: a
        // caller may hold a lock that a busy thread of the pool waits for.
        rayon::spawn_broadcast(move |_| release());
        release();
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
