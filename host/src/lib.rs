//! `agmsg-host`: runs agmsg's drivers as sandboxed WebAssembly components.
//!
//! - [`runtime`] owns wasmtime: the engine, the compile cache, what a component may touch (the
//!   sandbox), and how a failed call becomes an error.
//! - [`storage`] is the typed storage-driver handle on top of it, plus driver selection and the store's
//!   location on disk.
//! - [`terminal`] is the same for terminal drivers: manifests (their grants), the typed handle, and
//!   the §6.3 resolvers.
//! - [`plugin`] finds third-party drivers, reads their manifests and keeps the user's trust and grants;
//!   [`capabilities`] is the vocabulary of what a driver may touch, shared by manifests, trust and the
//!   sandbox.
//! - [`agent`] is the agent-type axis as data: agmsg's `type.conf` manifests (bundled, agmsg's own,
//!   trusted external ones), detection of the calling runtime, and the launch argv spawn uses.
//! - [`display`] is the one rule for printing text a driver or a manifest supplied.

pub mod agent;
pub mod axis;
pub mod axis_module;
pub mod bundled;
pub mod capabilities;
pub mod catalog;
pub mod display;
pub mod log;
pub mod plugin;
pub mod runtime;
pub mod semver;
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
