//! The postgres driver as agmsg's scripts pay for it (one `agmsg-host` process per op), alternating run
//! by run with `psql` running the same statements on the same server and database: `storage check`,
//! `send`, `list-unread` and `watch-after`. Each side is a new process that connects over TCP with
//! SCRAM-SHA-256 (`sslmode=disable`), runs the op's transactions and exits.
//!
//! The baseline's SQL is the driver's (`drivers/storage-postgres/src/lib.rs`, `schema.rs`), with the
//! parameters written in as literals (Debian 12's psql 15 cannot bind parameters), and in the driver's
//! round trips: a fresh connection first runs `schema::ensure`'s probe (two statements, one implicit
//! transaction), then the op's statement, its own transaction.
//!
//! The cluster is a throwaway one, started by this benchmark with the tests' helper
//! (`tests/common/postgres.rs`; PostgreSQL's server binaries from `scripts/setup`).
//!
//! Run: `cargo bench -p agmsg-host --bench postgres_vs_psql` (release build). Prints a table with ratios.

mod common;
#[allow(dead_code)]
#[path = "../../tests/common/postgres.rs"]
mod postgres_cluster;
#[path = "common/postgres_sql.rs"]
mod postgres_sql;

use std::path::Path;
use std::process::Command;

use common::{alternating, row};
use postgres_cluster::{Cluster, PASSWORD, USER};
use postgres_sql::{PROBE, send_sql};

/// Runs per op, each side.
const P: usize = 30;

/// The driver's `UNREAD`, without a limit.
const UNREAD: &str = "SELECT e.id, e.team, e.from_agent, e.to_agent, e.body, e.at FROM agmsg_events e \
    WHERE e.part = '' AND e.type = 'message_sent' AND e.team = 't' AND e.to_agent = 'bob' \
    AND e.seq > COALESCE((SELECT local_position FROM agmsg_read_cursors WHERE part = '' AND team = 't' AND agent = 'bob'), 0) \
    AND NOT EXISTS (SELECT 1 FROM agmsg_events r WHERE r.part = '' AND r.type = 'message_read' AND r.team = 't' \
      AND r.agent = 'bob' AND r.msg_id = e.id) \
    ORDER BY e.at, e.seq LIMIT NULL::bigint";

/// The driver's `WATCH` for the pair t:bob after `cursor`.
fn watch_sql(cursor: &str) -> String {
    format!(
        "SELECT t.last, NULL, NULL, NULL, NULL, NULL, NULL FROM agmsg_counter t WHERE t.part = '' \
         UNION ALL \
         (SELECT e.seq, e.id, e.team, e.from_agent, e.to_agent, e.body, e.at FROM agmsg_events e \
           WHERE e.part = '' AND e.type = 'message_sent' AND e.team = 't' AND e.to_agent = ANY('{{bob}}'::text[]) \
           AND e.seq > {cursor}::bigint \
           AND NOT EXISTS (SELECT 1 FROM agmsg_events r WHERE r.part = '' AND r.type = 'message_read' AND r.team = e.team \
             AND r.agent = e.to_agent AND r.msg_id = e.id) \
           ORDER BY e.seq)"
    )
}

struct Bench<'a> {
    cluster: &'a Cluster,
    database: String,
    home: &'a Path,
}

impl Bench<'_> {
    /// `agmsg-host <args>` in a home configured for the database (URL and password in the environment,
    /// as `storage switch postgres --url` and `PGPASSWORD` would leave them); its stdout.
    fn host(&self, args: &[&str]) -> String {
        let out = common::host_command()
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home)
            .env("AGMSG_CACHE_DIR", self.home.join("cache"))
            .env("AGMSG_STORAGE_DRIVER", "postgres")
            .env("AGMSG_POSTGRES_URL", self.cluster.url(&self.database, "disable"))
            .env("PGPASSWORD", PASSWORD)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// `psql` over TCP to the same server and database as the driver, running each of `commands` as
    /// one simple query (one round trip, one implicit transaction); its stdout.
    fn psql(&self, commands: &[&str]) -> String {
        let mut cmd = Command::new(self.cluster.psql_program());
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.cluster.addr.to_string())
            .args(["-p", &self.cluster.port.to_string(), "-U", USER, "-d", &self.database])
            .env("PGPASSWORD", PASSWORD)
            .env("PGSSLMODE", "disable");
        for sql in commands {
            cmd.args(["-c", sql]);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{commands:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }
}

fn main() {
    if common::listing_only() {
        return;
    }
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench { cluster: &cluster, database, home: dir.path() };

    println!("agmsg-host storage (postgres driver) vs psql, whole process, same server, database and SQL");
    println!("median of {P} runs each, alternating; ratio = agmsg-host / psql\n");
    bench.host(&["storage", "init"]);
    for i in 0..200 {
        bench.host(&["storage", "send", "t", "alice", "bob", &format!("fill {i}")]);
    }

    let (ours, base) = alternating(P, |_| drop(bench.host(&["storage", "check"])), |_| drop(bench.psql(&["SELECT 1"])));
    row("storage check (connect, SELECT 1)", ours, base, "psql, SELECT 1");

    let (ours, base) = alternating(
        P,
        |i| drop(bench.host(&["storage", "send", "t", "alice", "bob", &format!("p{i}")])),
        |i| drop(bench.psql(&[PROBE, &send_sql(i)])),
    );
    row("storage send", ours, base, "psql, probe + same insert");

    let unread = bench.host(&["storage", "list-unread", "t", "bob"]).lines().count();
    assert_eq!(bench.psql(&[PROBE, UNREAD]).lines().count(), unread + 2, "the same rows (after the probe's two)");
    let (ours, base) =
        alternating(P, |_| drop(bench.host(&["storage", "list-unread", "t", "bob"])), |_| drop(bench.psql(&[PROBE, UNREAD])));
    row(&format!("storage list-unread ({unread} unread)"), ours, base, "psql, probe + same query");

    // agmsg's watch polls from the tip; 20 behind it, each poll also carries 20 messages.
    let tip: u64 = bench.host(&["storage", "watch-tip", "t:bob"]).trim().parse().unwrap();
    for (label, cursor) in [("at the tip", tip), ("20 behind", tip - 20)] {
        let cursor = cursor.to_string();
        let (ours, base) = alternating(
            P,
            |_| drop(bench.host(&["storage", "watch-after", &cursor, "t:bob"])),
            |_| drop(bench.psql(&[PROBE, &watch_sql(&cursor)])),
        );
        row(&format!("storage watch-after ({label})"), ours, base, "psql, probe + same query");
    }
}
