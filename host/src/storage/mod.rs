//! The storage axis on the host: which driver, where its store lives, and a typed handle whose every
//! call runs sandboxed, under a deadline, with its output checked before anyone prints it.

pub mod atomic_file;
pub mod driver;
pub mod location;
pub mod records;
pub mod source;

pub use driver::{OpError, StorageDriver};
pub use source::DriverSource;
