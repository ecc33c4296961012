//! The driver components built into this binary, every axis: build.rs builds each crate under `drivers/`
//! whose Cargo.toml marks it bundled, and embeds it with its sha256 and machine code.

use crate::axis::Axis;

/// A bundled driver, embedded at build time with its sha256.
pub struct BundledDriver {
    pub axis: Axis,
    pub name: &'static str,
    pub sha256: &'static str,
    pub wasm: &'static [u8],
    /// Its agmsg manifest, when its axis has one (a terminal driver's `terminal.conf`).
    pub manifest: Option<&'static str>,
    /// Its machine code, precompiled by build.rs with this host's engine configuration (none when
    /// the build could not precompile it: then it is compiled at run time, through the cache). It
    /// starts at a 4 KiB boundary.
    pub precompiled: Option<&'static [u8]>,
}

/// Machine code is embedded at a page boundary: the host maps it executable where it lies in the
/// binary instead of copying it (see [`crate::runtime::code_memory`]).
#[repr(C, align(4096))]
pub struct PageAligned<T: ?Sized>(pub T);

/// The drivers of `axis` built into this binary, by name.
pub fn of(axis: Axis) -> impl Iterator<Item = &'static BundledDriver> {
    BUNDLED.iter().filter(move |d| d.axis == axis)
}

/// Whether `ptr` points into the machine code of a bundled driver.
pub fn holds_code(ptr: *const u8) -> bool {
    BUNDLED.iter().filter_map(|d| d.precompiled).any(|code| code.as_ptr_range().contains(&ptr))
}

/// The machine code built into this binary for the bundled component whose sha256 is `sha256`.
pub fn precompiled(sha256: &str) -> Option<&'static [u8]> {
    BUNDLED.iter().find(|d| d.sha256 == sha256).and_then(|d| d.precompiled)
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
