//! Which storage driver is active, and where the store lives, as agmsg resolves them.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::StorageError;
use crate::runtime::sandbox::StoreDir;

/// Where one op's store is: the shared root, or a team's per-team partition `teams/<team>` below it.
#[derive(Clone, Debug)]
pub struct StorePlace {
    pub root: PathBuf,
    /// The team whose partition it is.
    pub partition: Option<String>,
}

impl StorePlace {
    pub fn shared(root: PathBuf) -> StorePlace {
        StorePlace { root, partition: None }
    }

    /// The directory, for messages and for what agmsg is told (never reopened by this path below
    /// the root: see [`StorePlace::open`]).
    pub fn path(&self) -> PathBuf {
        match &self.partition {
            Some(team) => self.root.join("teams").join(team),
            None => self.root.clone(),
        }
    }

    /// Open the store directory, creating it when `create`. Below the root (the user's path) nothing
    /// is followed through a symlink: the store is the driver's to write, and a link it planted must
    /// not make the host grant a directory outside. `Ok(None)`: it does not exist (and `create` is off).
    pub fn open(&self, create: bool) -> Result<Option<StoreDir>, StorageError> {
        if create {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.root)
                .map_err(|e| StorageError::runtime(format!("cannot create the store directory {}: {e}", self.root.display())))?;
        }
        let below: Vec<&str> = match &self.partition {
            Some(team) => vec!["teams", team.as_str()],
            None => vec![],
        };
        StoreDir::open_beneath(&self.root, &below, create)
            .map_err(|e| StorageError::runtime(format!("cannot open the store directory {}: {e}", self.path().display())))
    }
}

/// The store directory: `--store`, else `AGMSG_STORAGE_PATH`, else agmsg's default
/// `~/.agents/skills/agmsg/db` (agmsg 1.2.1's own order). `AGMSG_HOME` is agmsg-host's home (plugins
/// and their trust, `plugin::registry::agmsg_home`) and never the store.
pub fn store_dir(flag: Option<PathBuf>) -> Result<PathBuf, StorageError> {
    if let Some(dir) = flag {
        return Ok(dir);
    }
    if let Some(dir) = non_empty_env("AGMSG_STORAGE_PATH") {
        let trimmed = dir.trim_end_matches('/');
        return Ok(PathBuf::from(if trimmed.is_empty() { "/" } else { trimmed }));
    }
    let home =
        non_empty_env("HOME").ok_or_else(|| StorageError::runtime("cannot find the store: set --store, AGMSG_STORAGE_PATH or HOME"))?;
    Ok(PathBuf::from(home).join(".agents/skills/agmsg/db"))
}

/// Where agmsg keeps team registries: `AGMSG_TEAMS_DIR`, else `~/.agents/skills/agmsg/teams` (beside
/// agmsg's default `db/`; not `AGMSG_HOME`'s, see [`store_dir`]).
pub fn teams_dir() -> Option<PathBuf> {
    non_empty_env("AGMSG_TEAMS_DIR")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".agents/skills/agmsg/teams")))
}

/// The store of `team`: the shared store, unless the team's `config.json` says
/// `{"drivers":{"partition":"per-team"}}`, which puts its store in `<store>/teams/<team>/`. An unknown
/// partition is an error, not a fallback.
pub fn partition(store_root: &Path, team: &str) -> Result<StorePlace, StorageError> {
    agmsg_contract::check_name("team", team).map_err(|e| StorageError::runtime(e.to_string()))?;
    let shared = || Ok(StorePlace::shared(store_root.to_owned()));
    if store_is_partition() {
        // agmsg's own partition `<root>/teams/<team>`: below its root it is still opened without
        // following a symlink, like one this host resolves.
        let parent = store_root.parent();
        if store_root.file_name() == Some(team.as_ref())
            && parent.and_then(Path::file_name) == Some("teams".as_ref())
            && let Some(root) = parent.and_then(Path::parent)
        {
            return Ok(StorePlace { root: root.to_owned(), partition: Some(team.to_owned()) });
        }
        return shared();
    }
    let Some(config) = teams_dir().map(|d| d.join(team).join("config.json")) else {
        return shared();
    };
    let text = match std::fs::read_to_string(&config) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return shared(),
        Err(e) => return Err(StorageError::runtime(format!("cannot read {}: {e}", config.display()))),
    };
    match team_partition(&text) {
        Ok(Partition::Shared) => shared(),
        Ok(Partition::PerTeam) => Ok(StorePlace { root: store_root.to_owned(), partition: Some(team.to_owned()) }),
        Err(PartitionError::Json(e)) => Err(StorageError::runtime(format!("{} is not valid JSON: {e}", config.display()))),
        Err(PartitionError::Unknown(other)) => Err(StorageError::runtime(format!(
            "{}: unknown partition {} for team '{team}'",
            config.display(),
            other.map_or_else(|| "(not a string)".to_owned(), |s| format!("'{s}'"))
        ))),
    }
}

/// Where a team's store is, as its `config.json` says (`drivers.partition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partition {
    /// No `drivers.partition`, or `"shared"`: the shared store.
    Shared,
    /// `"per-team"`: `<store>/teams/<team>/`.
    PerTeam,
}

/// Why a team's `config.json` names no partition: it is not JSON, or its `drivers.partition` is
/// another string (`Some`) or not a string (`None`).
#[derive(Debug)]
pub enum PartitionError {
    Json(serde_json::Error),
    Unknown(Option<String>),
}

/// A team's `config.json` text, read for its partition (what [`partition`] does with the file).
pub fn team_partition(text: &str) -> Result<Partition, PartitionError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(PartitionError::Json)?;
    match value.pointer("/drivers/partition").map(|p| p.as_str()) {
        None | Some(Some("shared")) => Ok(Partition::Shared),
        Some(Some("per-team")) => Ok(Partition::PerTeam),
        Some(other) => Err(PartitionError::Unknown(other.map(str::to_owned))),
    }
}

/// The agmsg config file: `${AGMSG_CONFIG:-~/.agents/agmsg/config.json}`.
pub fn config_file() -> Option<PathBuf> {
    non_empty_env("AGMSG_CONFIG")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".agents/agmsg/config.json")))
}

/// The active storage driver: `--driver`, else `AGMSG_STORAGE_DRIVER`, else the config's `storage`
/// key, else agmsg's default ([`super::bundled_drivers::default_driver`]).
pub fn storage_driver(flag: Option<String>) -> Result<String, StorageError> {
    if let Some(name) = flag.or_else(|| non_empty_env("AGMSG_STORAGE_DRIVER")) {
        return Ok(name);
    }
    if let Some(path) = config_file() {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let configured =
                    configured_storage(&text).map_err(|e| StorageError::runtime(format!("{} is not valid JSON: {e}", path.display())))?;
                if let Some(name) = configured {
                    return Ok(name);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StorageError::runtime(format!("cannot read {}: {e}", path.display()))),
        }
    }
    Ok(super::bundled_drivers::default_driver().to_owned())
}

/// agmsg's config text, read for its `storage` key: the driver it names, if a non-empty string.
pub fn configured_storage(text: &str) -> Result<Option<String>, serde_json::Error> {
    let config: serde_json::Value = serde_json::from_str(text)?;
    Ok(config.get("storage").and_then(|v| v.as_str()).filter(|s| !s.is_empty()).map(str::to_owned))
}

/// `AGMSG_STORE_IS_PARTITION=1`: the store directory given is already the team's own store, as agmsg
/// resolved it (`dirname "$(agmsg_db_path <team>)"`, passed by the shim agmsg sources), so no partition
/// is applied on top of it.
fn store_is_partition() -> bool {
    non_empty_env("AGMSG_STORE_IS_PARTITION").is_some()
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The config's table for the driver `name` (`"<name>": {...}`), where a driver's host settings keep
/// what `storage switch` recorded for it (see `bundled_drivers.rs`); `None` when there is no config or no such
/// table.
pub fn driver_config(name: &str) -> Result<Option<serde_json::Value>, StorageError> {
    let Some(path) = config_file() else { return Ok(None) };
    match std::fs::read_to_string(&path) {
        Ok(text) => driver_table(&text, name).map_err(|e| StorageError::runtime(format!("{} is not valid JSON: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StorageError::runtime(format!("cannot read {}: {e}", path.display()))),
    }
}

/// agmsg's config text, read for the driver `name`'s table (what [`driver_config`] does with the file).
pub fn driver_table(text: &str, name: &str) -> Result<Option<serde_json::Value>, serde_json::Error> {
    let config: serde_json::Value = serde_json::from_str(text)?;
    Ok(config.get(name).cloned())
}
