//! The wasmtime side of the host: one place each for the engine, the compile cache, the capabilities a
//! driver is granted, and the mapping of traps and limits to errors.

pub mod cache;
pub mod code_memory;
pub mod caps;
pub mod engine;
pub mod engine_config;
pub mod driver;
pub mod failure;
pub mod limits;
pub mod sandbox;
pub(crate) mod world;

pub use driver::{Driver, DriverSource, DriverWorld};
pub use engine::Runtime;
pub use limits::Limits;
pub use failure::CallFailure;
pub use sandbox::{Grants, HostState};
