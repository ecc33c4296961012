//! Terminal drivers: their manifests (which are their grants), where they come from, the typed handle
//! over a component, and the §6.3 resolvers.

pub mod driver;
pub mod list;
pub mod manifest;
pub mod module;
pub mod op;
pub mod resolve;
pub mod shim;
pub mod source;
pub mod suite;
pub mod types;
pub mod world;

pub use driver::{Terminal, TerminalError};
pub use manifest::TerminalManifest;
pub use source::TerminalSource;
