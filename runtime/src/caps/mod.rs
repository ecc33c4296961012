//! Host interfaces granted to drivers beyond WASI, one module each: its policy, its state and its linker
//! additions live together, and it knows nothing of the state that composes them (`sandbox::HostState`
//! projects each one's view). Each module's `link` adds its interface to a linker; `sandbox::linker` is
//! the one place that decides which of them an axis's drivers get.

pub mod deadline;
pub mod file_lock;
pub mod lock;
pub mod log;
pub mod output;
pub mod process;
pub mod seal;
pub mod store;
pub mod store_view;
pub mod wit;
