//! Where a storage driver's component comes from: a trusted plugin, bundled in this binary, or a
//! `.wasm` file named on the command line; and the capabilities it runs with.

use std::borrow::Cow;
use std::path::Path;

use super::{StorageError, location};
use crate::runtime::DriverSource;
use crate::bundled;
use crate::capabilities::{Capabilities, Capability};
use crate::axis::Axis;
use crate::axis_module::Reference;
use crate::plugin::registry::{self, Candidate, sha256_hex};

/// `name` is the path of a component file (anything but a driver name: [`Reference`]), or a driver name: a
/// trusted plugin of that name (which shadows a bundled driver), else a bundled driver. For the shared
/// store; see [`resolve_at`].
pub fn resolve(name: &str) -> Result<DriverSource, StorageError> {
    resolve_at(name, None, None)
}

/// [`resolve`] for the store of `partition` (a per-team partition's team, `None` for the shared store).
/// The bundled `postgres` driver, which has no store directory, is told the partition, and is granted
/// its database (`postgres_url`, else the configured one): see [`configure_postgres`].
pub fn resolve_at(name: &str, partition: Option<&str>, postgres_url: Option<&str>) -> Result<DriverSource, StorageError> {
    if let Reference::File(path) | Reference::Dir(path) = Reference::of(name) {
        return from_file(path);
    }
    if let Some(plugin) = registry::find(Axis::Storage, name).map_err(StorageError::runtime)? {
        return Ok(from_plugin(plugin));
    }
    if let Some(mut source) = bundled_source(name) {
        if name == POSTGRES {
            configure_postgres(&mut source, partition, postgres_url)?;
        }
        return Ok(source);
    }
    Err({
        let mut known: Vec<String> = bundled::of(Axis::Storage).map(|d| d.name.to_owned()).collect();
        if let Ok(plugins) = registry::candidates(Axis::Storage, None) {
            known.extend(plugins.into_iter().filter(|c| c.problem().is_none()).map(|c| c.name));
        }
        StorageError::runtime(format!(
            "unknown storage driver '{name}' (available: {}; `agmsg-host plugin list` shows plugins)",
            known.join(", ")
        ))
    })
}

/// What the contract suite's runs need beside a fresh home to reach `driver`'s store (`driver test`):
/// nothing for a store directory; for postgres, the configured database (its URL, password and CA, which
/// a fresh home no longer finds) and a namespace of its own per rule (`agmsg-driver-test-<pid>-{env}`),
/// so that each rule starts from an empty store. The namespaces' rows stay in that database.
pub fn suite_env(driver: &str) -> Result<Vec<(String, String)>, StorageError> {
    if driver != POSTGRES || registry::find(Axis::Storage, driver).map_err(StorageError::runtime)?.is_some() {
        return Ok(Vec::new());
    }
    let url = location::postgres_url()?.ok_or_else(|| {
        StorageError::runtime("the postgres driver has no database: run `agmsg-host storage switch postgres --url ...` first")
    })?;
    let parsed = location::parse_postgres_url(&url).map_err(StorageError::runtime)?;
    let mut env = vec![
        ("AGMSG_POSTGRES_URL".to_owned(), url),
        ("AGMSG_POSTGRES_NAMESPACE".to_owned(), format!("agmsg-driver-test-{}-{{env}}", std::process::id())),
    ];
    for name in ["PGSSLROOTCERT", "AGMSG_DRIVER_TIMEOUT_MS"] {
        if let Ok(value) = std::env::var(name) {
            env.push((name.to_owned(), value));
        }
    }
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let user = parsed.user.clone().or_else(|| var("PGUSER")).or_else(|| var("USER")).unwrap_or_else(|| "postgres".into());
    let database = parsed.database.clone().or_else(|| var("PGDATABASE")).unwrap_or_else(|| user.clone());
    env.push(("PGUSER".to_owned(), user.clone()));
    env.push(("PGDATABASE".to_owned(), database.clone()));
    if let Some(password) = location::postgres_password(&parsed, &user, &database) {
        env.push(("PGPASSWORD".to_owned(), password));
    }
    Ok(env)
}

/// The bundled PostgreSQL driver's name.
pub const POSTGRES: &str = "postgres";

/// How much of a CA file is read (a bundle of a few hundred certificates fits).
const MAX_CA_BYTES: u64 = 1 << 20;

/// Grant the postgres driver its database and nothing else: TCP to the URL's `host:port` only (no store
/// directory), and its environment, set by the host: `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`,
/// `PGSSLMODE` from the URL; `PGPASSWORD` (the user's, or their password file's line for this database);
/// `AGMSG_POSTGRES_CA` (the PEM text of `sslrootcert`, else `PGSSLROOTCERT`, else
/// `~/.postgresql/root.crt` when it exists: the driver has no filesystem); `AGMSG_POSTGRES_PARTITION`
/// (which store in the database: the team of a per-team partition, under `AGMSG_POSTGRES_NAMESPACE`
/// when set); `AGMSG_POSTGRES_TIMEOUT_MS` (its own deadline per op, below the host's call deadline, so
/// that a slow server is an error naming it rather than a trap). With no URL configured the driver
/// runs with no network at all, and says how to configure one.
pub fn configure_postgres(source: &mut DriverSource, partition: Option<&str>, url_override: Option<&str>) -> Result<(), StorageError> {
    let url = match url_override {
        Some(url) => Some(url.to_owned()),
        None => location::postgres_url()?,
    };
    let Some(url) = url else {
        source.capabilities = Capabilities(vec![Capability::InertSockets]);
        return Ok(());
    };
    let parsed = location::parse_postgres_url(&url).map_err(StorageError::runtime)?;
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let user = parsed.user.clone().or_else(|| env("PGUSER")).or_else(|| env("USER")).unwrap_or_else(|| "postgres".into());
    let database = parsed.database.clone().or_else(|| env("PGDATABASE")).unwrap_or_else(|| user.clone());
    let mut settings = vec![
        ("PGHOST".to_owned(), parsed.host.clone()),
        ("PGPORT".to_owned(), parsed.port.to_string()),
        ("PGUSER".to_owned(), user.clone()),
        ("PGDATABASE".to_owned(), database.clone()),
        ("PGSSLMODE".to_owned(), parsed.sslmode.clone()),
    ];
    if let Some(password) = location::postgres_password(&parsed, &user, &database) {
        settings.push(("PGPASSWORD".to_owned(), password));
    }
    let named_ca = parsed.sslrootcert.clone().or_else(|| env("PGSSLROOTCERT").map(std::path::PathBuf::from));
    let default_ca = env("HOME").map(|h| Path::new(&h).join(".postgresql/root.crt")).filter(|p| p.is_file());
    if let Some(ca) = named_ca.or(default_ca) {
        let pem = crate::plugin::read_file(&ca, MAX_CA_BYTES)
            .map_err(|e| StorageError::runtime(format!("the database's CA file (sslrootcert): {e}")))?;
        let pem = String::from_utf8(pem).map_err(|_| StorageError::runtime(format!("{}: not a PEM file", ca.display())))?;
        settings.push(("AGMSG_POSTGRES_CA".to_owned(), pem));
    }
    let namespace = env("AGMSG_POSTGRES_NAMESPACE");
    if let Some(ns) = &namespace
        && !ns.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err(StorageError::runtime(format!("AGMSG_POSTGRES_NAMESPACE {ns:?}: only letters, digits, '.', '_' and '-'")));
    }
    // A partition key: the team ('' for the shared store), under the namespace. Team names never hold ':'.
    let part = match (&namespace, partition) {
        (None, team) => team.unwrap_or_default().to_owned(),
        (Some(ns), team) => format!("{ns}:{}", team.unwrap_or_default()),
    };
    if !part.is_empty() {
        settings.push(("AGMSG_POSTGRES_PARTITION".to_owned(), part));
    }
    let call_timeout = crate::runtime::Limits::from_env().map_err(|e| StorageError::runtime(format!("{e:#}")))?.call_timeout;
    settings.push(("AGMSG_POSTGRES_TIMEOUT_MS".to_owned(), (call_timeout.as_millis() * 4 / 5).max(1).to_string()));
    source.capabilities = Capabilities(vec![Capability::Network { endpoint: parsed.endpoint() }]);
    source.settings = settings;
    Ok(())
}

/// The bundled driver `name`, as it runs for the shared store: with its store, and nothing else; the
/// postgres driver with its configured database instead (or, with none or a broken one, no network at
/// all: [`resolve`] reports the broken one).
pub fn bundled_driver(name: &str) -> Option<DriverSource> {
    let mut source = bundled_source(name)?;
    if name == POSTGRES && configure_postgres(&mut source, None, None).is_err() {
        source.capabilities = Capabilities(vec![Capability::InertSockets]);
        source.settings.clear();
    }
    Some(source)
}

fn bundled_source(name: &str) -> Option<DriverSource> {
    bundled::of(Axis::Storage).find(|d| d.name == name).map(|d| DriverSource {
        name: d.name.to_owned(),
        sha256: d.sha256.to_owned(),
        wasm: Cow::Borrowed(d.wasm),
        path: None,
        capabilities: Capabilities(vec![Capability::Store]),
        settings: Vec::new(),
    })
}

/// A trusted plugin (the registry has checked it can run).
fn from_plugin(plugin: Candidate) -> DriverSource {
    plugin.into_source().expect("a storage plugin that can run has its component")
}

fn from_file(path: &Path) -> Result<DriverSource, StorageError> {
    let wasm = crate::plugin::read_file(path, crate::plugin::MAX_COMPONENT_BYTES)
        .map_err(|e| StorageError::runtime(format!("driver component: {e}")))?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "driver".into());
    Ok(DriverSource {
        name,
        sha256: sha256_hex(&wasm),
        wasm: Cow::Owned(wasm),
        path: Some(path.to_owned()),
        // A file the user named has no manifest to ask for more: its store, and sockets linked
        // but inert (so a language runtime that imports them, like CPython's, still loads).
        capabilities: Capabilities(vec![Capability::Store, Capability::InertSockets]),
        settings: Vec::new(),
    })
}
