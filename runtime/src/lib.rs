//! The wasmtime side of agmsg-host: one place each for the engine, the compile cache, the capabilities a
//! driver is granted, the one path that loads and calls a driver of any axis, and the mapping of traps
//! and limits to errors.
//!
//! It is a crate of its own so that the layering is a compile error: it sits below the axes (storage,
//! terminal, types) and depends on no other crate of the workspace; the host depends on it. What it needs
//! of the host it is handed: a driver as a [`DriverSource`], an axis's world through [`world::driver_world!`],
//! the binary's embedded machine code as an [`engine::EmbeddedCode`].
//!
//! It also holds the leaves it needs, which the host uses everywhere too: [`axis`] (the axes and every
//! per-axis fact), [`capabilities`] (what a driver may touch), [`fsroot`] (the one directory capability:
//! a root held open, no link followed below it), [`log`] (the host's log), [`display`] (the one rule for
//! printing text a driver supplied), [`private_dir`] (a directory only its user controls) and [`semver`]
//! (version text and compatibility).

pub mod axis;
pub mod capabilities;
pub mod display;
pub mod fsroot;
pub mod log;
pub mod private_dir;
pub mod semver;

pub mod cache;
pub mod caps;
pub mod code_memory;
pub mod driver;
pub mod engine;
pub mod engine_config;
pub mod failure;
pub mod limits;
pub mod sandbox;
pub mod warm;
pub mod world;

pub use driver::{Driver, DriverSource, DriverWorld};
pub use engine::Runtime;
pub use failure::CallFailure;
pub use limits::Limits;
pub use sandbox::{Grants, HostState};
