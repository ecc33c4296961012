//! The version seam's one shape, for every axis: [`driver_world!`] generates an axis's world from one
//! list (its bindings, the `agmsg:host` interfaces they share, its optional interfaces) and its
//! [`crate::DriverWorld`] impl, so the three axis worlds are not near-copies and an optional
//! interface costs its own file plus one line of the list.
//!
//! What the macro writes, in the axis's `world.rs`:
//! - `mod bindings`: wasmtime's bindgen of the axis world, the host interfaces mapped (`with`) to
//!   `runtime::caps::wit`, so every axis shares one definition of each;
//! - one `mod <name>;` per optional interface (`<axis>/world/<name>.rs`), which holds its bindings
//!   ([`optional_interface!`]: its own bindgen, the axis's shared types mapped to `bindings`', and
//!   `Exports` / `Indices` naming what was generated) and its typed calls with their conversions;
//! - the world (`$World`: the instance's exports, each optional one `Option`al) and its pre-linked form
//!   (`$Pre`: where the exports are, probed once at load: an optional interface is present when the
//!   component exports its name, looked up by semver-compatible name, so `live@1.1.0` finds any 1.x
//!   from 1.1.0 on; one exported with another shape is refused, as a malformed driver is);
//! - `Offers`, which optional interfaces a loaded driver exports (and their capability words, which
//!   `describe` reports from the exports, whatever the driver says); `HOST_INTERFACES`, checked by a test
//!   against `Axis::host_interfaces`, so the bindings and the linker agree on what the axis is offered.
//!
//! The typed calls on the core interface (domain types in, domain types out) are written beside the
//! invocation, in the axis's `world.rs`: that file and `world/` are the only ones naming generated types.

/// See the module's documentation. `optional` entries are `name => "package/interface@version" as
/// "capability"`: the version is the one the interface first appeared in, the capability the word
/// `describe` says for it.
#[macro_export]
macro_rules! driver_world {
    (
        $(#[$meta:meta])*
        world $World:ident, pre $Pre:ident, axis $axis:ident;
        bindings $world:tt in $wit:tt as $Bindings:ident, $Indices:ident;
        host { $($host:tt => $cap:ident),* $(,)? }
        optional { $($field:ident => $iface:tt as $word:tt),* $(,)? }
    ) => {
        mod bindings {
            wasmtime::component::bindgen!({
                world: $world,
                path: ["../wit/host", $wit],
                // bindgen's `with` takes a plain path (not `$crate`): the crate by its name, which the
                // crate expanding this depends on.
                with: { $($host: agmsg_runtime::caps::wit::$cap,)* },
            });
        }

        $(pub(crate) mod $field;)*

        /// The `agmsg:host` interfaces the bindings share with the runtime (the axis's, `axis.rs`).
        pub const HOST_INTERFACES: &[&str] = &[$($host),*];

        /// Which optional interfaces a loaded driver exports, found at load.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Offers {
            $(pub $field: bool,)*
        }

        $(#[$meta])*
        pub struct $World {
            core: bindings::$Bindings,
            $($field: Option<$field::Exports>,)*
        }

        /// A pre-linked driver: where its exports are, found once at load.
        #[derive(Clone)]
        pub struct $Pre {
            instance_pre: wasmtime::component::InstancePre<$crate::HostState>,
            core: bindings::$Indices,
            $($field: Option<$field::Indices>,)*
        }

        impl Offers {
            /// The capability word of each optional interface (what `describe` says for it).
            pub const WORDS: &'static [&'static str] = &[$($word),*];

            /// The name of each optional interface in the list (its module's, `read_state`).
            pub const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            /// The names of the optional interfaces offered, in the list's order.
            #[allow(unused_mut)]
            pub fn names(&self) -> Vec<&'static str> {
                let mut names = Vec::new();
                $(if self.$field { names.push(stringify!($field)); })*
                names
            }

            /// The capability words of the optional interfaces offered, in the list's order.
            #[allow(unused_mut)]
            pub fn words(&self) -> Vec<&'static str> {
                let mut words = Vec::new();
                $(if self.$field { words.push($word); })*
                words
            }
        }

        impl $Pre {
            /// The optional interfaces the driver exports.
            pub fn offers(&self) -> Offers {
                Offers { $($field: self.$field.is_some(),)* }
            }
        }

        impl $World {
            $(
                /// This optional interface's typed calls, if the driver exports it.
                pub fn $field(&self) -> Option<&$field::Exports> {
                    self.$field.as_ref()
                }
            )*
        }

        /// One optional interface of the world, named by its exports' type (`sync::Exports`): whether a
        /// driver offers it and its typed calls in an instance, so a caller names the interface once.
        #[allow(dead_code)]
        pub trait Optional {
            /// The interface as the list names it (`agmsg:storage/read-state@1.2.0`).
            const INTERFACE: &'static str;
            /// Its capability word, as `describe` says it (`stage2-read-state`).
            const WORD: &'static str;
            /// Whether `offers` has it.
            fn offered(offers: &Offers) -> bool;
            /// Its exports in `world`, if the instance has them.
            fn of(world: &$World) -> Option<&Self>;
        }

        $(
            impl Optional for $field::Exports {
                const INTERFACE: &'static str = $iface;
                const WORD: &'static str = $word;
                fn offered(offers: &Offers) -> bool {
                    offers.$field
                }
                fn of(world: &$World) -> Option<&Self> {
                    world.$field.as_ref()
                }
            }
        )*

        impl $crate::DriverWorld for $World {
            const AXIS: $crate::axis::Axis = $crate::axis::Axis::$axis;
            type Pre = $Pre;

            fn pre(instance_pre: wasmtime::component::InstancePre<$crate::HostState>) -> wasmtime::Result<$Pre> {
                let core = bindings::$Indices::new(&instance_pre)?;
                $(
                    let $field = match instance_pre.component().get_export_index(None, $iface) {
                        Some(_) => Some($field::Indices::new(&instance_pre)?),
                        None => None,
                    };
                )*
                Ok($Pre { instance_pre, core, $($field,)* })
            }

            fn instantiate(pre: &$Pre, store: &mut wasmtime::Store<$crate::HostState>) -> wasmtime::Result<Self> {
                let instance = pre.instance_pre.instantiate(&mut *store)?;
                let core = pre.core.load(&mut *store, &instance)?;
                $(let $field = pre.$field.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;)*
                Ok($World { core, $($field,)* })
            }
        }

        #[cfg(test)]
        mod seam_tests {
            #[test]
            fn the_bindings_share_exactly_the_host_interfaces_the_axis_is_offered() {
                let offered: Vec<&str> = $crate::axis::Axis::$axis.host_interfaces().iter().map(|i| i.name()).collect();
                assert_eq!(super::HOST_INTERFACES, offered.as_slice());
            }
        }
    };
}

/// The bindings of one optional interface, in its own file `<axis>/world/<name>.rs`: wasmtime's bindgen
/// of its world with the axis's shared types mapped to the core bindings' (`super::bindings::...`), so
/// values pass between the two without conversion, and the names `driver_world!` looks for.
#[macro_export]
macro_rules! optional_interface {
    (bindings $world:tt in $wit:tt as $Exports:ident, $Indices:ident; types $types:tt => $($path:ident)::+) => {
        wasmtime::component::bindgen!({
            world: $world,
            path: ["../wit/host", $wit],
            with: { $types: super::bindings::$($path)::+ },
        });

        /// The interface's exports, as loaded from an instance.
        pub type Exports = $Exports;
        /// Where its exports are in a component.
        pub type Indices = $Indices;
    };
}

// `#[macro_export]` puts the macros at the crate's root; these keep them reachable as `world::…`, beside
// what they generate. Paths inside them are `$crate::…`: they expand in an axis's crate (the host), which
// supplies `wasmtime`, `agmsg_runtime` by that name, and the WIT files (`path` is relative to that crate's
// manifest).
pub use crate::driver_world;
pub use crate::optional_interface;
