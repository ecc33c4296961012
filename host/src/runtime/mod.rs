//! The wasmtime side of the host: one place each for the engine, the compile cache, the capabilities a
//! driver is granted, and the mapping of traps and limits to errors.

pub mod cache;
pub mod caps;
pub mod engine;
pub mod engine_config;
pub mod failure;
pub mod instance;
pub mod sandbox;

pub use engine::{Limits, Runtime};
pub use failure::CallFailure;
pub use sandbox::{Grants, HostState};
