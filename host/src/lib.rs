//! `agmsg-host`: runs agmsg's drivers as sandboxed WebAssembly components. The `agmsg-host` binary's
//! command line (`src/cli`) is built on this library and is not part of it.
//!
//! - [`axis`] is the vocabulary of driver axes and every per-axis fact; [`compose`], above the axes,
//!   maps an axis to its host module's [`axis_module::AxisModule`] (contract suite, template, bundled
//!   drivers) and gives plugin/ what it needs of the axes.
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
//!   project; [`pid`] is the one pid liveness check; [`atomic_file`] the one way a file is written whole or not at
//!   all.
//! - [`directive`] is what of a driver's `AGMSG-DIRECTIVE` the host relays to an agent;
//!   [`display`] is the one rule for printing text a driver or a manifest supplied; [`shell`] the one
//!   way text is written into a shell command; [`shim`] what every shim agmsg sources shares (the
//!   agmsg-host it runs, what it says when that cannot run); [`log`] the host's log; [`bundled`] the
//!   drivers built into the binary; [`semver`] version text and compatibility; [`fsroot`] the one
//!   directory capability: a root held open, no link followed below it.

pub mod agent;
pub mod atomic_file;
// The leaves the runtime crate holds, at their old paths (`crate::axis`, …): the host names them
// everywhere, and the runtime below the axes needs them too.
pub use agmsg_runtime::{axis, capabilities, display, fsroot, log, semver};
pub mod axis_module;
pub mod bundled;
pub mod catalog;
pub mod compose;
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

// The composer's two entry points, at the crate root where the binary has always named them.
pub use compose::{module, plugin_axes};
