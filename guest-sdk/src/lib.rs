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
//! [`STORE_DIR`] and nothing else, logs through [`log`], and serializes its transactions with [`lock`].

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "agmsg:storage/storage-driver@1.0.0",
        path: ["wit/host", "wit/storage"],
        generate_all,
    });
}

pub mod ids;
pub mod lock;
pub mod log;
#[cfg(feature = "storage")]
pub mod storage;

pub use agmsg_contract::{NameError, check_name, is_transport_token, split_pair};

/// Where a storage driver's store directory appears inside the sandbox.
pub const STORE_DIR: &str = "/store";
