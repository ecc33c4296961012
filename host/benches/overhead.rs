//! The process around a wasm op (issue 28 §3): each op as agmsg's scripts pay for it, one whole
//! `agmsg-host` process, alternating run by run with the native tool doing the same work on the same
//! data in the same run, so that load and cache state hit both sides alike.
//!
//! | op | native baseline |
//! |---|---|
//! | sqlite `storage send` | the `sqlite3` CLI running the driver's transaction on the same `messages.db` |
//! | sqlite `storage list-unread` (164 rows) | the `sqlite3` CLI running the driver's query there |
//! | tmux `terminal peek --lines 5` | `tmux capture-pane -p -S -5` on the same pane |
//! | jsonl `storage send` | (against the `sqlite3` CLI's send) |
//! | postgres `storage send` | `psql`: the driver's probe and insert (skipped without PostgreSQL) |
//!
//! agmsg-host runs each op two ways: one whole process per op (`AGMSG_HOST_SERVER=off`), and through the
//! resident server (a client process whose op a server's child runs; the server started first, in a
//! runtime directory of the run's own). Each of the three runs a few times unmeasured first (page
//! cache, tmux server, database, the server), then `OVERHEAD_RUNS` times (100 by default), the order
//! rotated every run; the table gives medians and p90, and each agmsg-host way's ratio to the native.
//!
//! Run: `cargo bench -p agmsg-host --bench overhead`. `AGMSG_HOST_BIN=<path>` measures another
//! `agmsg-host` binary (say, one linked differently) with the same harness; either is copied first, as an
//! install places it (see `common::host_binary`).

mod common;
#[allow(dead_code)]
#[path = "../../tests/common/postgres.rs"]
mod postgres_cluster;
#[path = "common/postgres_sql.rs"]
mod postgres_sql;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{ms, which};

/// Messages to bob, unread: the list-unread row's size (the issue's).
const UNREAD: usize = 164;
const WARM_UP: usize = 5;

fn runs() -> usize {
    match std::env::var("OVERHEAD_RUNS") {
        Ok(n) => n.parse().ok().filter(|&n| n > 0).unwrap_or_else(|| panic!("OVERHEAD_RUNS={n:?}: expected a positive count")),
        Err(_) => 100,
    }
}

struct Samples(Vec<Duration>);

impl Samples {
    fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * q).round() as usize]
    }
    fn median(&self) -> Duration {
        self.quantile(0.5)
    }
    fn p90(&self) -> Duration {
        self.quantile(0.9)
    }
    fn cell(&self) -> String {
        format!("{:.2} ms (p90 {:.2})", ms(self.median()), ms(self.p90()))
    }
}

/// The op per process, through the server, and natively: `n` times each after a warm-up, the order
/// rotated every run. `op(i, through_server)` runs agmsg-host's side.
fn alternate(n: usize, mut op: impl FnMut(usize, bool), mut base: impl FnMut(usize)) -> [Samples; 3] {
    for i in 0..WARM_UP {
        op(i, false);
        op(i, true);
        base(i);
    }
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for i in WARM_UP..WARM_UP + n {
        for k in 0..3 {
            let which = (i + k) % 3;
            let started = Instant::now();
            match which {
                0 => op(i, false),
                1 => op(i, true),
                _ => base(i),
            }
            samples[which].push(started.elapsed());
        }
    }
    samples.map(Samples)
}

struct Table(Vec<[String; 7]>);

impl Table {
    /// A row: `samples` as [`alternate`] measured them; `goal` is the server's.
    fn row(&mut self, op: &str, samples: &[Samples; 3], native: &str, goal: Option<f64>) {
        let [process, server, base] = samples;
        let ratio = |s: &Samples| s.median().as_secs_f64() / base.median().as_secs_f64();
        let goal = match goal {
            Some(g) => format!("≤ {g}× ({})", if ratio(server) <= g { "met" } else { "not met" }),
            None => String::new(),
        };
        let row = [
            op.to_owned(),
            process.cell(),
            server.cell(),
            format!("{native}: {}", base.cell()),
            format!("{:.2}×", ratio(process)),
            format!("{:.2}×", ratio(server)),
            goal,
        ];
        // Each row as it comes, so that a long run shows progress.
        eprintln!("{}", row.join(" | "));
        self.0.push(row);
    }
    fn skipped(&mut self, op: &str, why: &str) {
        eprintln!("{op}: skipped: {why}");
        self.0.push([op.to_owned(), format!("skipped: {why}"), String::new(), String::new(), String::new(), String::new(), String::new()]);
    }
    fn print(&self) {
        println!("| op | per process | through the server | native | ratio per process | ratio through the server | goal |");
        println!("|---|---|---|---|---|---|---|");
        for row in &self.0 {
            println!("| {} |", row.join(" | "));
        }
    }
}

/// A process with a clean environment: `PATH`, the run's `HOME` and cache, and `extra`.
fn command(program: &Path, home: &Path, extra: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("HOME", home).env("AGMSG_CACHE_DIR", home.join("cache"));
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

fn ok(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// Records printed: lines holding an `"id"` (the CLI also prints the journal mode it set).
fn records(out: &Output) -> usize {
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("\"id\"")).count()
}

struct Host {
    bin: PathBuf,
    home: PathBuf,
    /// The run's private runtime directory, where its server listens.
    runtime: PathBuf,
}

impl Host {
    fn run(&self, args: &[&str], extra: &[(&str, &str)]) -> Output {
        self.run_via(false, args, extra)
    }
    /// The op in one process, or through the server.
    fn run_via(&self, server: bool, args: &[&str], extra: &[(&str, &str)]) -> Output {
        let mut cmd = command(&self.bin, &self.home, extra);
        cmd.env("XDG_RUNTIME_DIR", &self.runtime).env("AGMSG_HOST_SERVER", if server { "on" } else { "off" });
        cmd.args(args);
        ok(cmd)
    }
    fn store(&self, store: &Path, driver: &str, args: &[&str]) -> Output {
        self.store_via(false, store, driver, args)
    }
    fn store_via(&self, server: bool, store: &Path, driver: &str, args: &[&str]) -> Output {
        let mut all = vec!["--store", store.to_str().unwrap(), "--driver", driver, "storage"];
        all.extend_from_slice(args);
        self.run_via(server, &all, &[])
    }
    /// Start the run's server and wait until it answers.
    fn start_server(&self) {
        self.run(&["server", "run", "--detach"], &[("AGMSG_HOST_SERVER_IDLE", "3600")]);
        let started = Instant::now();
        while !command(&self.bin, &self.home, &[])
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .args(["server", "status"])
            .status()
            .unwrap()
            .success()
        {
            assert!(started.elapsed() < Duration::from_secs(30), "the server never answered");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = command(&self.bin, &self.home, &[]).env("XDG_RUNTIME_DIR", &self.runtime).args(["server", "stop"]).output();
    }
}

/// The `sqlite3` CLI on `db` as agmsg's bash driver opens it (busy timeout 5000 ms), in the journal
/// mode the component's connection uses (PERSIST).
fn sqlite3(program: &Path, home: &Path, db: &Path, sql: &str) -> Output {
    let mut cmd = command(program, home, &[]);
    cmd.args(["-batch", "-cmd", ".timeout 5000", "-cmd", "PRAGMA journal_mode=PERSIST"]).arg(db).arg(sql);
    ok(cmd)
}

/// The driver's send transaction: the legacy row, the event linked to it, and the classification
/// mark (`legacy::note_linked`) moved up to it.
fn send_sql(i: usize) -> String {
    format!(
        "BEGIN IMMEDIATE; \
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'alice', 'carol', 'n{i}', strftime('%Y-%m-%dT%H:%M:%SZ','now')); \
         INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id) \
           VALUES('message_sent', 'native-{i}', 't', 'alice', 'carol', 'n{i}', strftime('%Y-%m-%dT%H:%M:%SZ','now'), last_insert_rowid()); \
         UPDATE storage_metadata SET value = CAST((SELECT MAX(id) FROM messages) AS TEXT) WHERE key = 'legacy_classified_upto'; \
         COMMIT;"
    )
}

/// The driver's unread query for t/bob, one JSON object per message.
const UNREAD_SQL: &str = "SELECT json_object('type', e.type, 'id', e.id, 'team', e.team, 'from', e.from_agent, 'to', e.to_agent, 'body', e.body, 'at', e.at) \
    FROM events e WHERE e.type='message_sent' AND e.team='t' AND e.to_agent='bob' \
    AND e.seq > COALESCE((SELECT local_position FROM read_cursors WHERE team='t' AND agent='bob'), 0) \
    AND NOT EXISTS (SELECT 1 FROM events r WHERE r.type='message_read' AND r.team='t' AND r.agent='bob' AND r.msg_id=e.id) \
    ORDER BY e.seq";

fn main() {
    if common::listing_only() {
        return;
    }
    let n = runs();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("cache")).unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let host = Host { bin: common::host_binary().to_path_buf(), home: home.clone(), runtime };
    host.start_server();
    eprintln!("agmsg-host: {}; {n} runs a side, alternating", host.bin.display());
    let mut table = Table(Vec::new());

    // sqlite: one store, bob's 164 unread; the sends go to carol, so bob's list stays the same size.
    let sqlite_store = dir.path().join("sqlite");
    let jsonl_store = dir.path().join("jsonl");
    for (driver, store) in [("sqlite", &sqlite_store), ("jsonl", &jsonl_store)] {
        host.store(store, driver, &["init"]);
        for i in 0..UNREAD {
            host.store(store, driver, &["send", "t", "alice", "bob", &format!("fill {i}")]);
        }
    }
    let db = sqlite_store.join("messages.db");
    let sqlite3_cli = which("sqlite3");
    match &sqlite3_cli {
        None => {
            table.skipped("sqlite `storage send`", "no sqlite3 CLI on PATH");
            table.skipped("sqlite `storage list-unread`", "no sqlite3 CLI on PATH");
        }
        Some(cli) => {
            let samples = alternate(
                n,
                |i, server| {
                    drop(host.store_via(server, &sqlite_store, "sqlite", &["send", "t", "alice", "carol", &format!("h{i}-{server}")]))
                },
                |i| drop(sqlite3(cli, &home, &db, &send_sql(i))),
            );
            table.row("sqlite `storage send`", &samples, "`sqlite3` CLI, same transaction", Some(0.75));

            // Both sides print the same records.
            for server in [false, true] {
                assert_eq!(records(&host.store_via(server, &sqlite_store, "sqlite", &["list-unread", "t", "bob"])), UNREAD);
            }
            assert_eq!(records(&sqlite3(cli, &home, &db, UNREAD_SQL)), UNREAD);
            let samples = alternate(
                n,
                |_, server| drop(host.store_via(server, &sqlite_store, "sqlite", &["list-unread", "t", "bob"])),
                |_| drop(sqlite3(cli, &home, &db, UNREAD_SQL)),
            );
            table.row(&format!("sqlite `storage list-unread` ({UNREAD} rows)"), &samples, "`sqlite3` CLI, same query", Some(0.75));
        }
    }

    match which("tmux") {
        None => table.skipped("tmux `terminal peek --lines 5`", "no tmux on PATH"),
        Some(tmux) => peek(&host, &tmux, dir.path(), n, &mut table),
    }

    match &sqlite3_cli {
        None => table.skipped("jsonl `storage send`", "no sqlite3 CLI on PATH (the baseline)"),
        Some(cli) => {
            let samples = alternate(
                n,
                |i, server| {
                    drop(host.store_via(server, &jsonl_store, "jsonl", &["send", "t", "alice", "carol", &format!("h{i}-{server}")]))
                },
                |i| drop(sqlite3(cli, &home, &db, &send_sql(n + WARM_UP + i))),
            );
            table.row("jsonl `storage send`", &samples, "`sqlite3` CLI's send", Some(0.75));
        }
    }

    match postgres_missing() {
        Some(why) => table.skipped("postgres `storage send`", &why),
        None => postgres_send(&host, n, &mut table),
    }

    println!();
    table.print();
}

/// `terminal peek <pane> --lines 5` against `tmux capture-pane` on a private server's pane.
fn peek(host: &Host, tmux: &Path, dir: &Path, n: usize, table: &mut Table) {
    let socket = dir.join("tmux.sock");
    let tmux_cmd = |args: &[&str]| {
        let mut cmd = command(tmux, &host.home, &[("SHELL", "/bin/sh")]);
        cmd.arg("-S").arg(&socket).args(args);
        cmd
    };
    ok(tmux_cmd(&["-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "160", "-y", "48", "cat"]));
    let pane = String::from_utf8(ok(tmux_cmd(&["display-message", "-p", "-t", "bench", "#{pane_id}"])).stdout).unwrap().trim().to_owned();
    ok(tmux_cmd(&["send-keys", "-l", "-t", &pane, "--", &"agmsg overhead bench line\n".repeat(40)]));
    let id = format!("tmux:{}:{pane}", socket.display());
    // The pane has drawn what it was sent before either side reads it.
    let started = Instant::now();
    while !String::from_utf8_lossy(&host.run(&["terminal", "peek", &id, "--lines", "5"], &[]).stdout).contains("bench line") {
        assert!(started.elapsed() < Duration::from_secs(10), "the pane never showed its text");
        std::thread::sleep(Duration::from_millis(20));
    }
    let samples = alternate(
        n,
        |_, server| drop(host.run_via(server, &["terminal", "peek", &id, "--lines", "5"], &[])),
        |_| drop(ok(tmux_cmd(&["capture-pane", "-p", "-t", &pane, "-S", "-5"]))),
    );
    table.row("tmux `terminal peek --lines 5`", &samples, "`tmux capture-pane`", Some(1.5));
    let _ = tmux_cmd(&["kill-server"]).output();
}

/// Why the postgres row cannot run here, if it cannot: the cluster helper needs PostgreSQL's server
/// binaries (and panics without them).
fn postgres_missing() -> Option<String> {
    let debian = std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().flatten().any(|e| e.path().join("bin/initdb").is_file());
    if debian || which("initdb").is_some() {
        None
    } else {
        Some("no PostgreSQL server binaries (initdb); scripts/setup installs them".into())
    }
}

/// `storage send` on the postgres driver against `psql` running the driver's probe and insert, over
/// TCP with SCRAM to a throwaway cluster.
fn postgres_send(host: &Host, n: usize, table: &mut Table) {
    use postgres_cluster::{Cluster, PASSWORD, USER};
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let url = cluster.url(&database, "disable");
    let env = [("AGMSG_STORAGE_DRIVER", "postgres"), ("AGMSG_POSTGRES_URL", url.as_str()), ("PGPASSWORD", PASSWORD)];
    host.run(&["storage", "init"], &env);
    let (addr, port) = (cluster.addr.to_string(), cluster.port.to_string());
    let psql = |i: usize| {
        let send = postgres_sql::send_sql(i);
        let mut cmd = command(&cluster.psql_program(), &host.home, &[("PGPASSWORD", PASSWORD), ("PGSSLMODE", "disable")]);
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", &addr, "-p", &port, "-U", USER, "-d", &database]).args([
            "-c",
            postgres_sql::PROBE,
            "-c",
            &send,
        ]);
        ok(cmd);
    };
    let samples = alternate(
        n,
        |i, server| drop(host.run_via(server, &["storage", "send", "t", "alice", "carol", &format!("h{i}-{server}")], &env)),
        psql,
    );
    table.row("postgres `storage send`", &samples, "`psql`, probe + same insert", Some(0.5));
}
