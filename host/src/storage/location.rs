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

/// The store directory: `--store`, else `AGMSG_STORAGE_PATH`, else `$AGMSG_HOME/db`, else agmsg's
/// default `~/.agents/skills/agmsg/db`.
pub fn store_dir(flag: Option<PathBuf>) -> Result<PathBuf, StorageError> {
    if let Some(dir) = flag {
        return Ok(dir);
    }
    if let Some(dir) = non_empty_env("AGMSG_STORAGE_PATH") {
        let trimmed = dir.trim_end_matches('/');
        return Ok(PathBuf::from(if trimmed.is_empty() { "/" } else { trimmed }));
    }
    if let Some(home) = non_empty_env("AGMSG_HOME") {
        return Ok(PathBuf::from(home).join("db"));
    }
    let home = non_empty_env("HOME")
        .ok_or_else(|| StorageError::runtime("cannot find the store: set --store, AGMSG_STORAGE_PATH or HOME"))?;
    Ok(PathBuf::from(home).join(".agents/skills/agmsg/db"))
}

/// Where agmsg keeps team registries: `AGMSG_TEAMS_DIR`, else `$AGMSG_HOME/teams`, else
/// `~/.agents/skills/agmsg/teams` (beside agmsg's default `db/`).
pub fn teams_dir() -> Option<PathBuf> {
    non_empty_env("AGMSG_TEAMS_DIR")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("AGMSG_HOME").map(|h| PathBuf::from(h).join("teams")))
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
        if store_root.file_name() == Some(team.as_ref()) && parent.and_then(Path::file_name) == Some("teams".as_ref())
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
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| StorageError::runtime(format!("{} is not valid JSON: {e}", config.display())))?;
    match value.pointer("/drivers/partition").map(|p| p.as_str()) {
        None | Some(Some("shared")) => shared(),
        Some(Some("per-team")) => Ok(StorePlace { root: store_root.to_owned(), partition: Some(team.to_owned()) }),
        Some(other) => Err(StorageError::runtime(format!(
            "{}: unknown partition {} for team '{team}'",
            config.display(),
            other.map_or_else(|| "(not a string)".to_owned(), |s| format!("'{s}'"))
        ))),
    }
}

/// The agmsg config file: `${AGMSG_CONFIG:-~/.agents/agmsg/config.json}`.
pub fn config_file() -> Option<PathBuf> {
    non_empty_env("AGMSG_CONFIG")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".agents/agmsg/config.json")))
}

/// The active storage driver: `--driver`, else `AGMSG_STORAGE_DRIVER`, else the config's `storage`
/// key, else `sqlite`.
pub fn storage_driver(flag: Option<String>) -> Result<String, StorageError> {
    if let Some(name) = flag.or_else(|| non_empty_env("AGMSG_STORAGE_DRIVER")) {
        return Ok(name);
    }
    if let Some(path) = config_file() {
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let config: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| StorageError::runtime(format!("{} is not valid JSON: {e}", path.display())))?;
                if let Some(name) = config.get("storage").and_then(|v| v.as_str()).filter(|s| !s.is_empty()) {
                    return Ok(name.to_owned());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StorageError::runtime(format!("cannot read {}: {e}", path.display()))),
        }
    }
    Ok("sqlite".to_owned())
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

/// The PostgreSQL database of the `postgres` driver, from its URL
/// (`postgres[ql]://[user@]host[:port][/database][?sslmode=...&sslrootcert=...]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresUrl {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub database: Option<String>,
    /// `disable`, `prefer` (the default, as libpq's), `require` or `verify-full`.
    pub sslmode: String,
    /// A PEM file of the CA that signed the server's certificate (`verify-full`).
    pub sslrootcert: Option<PathBuf>,
}

impl PostgresUrl {
    /// `host:port`, as granted (`network:HOST:PORT`).
    pub fn endpoint(&self) -> String {
        if self.host.contains(':') { format!("[{}]:{}", self.host, self.port) } else { format!("{}:{}", self.host, self.port) }
    }
}

/// The configured database URL: `AGMSG_POSTGRES_URL`, else the config's `postgres.url`; `None` when
/// neither is set.
pub fn postgres_url() -> Result<Option<String>, StorageError> {
    if let Some(url) = non_empty_env("AGMSG_POSTGRES_URL") {
        return Ok(Some(url));
    }
    let Some(path) = config_file() else { return Ok(None) };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let config: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| StorageError::runtime(format!("{} is not valid JSON: {e}", path.display())))?;
            Ok(config.pointer("/postgres/url").and_then(|v| v.as_str()).filter(|s| !s.is_empty()).map(str::to_owned))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StorageError::runtime(format!("cannot read {}: {e}", path.display()))),
    }
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| format!("bad percent escape in {s:?}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad percent escape in {s:?}"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8 once decoded"))
}

/// Parse a database URL. A password in it is refused: it belongs in `PGPASSWORD` or a password file,
/// never in agmsg's config.
pub fn parse_postgres_url(url: &str) -> Result<PostgresUrl, String> {
    let bad = |why: &str| format!("invalid PostgreSQL URL {url:?}: {why}");
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
        .ok_or_else(|| bad("it must start with postgres:// or postgresql://"))?;
    let (authority_path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = authority_path.split_once('/').unwrap_or((authority_path, ""));
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let user = match userinfo {
        Some(u) if u.contains(':') => {
            return Err(bad("it holds a password; put the password in PGPASSWORD or a password file (~/.pgpass) instead"));
        }
        Some(u) if !u.is_empty() => Some(percent_decode(u).map_err(|e| bad(&e))?),
        _ => None,
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed [ in the host"))?;
        (h.to_owned(), after.strip_prefix(':'))
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (hostport.to_owned(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("it names no host (a Unix socket cannot be reached from the sandbox: use host:port)"));
    }
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
        None => 5432,
    };
    crate::capabilities::parse_endpoint(&format!("{host}:{port}")).map_err(|e| bad(&e))?;
    let database = Some(percent_decode(path).map_err(|e| bad(&e))?).filter(|d| !d.is_empty());
    let mut parsed = PostgresUrl { host, port, user, database, sslmode: "prefer".into(), sslrootcert: None };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value).map_err(|e| bad(&e))?;
        match key {
            "sslmode" => match value.as_str() {
                "disable" | "prefer" | "require" | "verify-full" => parsed.sslmode = value,
                other => return Err(bad(&format!("sslmode {other:?} is not supported (disable, prefer, require, verify-full)"))),
            },
            "sslrootcert" => parsed.sslrootcert = Some(PathBuf::from(value)),
            "user" => parsed.user = Some(value),
            "dbname" => parsed.database = Some(value),
            "password" => return Err(bad("it holds a password; use PGPASSWORD or a password file (~/.pgpass) instead")),
            other => return Err(bad(&format!("the parameter {other:?} is not supported (sslmode, sslrootcert, user, dbname)"))),
        }
    }
    Ok(parsed)
}

/// The password for `user` on the URL's database, as libpq finds it: `PGPASSWORD`, else the first
/// matching line of the password file (`PGPASSFILE`, else `~/.pgpass`; `host:port:database:user:password`,
/// `*` matching anything, `\` escaping). A password file that others may read is ignored, as libpq does.
pub fn postgres_password(url: &PostgresUrl, user: &str, database: &str) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let path = non_empty_env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        if meta.is_file() {
            crate::log::host_log::warn(&format!("password file {} is readable by others: ignored (chmod 600 it)", path.display()));
        }
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let port = url.port.to_string();
    let wanted = [url.host.as_str(), port.as_str(), database, user];
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        if fields[..4].iter().zip(wanted).all(|(field, want)| field == "*" || field == want) {
            return Some(fields[4].clone());
        }
    }
    None
}

/// One password-file line's fields: `:` separates, `\` escapes the next character.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod postgres_url_tests {
    use super::*;

    #[test]
    fn urls() {
        let u = parse_postgres_url("postgres://agmsg@db.example.com:6543/team?sslmode=verify-full&sslrootcert=/etc/ca.pem").unwrap();
        assert_eq!(
            u,
            PostgresUrl {
                host: "db.example.com".into(),
                port: 6543,
                user: Some("agmsg".into()),
                database: Some("team".into()),
                sslmode: "verify-full".into(),
                sslrootcert: Some("/etc/ca.pem".into()),
            }
        );
        assert_eq!(u.endpoint(), "db.example.com:6543");
        let u = parse_postgres_url("postgresql://[::1]/x").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.endpoint().as_str(), u.sslmode.as_str()), ("::1", 5432, "[::1]:5432", "prefer"));
        for bad in [
            "postgres://u:secret@h/db",
            "postgres://h/db?password=x",
            "mysql://h/db",
            "postgres:///db",
            "postgres://h:0/db",
            "postgres://h/db?sslmode=verify-ca",
            "postgres://h/db?options=x",
            "postgres://h%2Fx/db",
        ] {
            assert!(parse_postgres_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn password_file_lines() {
        assert_eq!(split_pgpass(r"h:5432:*:u:pa\:ss\\word"), ["h", "5432", "*", "u", r"pa:ss\word"]);
        assert_eq!(split_pgpass("a:b:c:d:e:f"), ["a", "b", "c", "d", "e:f"]);
    }
}
