//! The runtime, as this binary uses it: the `agmsg-runtime` crate (the engine, the sandbox, the one
//! load-and-call path for a driver of any axis), re-exported so that `crate::runtime::…` names it, plus
//! [`Runtime`], which hands that crate the machine code of the drivers bundled in this binary. The crate
//! sits below the axes and knows nothing of bundled drivers; this is where the host fills that in.

use std::ops::{Deref, DerefMut};

pub use agmsg_runtime::{CallFailure, Driver, DriverSource, DriverWorld, Grants, HostState, Limits};
pub use agmsg_runtime::{cache, caps, code_memory, driver, engine, engine_config, failure, limits, sandbox, warm, world};

use agmsg_runtime::cache::CompileCache;

/// The runtime with this binary's bundled machine code: a bundled driver runs the code build.rs
/// precompiled for it, never compiled at run time. It is the crate's runtime otherwise (`Deref`), so a
/// `&Runtime` goes wherever the crate asks for one.
pub struct Runtime(agmsg_runtime::Runtime);

impl Runtime {
    pub fn new(cache: CompileCache, limits: Limits) -> wasmtime::Result<Runtime> {
        agmsg_runtime::Runtime::new(cache, limits, &crate::bundled::EMBEDDED).map(Runtime)
    }

    /// The runtime as the user's environment configures it (see [`agmsg_runtime::Runtime::from_env`]).
    pub fn from_env() -> Result<Runtime, String> {
        agmsg_runtime::Runtime::from_env(&crate::bundled::EMBEDDED).map(Runtime)
    }
}

impl Deref for Runtime {
    type Target = agmsg_runtime::Runtime;

    fn deref(&self) -> &agmsg_runtime::Runtime {
        &self.0
    }
}

impl DerefMut for Runtime {
    fn deref_mut(&mut self) -> &mut agmsg_runtime::Runtime {
        &mut self.0
    }
}
