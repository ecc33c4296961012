//! Host interfaces granted to drivers beyond WASI, one module each (its policy, state and linker
//! additions live together).

pub mod deadline;
pub mod file_lock;
pub mod lock;
pub mod log;
pub mod process;
pub mod store;
