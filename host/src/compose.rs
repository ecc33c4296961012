//! The composer, above the axes: each axis's host module ([`module`]), for the commands shared by every
//! axis (`driver test`, `driver new`, `shim install`), and what plugin/, below the axes, needs of them
//! ([`plugin_axes`]). Nothing below the axes names this file; the crate root only declares modules and
//! re-exports.

use crate::axis::Axis;
use crate::axis_module::AxisModule;
use crate::{agent, plugin, storage, terminal};

/// The host module that serves `axis` (its contract suite, template and bundled drivers, for the
/// commands shared by every axis).
pub fn module(axis: Axis) -> &'static dyn AxisModule {
    match axis {
        Axis::Storage => &storage::module::StorageModule,
        Axis::Terminal => &terminal::module::TerminalModule,
        Axis::Types => &agent::module::AgentModule,
    }
}

/// What `plugin`'s commands need of every axis ([`plugin::commands`] sits below the axes).
pub fn plugin_axes() -> plugin::commands::Axes {
    plugin::commands::Axes {
        dirs: Axis::ALL.into_iter().filter_map(|axis| module(axis).dir_package()).collect(),
        reports: Axis::ALL.into_iter().filter_map(|axis| module(axis).dir_report()).collect(),
        bundled_runs_with: |axis, name| module(axis).bundled_source(name).map(|source| source.capabilities),
    }
}

#[cfg(test)]
mod tests {
    use crate::axis::Axis;

    /// A driver a suite cannot be set up for is refused on every axis, said by the axis's module (the
    /// binary only prints it): here a component file that is not there. (Here, in the composer, since
    /// it asks every axis's module.)
    #[test]
    fn a_suite_that_cannot_be_set_up_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone.wasm");
        for axis in Axis::ALL {
            let Err(e) = super::module(axis).suite(missing.to_str().unwrap()) else { panic!("{axis}: a suite for a missing file") };
            assert_eq!(e.class, crate::error::ExitClass::Refused, "{axis}: {e}");
            assert!(e.message.contains("gone.wasm"), "{axis}: {e}");
        }
    }
}
