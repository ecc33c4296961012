//! The driver components built into this binary (see build.rs), every axis.

use crate::axis::Axis;

/// A bundled driver, embedded at build time with its sha256.
pub struct BundledDriver {
    pub name: &'static str,
    pub sha256: &'static str,
    pub wasm: &'static [u8],
    /// A terminal driver's manifest (`terminal.conf`).
    pub manifest: Option<&'static str>,
    /// Its machine code, precompiled by build.rs with this host's engine configuration (none when
    /// the build could not precompile it: then it is compiled at run time, through the cache).
    pub precompiled: Option<&'static [u8]>,
}

/// The drivers of `axis` built into this binary.
pub fn of(axis: Axis) -> &'static [BundledDriver] {
    match axis {
        Axis::Storage => BUNDLED_STORAGE,
        Axis::Terminal => BUNDLED_TERMINAL,
    }
}

/// The machine code built into this binary for the bundled component whose sha256 is `sha256`.
pub fn precompiled(sha256: &str) -> Option<&'static [u8]> {
    Axis::ALL.iter().flat_map(|a| of(*a)).find(|d| d.sha256 == sha256).and_then(|d| d.precompiled)
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
