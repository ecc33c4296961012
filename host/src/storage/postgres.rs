//! The bundled `postgres` driver's host settings (its hook in [`super::bundled_drivers`]): the driver has no
//! store directory, so the host grants it one endpoint, its database's, and sets its environment from
//! the URL `storage switch postgres --url` records (the config's `postgres.url`, or
//! `AGMSG_POSTGRES_URL`), the user's password (libpq's `PGPASSWORD` or password file) and CA. The
//! generic storage code (`source.rs`, `location.rs`) reaches this file only through that hook.

use std::path::{Path, PathBuf};

use super::StorageError;
use crate::capabilities::{Capabilities, Capability};
use crate::runtime::DriverSource;

/// The config's table for this driver (`"postgres": {...}`), read when asked.
pub type Config<'a> = &'a dyn Fn() -> Result<Option<serde_json::Value>, StorageError>;

/// What the driver runs with when no database is configured (or the configured one cannot be used by
/// a command that only lists it): no network at all, sockets linked but inert; it then says how to
/// configure one.
pub fn unconfigured(source: &mut DriverSource) {
    source.capabilities = Capabilities(vec![Capability::InertSockets]);
    source.settings.clear();
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// What the contract suite's runs need beside a fresh home to reach the store (`driver test`): the
/// configured database (its URL, password and CA, which
/// a fresh home no longer finds) and a namespace of its own per rule (`agmsg-driver-test-<pid>-{env}`),
/// so that each rule starts from an empty store. The namespaces' rows stay in that database.
pub fn suite_env(config: Config) -> Result<Vec<(String, String)>, StorageError> {
    let url = postgres_url(config)?.ok_or_else(|| {
        StorageError::runtime("the postgres driver has no database: run `agmsg-host storage switch postgres --url ...` first")
    })?;
    let parsed = parse_postgres_url(&url).map_err(StorageError::runtime)?;
    let mut env = vec![
        ("AGMSG_POSTGRES_URL".to_owned(), url),
        ("AGMSG_POSTGRES_NAMESPACE".to_owned(), format!("agmsg-driver-test-{}-{{env}}", std::process::id())),
    ];
    for name in ["PGSSLROOTCERT", "AGMSG_DRIVER_TIMEOUT_MS"] {
        if let Ok(value) = std::env::var(name) {
            env.push((name.to_owned(), value));
        }
    }
    let (user, database) = parsed.user_and_database();
    env.push(("PGUSER".to_owned(), user.clone()));
    env.push(("PGDATABASE".to_owned(), database.clone()));
    if let Some(password) = postgres_password(&parsed, &user, &database) {
        env.push(("PGPASSWORD".to_owned(), password));
    }
    Ok(env)
}

/// The bundled PostgreSQL driver's name.
pub const NAME: &str = "postgres";

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
pub fn configure(
    source: &mut DriverSource,
    partition: Option<&str>,
    url_override: Option<&str>,
    config: Config,
) -> Result<(), StorageError> {
    let url = match url_override {
        Some(url) => Some(url.to_owned()),
        None => postgres_url(config)?,
    };
    let Some(url) = url else {
        unconfigured(source);
        return Ok(());
    };
    let parsed = parse_postgres_url(&url).map_err(StorageError::runtime)?;
    let env = non_empty_env;
    let (user, database) = parsed.user_and_database();
    let mut settings = vec![
        ("PGHOST".to_owned(), parsed.host.clone()),
        ("PGPORT".to_owned(), parsed.port.to_string()),
        ("PGUSER".to_owned(), user.clone()),
        ("PGDATABASE".to_owned(), database.clone()),
        ("PGSSLMODE".to_owned(), parsed.sslmode.clone()),
    ];
    if let Some(password) = postgres_password(&parsed, &user, &database) {
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
    /// The user and database it connects as, as libpq defaults them: the URL's, else `PGUSER` /
    /// `PGDATABASE`, else the login name (`USER`, else libpq's `postgres`) and a database named as the
    /// user.
    pub fn user_and_database(&self) -> (String, String) {
        let user =
            self.user.clone().or_else(|| non_empty_env("PGUSER")).or_else(|| non_empty_env("USER")).unwrap_or_else(|| "postgres".into());
        let database = self.database.clone().or_else(|| non_empty_env("PGDATABASE")).unwrap_or_else(|| user.clone());
        (user, database)
    }

    /// `host:port`, as granted (`network:HOST:PORT`).
    pub fn endpoint(&self) -> String {
        if self.host.contains(':') { format!("[{}]:{}", self.host, self.port) } else { format!("{}:{}", self.host, self.port) }
    }
}

/// The configured database URL: `AGMSG_POSTGRES_URL`, else the config's `postgres.url` (read only
/// when the variable is not set); `None` when neither is set.
pub fn postgres_url(config: Config) -> Result<Option<String>, StorageError> {
    if let Some(url) = non_empty_env("AGMSG_POSTGRES_URL") {
        return Ok(Some(url));
    }
    Ok(config()?.as_ref().and_then(|table| table.get("url")).and_then(|v| v.as_str()).filter(|s| !s.is_empty()).map(str::to_owned))
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
    let path =
        non_empty_env("PGPASSFILE").map(PathBuf::from).or_else(|| non_empty_env("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
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
