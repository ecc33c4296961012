//! Host-side bindings of the `agmsg:host` interfaces, one world that imports them all. Each capability
//! module implements its interface's trait on its own state and links it; the axis worlds reuse these
//! types (`with`), so every axis shares one definition of each host interface.
//!
//! The lock's `guard` resource is not mapped to a host type here (that would make this module depend on
//! the lock's): `caps::lock` keeps its guards in the resource table under their own type, by rep.

wasmtime::component::bindgen!({
    inline: "
        package agmsg:runtime;
        world host-capabilities {
            import agmsg:host/log@1.1.0;
            import agmsg:host/lock@1.1.0;
            import agmsg:host/file-lock@1.1.0;
            import agmsg:host/process@1.1.0;
            import agmsg:host/seal@1.1.0;
        }
    ",
    path: "../wit/host",
});

pub use agmsg::host::{file_lock, lock, log, process, seal};
