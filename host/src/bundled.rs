//! The driver components built into this binary, every axis: build.rs builds each crate under `drivers/`
//! whose Cargo.toml marks it bundled, and embeds it with its sha256 and machine code.

use crate::axis::Axis;

/// A bundled driver, embedded at build time with its sha256.
pub struct BundledDriver {
    pub axis: Axis,
    pub name: &'static str,
    /// Its Cargo metadata's `default = true`: its axis's driver when nothing selects one.
    pub default: bool,
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
/// binary instead of copying it (see [`agmsg_runtime::code_memory`]).
#[repr(C, align(4096))]
pub struct PageAligned<T: ?Sized>(pub T);

/// The drivers of `axis` built into this binary, by name.
pub fn of(axis: Axis) -> impl Iterator<Item = &'static BundledDriver> {
    BUNDLED.iter().filter(move |d| d.axis == axis)
}

/// The bundled driver of `axis` used when nothing selects one, if the axis has one (at most one:
/// build.rs checks).
pub fn default(axis: Axis) -> Option<&'static BundledDriver> {
    of(axis).find(|d| d.default)
}

/// The machine code built into this binary for the bundled component whose sha256 is `sha256`.
pub fn precompiled(sha256: &str) -> Option<&'static [u8]> {
    BUNDLED.iter().find(|d| d.sha256 == sha256).and_then(|d| d.precompiled)
}

/// The bundled machine code, as the runtime crate asks for it (see `crate::runtime::Runtime`).
pub struct Embedded;

/// The one [`Embedded`] every runtime of this binary is built with.
pub static EMBEDDED: Embedded = Embedded;

// SAFETY: build.rs precompiled each driver's code from exactly that component (the sha256 is computed
// there too) with `engine_config`, the runtime's own configuration, and embedded it in this binary.
unsafe impl agmsg_runtime::engine::EmbeddedCode for Embedded {
    fn precompiled(&self, sha256: &str) -> Option<&'static [u8]> {
        precompiled(sha256)
    }
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
