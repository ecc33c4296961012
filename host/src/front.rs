//! `agmsg-host`, the program users and agmsg's scripts run: a small one, since starting the whole host
//! (wasmtime, Cranelift, every driver's machine code: a 60 MB file) costs about as much CPU as the op a
//! resident server runs for it. It offers its argv to this user's server of its build (the build is
//! the engine's: `agmsg-host-engine`, the whole host, in the same directory), exits as the op did when
//! one took it, and otherwise becomes the engine (exec: same process, argv, environment and
//! descriptors), which runs the op in-process and starts a server for the next. It links the server's
//! client and the exit codes' one map, nothing that runs a driver.

#[allow(dead_code)] // The front uses the one map of codes and the failure line; the engine the rest.
#[path = "cli/exit.rs"]
mod exit;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::server::{self, Forward};

#[global_allocator]
static ALLOCATOR: arena::Arena = arena::Arena::new();

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let engine = match this_program(args.first()) {
        // Beside this program's file, links resolved: where an install placed the two.
        Ok(front) => front.with_file_name(server::ENGINE),
        Err(e) => return exit::fail("engine", &HostError::new(ExitClass::RUNTIME, format!("cannot locate agmsg-host itself: {e}"))),
    };
    match server::forward(&args, &engine) {
        Forward::Answered(code) => ExitCode::from(code),
        Forward::Lost(e) => exit::fail("server", &e),
        Forward::InProcess => {
            let mut command = std::process::Command::new(&engine);
            // The user's argv[0], as the engine reads it (the path shims name, agent detection).
            command.arg0(args.first().cloned().unwrap_or_else(|| server::FRONT.into()));
            command.args(args.iter().skip(1)).env(server::OFFERED, "1");
            let e = command.exec();
            exit::fail(
                "engine",
                &HostError::new(
                    ExitClass::RUNTIME,
                    format!(
                        "cannot run {} ({e}): agmsg-host runs its engine from its own directory; install both programs there (README, \
                         \"Install\")",
                        engine.display()
                    ),
                ),
            )
        }
    }
}

/// This program's file, links resolved: `/proc/self/exe`, else (a sandbox without /proc) where
/// `argv[0]` leads as a shell ran it.
fn this_program(arg0: Option<&OsString>) -> std::io::Result<PathBuf> {
    std::env::current_exe().or_else(|no_proc| {
        let path = std::env::var_os("PATH");
        match arg0.and_then(|arg0| agmsg_host::shim::invoked_path(Path::new(arg0), path.as_deref())) {
            Some(invoked) => invoked.canonicalize(),
            None => Err(no_proc),
        }
    })
}

/// The front's allocator. musl's malloc maps a page for each new size of allocation and unmaps it when
/// it is freed: about ten mmap/munmap calls per run, each a page-table change and a TLB flush, a fifth
/// of the front's CPU (perf, a served peek). The front allocates a few kilobytes and lives for one op,
/// so it takes them from a static arena (untouched pages cost nothing) and never gives them back; past
/// the arena, the system's allocator takes over, so a long op's front is no different from before.
mod arena {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const SIZE: usize = 256 << 10;

    pub struct Arena {
        bytes: UnsafeCell<[u8; SIZE]>,
        /// Offset of the first free byte.
        used: AtomicUsize,
    }

    // SAFETY: every byte is handed out at most once (`used` only grows, by compare-exchange), except
    // the last allocation's, given back and grown only by its owner (below).
    unsafe impl Sync for Arena {}

    impl Arena {
        pub const fn new() -> Arena {
            Arena { bytes: UnsafeCell::new([0; SIZE]), used: AtomicUsize::new(0) }
        }

        fn start(&self) -> usize {
            self.bytes.get() as usize
        }

        fn holds(&self, ptr: *mut u8) -> bool {
            (self.start()..self.start() + SIZE).contains(&(ptr as usize))
        }

        /// Move `used` from `from` to `to`, if no one else moved it meanwhile.
        fn bump(&self, from: usize, to: usize) -> bool {
            to <= SIZE && self.used.compare_exchange(from, to, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        }
    }

    // SAFETY: a block is handed out once and lies within the arena or comes from System; each is given
    // back where it came from.
    unsafe impl GlobalAlloc for Arena {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            loop {
                let used = self.used.load(Ordering::Relaxed);
                // Aligned as an address, not as an offset: the arena itself is only byte-aligned.
                let offset = (self.start() + used).next_multiple_of(layout.align()) - self.start();
                let Some(end) = offset.checked_add(layout.size()).filter(|&end| end <= SIZE) else {
                    // SAFETY: the caller's layout, passed on.
                    return unsafe { System.alloc(layout) };
                };
                if self.bump(used, end) {
                    // SAFETY: offset + size is within the arena.
                    return unsafe { (self.bytes.get() as *mut u8).add(offset) };
                }
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if self.holds(ptr) {
                // The last allocation is given back (a vector grown, then dropped); any other stays.
                let end = ptr as usize - self.start() + layout.size();
                self.bump(end, ptr as usize - self.start());
            } else {
                // SAFETY: allocated by System with this layout (alloc or realloc above).
                unsafe { System.dealloc(ptr, layout) }
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if self.holds(ptr) {
                let offset = ptr as usize - self.start();
                // The last allocation grows or shrinks in place.
                if self.bump(offset + layout.size(), offset + new_size) {
                    return ptr;
                }
                // SAFETY: the new layout is valid (GlobalAlloc's contract); both blocks hold the bytes copied.
                unsafe {
                    let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            } else {
                // SAFETY: allocated by System with this layout.
                unsafe { System.realloc(ptr, layout, new_size) }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn blocks_are_aligned_distinct_given_back_last_first_and_past_the_arena_are_the_systems() {
            let arena = Box::new(Arena::new());
            // SAFETY: layouts of non-zero size; each block is used within its size and given back once.
            unsafe {
                let a = arena.alloc(Layout::from_size_align(3, 1).unwrap());
                let b = arena.alloc(Layout::from_size_align(16, 16).unwrap());
                assert!(arena.holds(a) && arena.holds(b));
                assert_eq!(b as usize % 16, 0);
                assert!(b as usize >= a as usize + 3, "blocks overlap");
                b.write_bytes(0xab, 16);
                // The last block grows in place; given back, its room is handed out again.
                let grown = arena.realloc(b, Layout::from_size_align(16, 16).unwrap(), 64);
                assert_eq!(grown, b);
                assert_eq!(*grown.add(15), 0xab);
                arena.dealloc(grown, Layout::from_size_align(64, 16).unwrap());
                assert_eq!(arena.alloc(Layout::from_size_align(16, 16).unwrap()), b);
                // A block that is not the last one moves when it grows, its bytes with it.
                a.write_bytes(7, 3);
                let moved = arena.realloc(a, Layout::from_size_align(3, 1).unwrap(), 10);
                assert_ne!(moved, a);
                assert_eq!(std::slice::from_raw_parts(moved, 3), &[7, 7, 7]);
                // More than is left: the system's, and given back to it.
                let big = Layout::from_size_align(SIZE, 8).unwrap();
                let outside = arena.alloc(big);
                assert!(!outside.is_null() && !arena.holds(outside));
                arena.dealloc(outside, big);
            }
        }
    }
}
