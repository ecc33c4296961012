//! The types axis's world as the host calls it: the bindings of `agmsg:agent/agent-plug` (a type's
//! delivery plug), which share the `agmsg:host` interfaces of every axis (`runtime::caps::wit`), and
//! their [`DriverWorld`].

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::axis::Axis;
use crate::runtime::{DriverWorld, HostState};

mod bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:agent/agent-plug@1.0.0",
        path: ["../wit/host", "../wit/agent"],
        with: {
            "agmsg:host/log": crate::runtime::caps::wit::log,
        },
    });
}

/// The generated bindings of the plug world.
pub use bindings::AgentPlug as PlugWorld;
/// The contract's types (`agmsg:agent/types`), as the host sees them.
pub use bindings::agmsg::agent::types as wit;

impl DriverWorld for PlugWorld {
    const AXIS: Axis = Axis::Types;
    type Pre = bindings::AgentPlugPre<HostState>;

    fn pre(instance_pre: InstancePre<HostState>) -> wasmtime::Result<Self::Pre> {
        bindings::AgentPlugPre::new(instance_pre)
    }

    fn instantiate(pre: &Self::Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self> {
        pre.instantiate(store)
    }
}
