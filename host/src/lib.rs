//! `agmsg-host`: runs agmsg's drivers as sandboxed WebAssembly components. The `agmsg-host` binary's
//! command line (`src/cli`) is built on this library and is not part of it.
//!
//! - [`axis`] is the vocabulary of driver axes and every per-axis fact; [`module`] maps an axis to its
//!   host module's [`axis_module::AxisModule`] (contract suite, template, bundled drivers).
//! - [`runtime`] is the `agmsg-runtime` crate, below every axis (it depends on no crate of this
//!   workspace): wasmtime's engine, the compile cache, what a component may touch (the sandbox), the one
//!   path that loads and calls a driver of any axis, and how a failure becomes an error. Re-exported
//!   here with this binary's bundled machine code handed to it; so are the leaves it holds
//!   ([`axis`], [`capabilities`], [`fsroot`], [`log`], [`display`], [`semver`]).
//! - [`storage`], [`terminal`] and [`agent`] are the axes: each its world, where its drivers come from,
//!   its typed handle, and the protocols built on it (a store session and message delivery; the §6.3
//!   resolvers; agent types, detection, boot argv and delivery files). [`spawn`] composes two of them:
//!   an agent type's boot command started in a new pane of a terminal, which is then named.
//! - [`plugin`] finds third-party drivers, reads their manifests, keeps the user's trust and grants, and
//!   installs them; [`catalog`] is the one enumeration of each axis's drivers, which every list reads;
//!   [`capabilities`] is the vocabulary of what a driver may touch, shared by manifests, trust and the
//!   sandbox.
//! - [`error`] is the error model (every failure's exit class); [`scaffold`] writes `driver new`'s
//!   project; [`pid`] is the one pid liveness check.
//! - [`directive`] is what of a driver's `AGMSG-DIRECTIVE` the host relays to an agent;
//!   [`display`] is the one rule for printing text a driver or a manifest supplied; [`shell`] the one
//!   way text is written into a shell command; [`shim`] what every shim agmsg sources shares (the
//!   agmsg-host it runs, what it says when that cannot run); [`log`] the host's log; [`bundled`] the
//!   drivers built into the binary; [`semver`] version text and compatibility; [`fsroot`] the one
//!   directory capability: a root held open, no link followed below it.

pub mod agent;
// The leaves the runtime crate holds, at their old paths (`crate::axis`, …): the host names them
// everywhere, and the runtime below the axes needs them too.
pub use agmsg_runtime::{axis, capabilities, display, fsroot, log, semver};
pub mod axis_module;
pub mod bundled;
pub mod catalog;
pub mod directive;
pub mod error;
pub mod pid;
pub mod plugin;
pub mod runtime;
pub mod scaffold;
pub mod server;
pub mod shell;
pub mod shim;
pub mod spawn;
pub mod storage;
pub mod terminal;

/// The host module that serves `axis` (its contract suite, template and bundled drivers, for the
/// commands shared by every axis).
pub fn module(axis: axis::Axis) -> &'static dyn axis_module::AxisModule {
    match axis {
        axis::Axis::Storage => &storage::module::StorageModule,
        axis::Axis::Terminal => &terminal::module::TerminalModule,
        axis::Axis::Types => &agent::module::AgentModule,
    }
}

/// What `plugin`'s commands need of every axis ([`plugin::commands`] sits below the axes).
pub fn plugin_axes() -> plugin::commands::Axes {
    plugin::commands::Axes {
        dirs: axis::Axis::ALL.into_iter().filter_map(|axis| module(axis).dir_package()).collect(),
        reports: axis::Axis::ALL.into_iter().filter_map(|axis| module(axis).dir_report()).collect(),
        bundled_runs_with: |axis, name| module(axis).bundled_source(name).map(|source| source.capabilities),
    }
}

#[cfg(test)]
mod tests {
    use crate::axis::Axis;

    /// A driver a suite cannot be set up for is refused on every axis, said by the axis's module (the
    /// binary only prints it): here a component file that is not there. (Here, at the root, since it
    /// asks every axis's module.)
    #[test]
    fn a_suite_that_cannot_be_set_up_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone.wasm");
        for axis in Axis::ALL {
            let Err(e) = crate::module(axis).suite(missing.to_str().unwrap()) else { panic!("{axis}: a suite for a missing file") };
            assert_eq!(e.class, crate::error::ExitClass::Refused, "{axis}: {e}");
            assert!(e.message.contains("gone.wasm"), "{axis}: {e}");
        }
    }
}
