//! The SDK for agmsg driver components.
//!
//! A driver is a `cdylib` crate built for `wasm32-wasip2`. It implements one axis trait and registers it
//! with that axis' export macro; the SDK does the rest (the component exports, argument checks, and the
//! conversion of the host's calls into trait calls).
//!
//! ```ignore
//! use agmsg_guest_sdk::storage::{self, StorageDriver};
//!
//! #[derive(Default)]
//! struct MyStore;
//! impl StorageDriver for MyStore { /* ... */ }
//! agmsg_guest_sdk::export_storage_driver!(MyStore);
//! ```
//!
//! What a driver may touch is exactly what the host granted: a storage driver sees its store directory at
//! [`STORE_DIR`] and nothing else, logs through `log`, and serializes its transactions with `lock`; a
//! terminal driver has no filesystem, reads only the environment variables its manifest declares, and
//! runs only the programs its manifest declares, through `process`.

#[cfg(all(feature = "storage", feature = "terminal"))]
compile_error!("a driver component exports one axis: enable either the `storage` or the `terminal` feature");
#[cfg(not(any(feature = "storage", feature = "terminal")))]
compile_error!("enable the feature of the axis this driver exports: `storage` or `terminal`");

#[cfg(feature = "storage")]
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "agmsg:storage/storage-driver@1.0.0",
        path: ["wit/host", "wit/storage"],
        generate_all,
    });
}

#[cfg(feature = "terminal")]
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "agmsg:terminal/terminal-driver@1.0.0",
        path: ["wit/host", "wit/terminal"],
        generate_all,
    });
}

#[cfg(feature = "storage")]
pub mod file_lock;
pub mod ids;
#[cfg(feature = "storage")]
pub mod lock;
pub mod log;
#[cfg(feature = "terminal")]
pub mod process;
#[cfg(feature = "storage")]
pub mod storage;
#[cfg(feature = "terminal")]
pub mod terminal;

pub use agmsg_contract::{NameError, check_name, is_transport_token, split_pair};

/// Where a storage driver's store directory appears inside the sandbox.
pub const STORE_DIR: &str = "/store";
