//! The storage axis on the host: which driver, where its store lives, and a typed handle whose every
//! call runs sandboxed, under a deadline, with its output checked before anyone prints it.

pub mod bundled_drivers;
pub mod caches;
pub mod driver;
pub mod inbox;
pub mod location;
pub mod manage;
pub mod module;
pub mod op;
pub mod postgres;
pub mod records;
pub mod roster;
pub mod session;
pub mod shim;
pub mod source;
pub mod suite;
pub mod sync;
pub mod types;
pub mod wake;
pub mod world;

pub use crate::runtime::DriverSource;
pub use driver::{Storage, StorageError};
pub use session::StoreSession;
