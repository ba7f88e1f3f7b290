//! One allocation over [`LIMIT`] ends a fuzz target with a message and a backtrace,
//! whatever sanitizer it was built with.
//!
//! libFuzzer's own `-malloc_limit_mb` sees allocations through the sanitizer's malloc
//! hooks: a target built with `-s none` (the CI build, `scripts/fuzz-ci.sh`) has none,
//! so a huge `Vec::with_capacity` that is never touched would pass unseen (Linux grants
//! the reservation) although it is unbounded allocation from a few bytes of input. This
//! allocator checks the size before forwarding to the system allocator, as the
//! regression tests' recording allocator does (`tests/fuzz_regressions.rs`). Not in
//! those tests (`cfg(test)`): they include `lib.rs` with their own allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// The fuzz runs' `-malloc_limit_mb=512`.
pub const LIMIT: usize = 512 << 20;

struct Limited;

/// Aborts (an allocator must not unwind) after saying what was asked and from where;
/// libFuzzer takes the abort as a crash and saves the input. The backtrace's own small
/// allocations pass the check.
fn check(size: usize) {
    if size > LIMIT {
        let _ = writeln!(
            std::io::stderr(),
            "==fragfs-fuzz: one allocation of {size} bytes, over the {} MiB limit, from:\n{}",
            LIMIT >> 20,
            std::backtrace::Backtrace::force_capture()
        );
        std::process::abort();
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator, after a check that
// only reads the size.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Limited = Limited;
