//! The storage drivers the host knows more of than their component: agmsg's default driver (the bundled
//! driver whose Cargo metadata says `default = true`), and the host settings of each bundled driver that
//! needs more than a store directory (postgres: its database, `postgres.rs`). `source.rs` and
//! `location.rs` ask here and name no driver.

use super::StorageError;
use crate::runtime::DriverSource;

/// The driver agmsg uses when nothing selects one (its `AGMSG_STORAGE_DRIVER` default): the bundled
/// storage driver marked `default` in its Cargo.toml.
pub fn default_driver() -> &'static str {
    crate::bundled::default(crate::axis::Axis::Storage).map(|d| d.name).expect("a bundled storage driver is marked default (host/build.rs)")
}

/// The config's table for a driver (`"<driver>": {...}`), read when asked.
pub type Config<'a> = &'a dyn Fn() -> Result<Option<serde_json::Value>, StorageError>;

/// [`HostSettings::configure`]: the driver, the partition, the location override, its config table.
pub type Configure = fn(&mut DriverSource, Option<&str>, Option<&str>, Config) -> Result<(), StorageError>;

/// [`HostSettings::suite_env`].
pub type SuiteEnv = fn(Config) -> Result<Vec<(String, String)>, StorageError>;

/// What a host supplies a bundled driver beyond its store directory: a hook its module implements.
pub struct HostSettings {
    /// The bundled driver it serves.
    pub driver: &'static str,
    /// Its store is a place of its own (a database) that `storage switch|convert --url` names, not
    /// the store directory.
    pub takes_location: bool,
    /// Grant it what it needs for the store of `partition` (a per-team partition's team, `None` for
    /// the shared store) and set its environment; `location` overrides where the store is (`storage
    /// switch --url`), else the config's table for the driver says.
    pub configure: Configure,
    /// What it runs with when its settings cannot be made (a listing shows it all the same).
    pub unconfigured: fn(&mut DriverSource),
    /// What the contract suite's runs need beside a fresh home to reach its store (`driver test`).
    pub suite_env: SuiteEnv,
}

const SETTINGS: &[HostSettings] = &[
    HostSettings {
        driver: super::postgres::NAME,
        takes_location: true,
        configure: super::postgres::configure,
        unconfigured: super::postgres::unconfigured,
        suite_env: super::postgres::suite_env,
    },
    HostSettings {
        driver: "jsonl",
        takes_location: false,
        configure: jsonl_configure,
        unconfigured: |_| {},
        suite_env: |_| Ok(Vec::new()),
    },
];

/// jsonl takes agmsg's `events.jsonl.lock/` as agmsg's bash driver does, retrying every 10 ms
/// `AGMSG_JSONL_LOCK_TRIES` times: the one setting of agmsg's it reads, passed on when it is a number.
fn jsonl_configure(source: &mut DriverSource, _: Option<&str>, _: Option<&str>, _: Config) -> Result<(), StorageError> {
    source.settings.retain(|(name, _)| name != "AGMSG_JSONL_LOCK_TRIES");
    if let Ok(tries) = std::env::var("AGMSG_JSONL_LOCK_TRIES")
        && !tries.is_empty()
        && tries.len() <= 9
        && tries.bytes().all(|b| b.is_ascii_digit())
    {
        source.settings.push(("AGMSG_JSONL_LOCK_TRIES".to_owned(), tries));
    }
    Ok(())
}

/// The host settings of the bundled driver `name`, if it needs any.
pub fn settings(name: &str) -> Option<&'static HostSettings> {
    SETTINGS.iter().find(|s| s.driver == name)
}

#[cfg(test)]
mod tests {
    /// agmsg's default (`AGMSG_STORAGE_DRIVER` unset, no config) is sqlite: the one bundled storage driver
    /// whose Cargo metadata says `default = true`.
    #[test]
    fn the_default_is_the_bundled_driver_marked_default() {
        assert_eq!(super::default_driver(), "sqlite");
        assert_eq!(crate::bundled::of(crate::axis::Axis::Storage).filter(|d| d.default).count(), 1);
        assert!(crate::bundled::default(crate::axis::Axis::Terminal).is_none());
    }
}
