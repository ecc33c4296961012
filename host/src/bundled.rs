//! The driver components built into this binary (see build.rs), every axis.

/// A bundled driver, embedded at build time with its sha256.
pub struct BundledDriver {
    pub name: &'static str,
    pub sha256: &'static str,
    pub wasm: &'static [u8],
    /// A terminal driver's manifest (`terminal.conf`).
    pub manifest: Option<&'static str>,
}

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
