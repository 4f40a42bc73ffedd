//! `fedcluster`: run, reproduce and benchmark clustered federated learning.
//! The command itself is [`fedcluster_cli::main_with_args`].
//!
//! The one `unsafe` of this crate is the global allocator below (an exception
//! ARCHITECTURE.md names): it forwards to mimalloc, and turns an allocation
//! that fails into one error line and exit status 1 instead of an abort.

use std::alloc::{GlobalAlloc, Layout};
use std::io::Write;
use std::process::ExitCode;

/// mimalloc keeps freed pages for reuse: every round allocates and frees the
/// clients' reply buffers, which with the system allocator cost page faults
/// (16% of a reproduction's time went to the kernel).
#[global_allocator]
static GLOBAL: Allocator = Allocator(mimalloc::MiMalloc);

/// mimalloc, with an allocation that fails reported and the process ended
/// with status 1 (see [`out_of_memory`]).
struct Allocator(mimalloc::MiMalloc);

// SAFETY: every method forwards to mimalloc's, with the caller's layout and
// pointer unchanged, so mimalloc's guarantees are this allocator's; a null
// result never returns (the process exits).
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `layout` is mimalloc's.
        checked(unsafe { self.0.alloc(layout) }, layout.size())
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        checked(unsafe { self.0.alloc_zeroed(layout) }, layout.size())
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by mimalloc with `layout` (the caller's contract).
        unsafe { self.0.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `ptr`, `layout` and `new_size` is mimalloc's.
        checked(unsafe { self.0.realloc(ptr, layout, new_size) }, new_size)
    }
}

/// `ptr`, unless it is null: then [`out_of_memory`].
fn checked(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() {
        out_of_memory(size);
    }
    ptr
}

/// Writes `error: out of memory: an allocation of N bytes failed` to stderr
/// without allocating (the line is built on the stack) and exits with 1.
fn out_of_memory(size: usize) -> ! {
    let mut line = [0u8; 96];
    let head = b"error: out of memory: an allocation of ";
    let tail = b" bytes failed (see --max-memory)\n";
    let mut digits = [0u8; 20];
    let mut n = size;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut len = 0;
    for part in [&head[..], &digits[i..], &tail[..]] {
        line[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    // Stderr is unbuffered: the write allocates nothing.
    let _ = std::io::stderr().write_all(&line[..len]);
    // No unwinding and no destructors of this thread that could allocate again.
    std::process::exit(1)
}

fn main() -> ExitCode {
    ExitCode::from(fedcluster_cli::main_with_args(std::env::args_os()))
}
