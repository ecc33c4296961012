//! The postgres storage driver against throwaway PostgreSQL clusters (tests/common/postgres.rs): the
//! contract suite and `driver test`, many processes from two homes on one database, two writers and a
//! watcher (commit order = cursor order), TLS, a server that is down, restarted or silent, per-team
//! partitions, `storage switch --url`, and `storage convert` from sqlite and back.

mod common;

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::postgres::{Cluster, PASSWORD};
use common::{Env, Harness};

/// An isolated home whose runs use `database` of `cluster`.
fn env_on(cluster: &Cluster, database: &str) -> Env {
    cluster.env(database).iter().fold(Env::new(), |env, (k, v)| env.env(k, v))
}

#[test]
fn contract_suite() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let mut env = cluster.env(&database);
    // Every rule in a namespace of its own: an empty store each.
    env.push(("AGMSG_POSTGRES_NAMESPACE".into(), "rule-{env}".into()));
    let harness = Harness { env, ..common::harness() };
    let rules = agmsg_host::storage::suite::RULES;
    assert_eq!(rules.len(), 22);
    let mut failures = Vec::new();
    for rule in rules {
        if let Err(reason) = agmsg_conformance::run_rule(&harness, rule, "postgres") {
            failures.push(format!("{}: {reason}", rule.name));
        }
    }
    assert!(failures.is_empty(), "{} rules failed:\n{}", failures.len(), failures.join("\n\n"));
    // Fifteen namespaces' worth of partitions, all in the one database.
    let parts = cluster.psql(&database, "SELECT count(DISTINCT part) FROM agmsg_counter");
    assert!(parts.trim().parse::<usize>().unwrap() >= 10, "{parts}");
}

#[test]
fn driver_test_passes() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = env_on(&cluster, &database);
    let run = env.run(&["driver", "test", "postgres"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.ends_with("15 of 22 rules passed, 7 skipped (not applicable to this driver)\n"), "{run:?}");
    // The rules ran in namespaces of their own: the shared store was never touched.
    assert_eq!(env.run(&["storage", "history", "t"]).ok().stdout, "");
}

/// `driver test postgres` purges each rule's namespace when the rule ends (the driver's optional `purge`
/// interface): afterwards no row of any `agmsg-driver-test-*` partition is left in the database, and
/// the user's own store there is untouched.
#[test]
fn driver_test_leaves_no_rows_behind() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = env_on(&cluster, &database);
    let kept = env.send("t", "alice", "bob", "the user's own message");
    let run = env.run(&["driver", "test", "postgres"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("does not purge") && !run.stderr.contains("cleanup"), "{run:?}");
    let left = cluster.psql(
        &database,
        "SELECT (SELECT count(*) FROM agmsg_events WHERE part LIKE 'agmsg-driver-test-%') || ' ' || \
         (SELECT count(*) FROM agmsg_read_cursors WHERE part LIKE 'agmsg-driver-test-%') || ' ' || \
         (SELECT count(*) FROM agmsg_counter WHERE part LIKE 'agmsg-driver-test-%')",
    );
    assert_eq!(left.trim(), "0 0 0", "events, read cursors, counters of the rules' namespaces");
    let history = env.storage(&["history", "t"]);
    assert_eq!(history.ok().json().iter().map(|m| m["id"].as_str().unwrap()).collect::<Vec<_>>(), [kept.as_str()]);
    // Purging is destructive: never without --yes.
    assert_eq!(env.storage(&["purge-store"]).code, 2);
    assert_eq!(env.storage(&["history", "t"]).json().len(), 1);
}

/// 8 processes x 250 sends, from two homes (two machines' worth of agmsg) on one database: exactly
/// 2000 messages, no duplicate, none lost, and the counter equals the number of events.
#[test]
fn eight_processes_times_250_sends_from_two_homes() {
    const WRITERS: usize = 8;
    const SENDS: usize = 250;
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let homes = [env_on(&cluster, &database), env_on(&cluster, &database)];
    homes[0].storage(&["init"]).ok();
    let ids = common::concurrent_sends(WRITERS, SENDS, |w| &homes[w % 2]);
    assert_eq!(ids.len(), WRITERS * SENDS);
    let row = cluster.psql(
        &database,
        "SELECT count(*), count(DISTINCT id), min(seq), max(seq), (SELECT last FROM agmsg_counter WHERE part = '') \
         FROM agmsg_events WHERE type = 'message_sent'",
    );
    assert_eq!(row.trim(), "2000|2000|1|2000|2000", "dense, commit-ordered numbers");
    for home in &homes {
        let listed: HashSet<String> =
            home.storage(&["list-unread", "t", "bob"]).ok().json().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(listed, ids, "every acknowledged send is there, seen from either home");
    }
}

/// A long-running `psql` session fed through its stdin.
struct Session(std::process::Child, std::io::BufReader<std::process::ChildStdout>);

impl Session {
    fn open(cluster: &Cluster, database: &str) -> Session {
        let mut child = Command::new(cluster.psql_program())
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(cluster.dir())
            .args(["-p", &cluster.port.to_string(), "-U", common::postgres::USER, "-d", database])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        Session(child, out)
    }
    fn send(&mut self, sql: &str) {
        let stdin = self.0.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}").unwrap();
        stdin.flush().unwrap();
    }
    /// Return once the server has run everything sent so far (psql answers a marker query after it).
    fn synced(&mut self) {
        self.send("SELECT 'synced';");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut self.1, &mut line).unwrap();
        assert_eq!(line, "synced\n", "psql answered");
    }
    fn finish(mut self) {
        drop(self.0.stdin.take());
        assert!(self.0.wait().unwrap().success());
    }
}

/// Two writers and a watcher. Writer A takes the counter's next number inside a transaction it keeps
/// open (as any slow writer would); writer B, an agmsg-host send, must wait for it rather than commit a
/// later number first; the watcher polling meanwhile sees neither and its cursor does not move past
/// A's number. After A commits, B lands, and the watcher gets both, in order, from where it was. With
/// a SEQUENCE B would commit number N+1 while N is open, the watcher's cursor would pass N, and A's
/// message would never be delivered.
#[test]
fn two_writers_and_a_watcher_commit_order_is_cursor_order() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = env_on(&cluster, &database);
    env.send("t", "x", "bob", "before");
    let first = env.storage(&["watch-after", "0", "t:bob"]).ok().json();
    let cursor0 = first.last().unwrap()["cursor"].as_str().unwrap().to_owned();
    assert_eq!(cursor0, "1");

    let mut a = Session::open(&cluster, &database);
    a.send("BEGIN;");
    a.send(
        "WITH s AS (UPDATE agmsg_counter SET last = last + 1 WHERE part = '' RETURNING last) \
         INSERT INTO agmsg_events (part, seq, type, id, team, from_agent, to_agent, body, at) \
         SELECT '', s.last, 'message_sent', 'writer-a', 't', 'a', 'bob', 'from A', '2026-01-01T00:00:00Z' FROM s;",
    );
    // A holds the counter row from here on (a fixed 300 ms raced a slow psql on a loaded machine).
    a.synced();
    let b = env.cmd().args(["storage", "send", "t", "b", "bob", "from B"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let mut b = b;
    assert!(b.try_wait().unwrap().is_none(), "B must wait for A's open transaction, not commit a later number first");

    // The watcher, meanwhile: nothing new, and the cursor stays where it was.
    let polled = env.storage(&["watch-after", &cursor0, "t:bob"]).ok().json();
    assert_eq!(polled.len(), 1, "{polled:?}");
    assert_eq!(polled[0]["cursor"], cursor0.as_str(), "the cursor must not pass A's uncommitted number");

    a.send("COMMIT;");
    a.finish();
    let out = b.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let b_id = String::from_utf8(out.stdout).unwrap().trim().to_owned();

    let batch = env.storage(&["watch-after", &cursor0, "t:bob"]).ok().json();
    let ids: Vec<&str> = batch.iter().filter_map(|r| r.get("id").and_then(|v| v.as_str())).collect();
    assert_eq!(ids, ["writer-a", b_id.as_str()], "both, in commit order");
    assert_eq!(batch.last().unwrap()["cursor"], "3");
}

/// Two writer loops and a watcher loop at full speed: the watcher, polling and consuming as agmsg's
/// watch does, receives every message exactly once.
#[test]
fn two_writers_and_a_watcher_under_load_deliver_everything_once() {
    const SENDS: usize = 120;
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = env_on(&cluster, &database);
    env.storage(&["init"]).ok();
    let script = format!(r#"for i in $(seq 1 {SENDS}); do "$0" storage send t "w$1" bob "w$1-$i" || exit 1; done"#);
    let mut writers: Vec<_> = (0..2)
        .map(|w| env.program("bash").args(["-c", &script, common::BIN, &w.to_string()]).stdout(Stdio::piped()).spawn().unwrap())
        .collect();
    let mut delivered: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut done = false;
    loop {
        // Whether the writers had all finished before this poll began: then this poll sees everything.
        let last_round = done;
        let cursor = env.storage(&["read-cursor-get", "t", "bob"]).ok().stdout.trim().to_owned();
        let batch = env.storage(&["watch-after", &cursor, "t:bob"]).ok().json();
        let next = batch.last().unwrap()["cursor"].as_str().unwrap().to_owned();
        let shown: Vec<String> = batch[..batch.len() - 1].iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
        let mut args = vec!["read-cursor-consume", "t", "bob", next.as_str()];
        args.extend(shown.iter().map(String::as_str));
        env.storage(&args).ok();
        delivered.extend(shown);
        if last_round {
            break;
        }
        done = writers.iter_mut().all(|w| w.try_wait().unwrap().is_some());
        assert!(started.elapsed() < Duration::from_secs(300), "the writers did not finish");
    }
    let mut sent = HashSet::new();
    for writer in writers {
        let out = writer.wait_with_output().unwrap();
        assert!(out.status.success());
        sent.extend(String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned));
    }
    let unique: HashSet<String> = delivered.iter().cloned().collect();
    assert_eq!(unique.len(), delivered.len(), "a message was delivered twice");
    assert_eq!(unique, sent, "every message delivered");
    assert!(env.storage(&["list-unread", "t", "bob"]).ok().json().is_empty());
}

#[test]
fn tls_require_and_verify_full_with_a_private_ca() {
    let cluster = Cluster::start_tls();
    let database = cluster.create_database();
    let ca = cluster.ca.clone().unwrap();
    let base = format!("postgres://agmsg@{{host}}:{}/{database}", cluster.port);
    let env_with = |host: &str, query: &str| {
        Env::new()
            .env("AGMSG_STORAGE_DRIVER", "postgres")
            .env("PGPASSWORD", PASSWORD)
            .env("AGMSG_POSTGRES_URL", &format!("{}?{query}", base.replace("{host}", host)))
    };
    for (host, query) in [
        ("127.0.0.1", "sslmode=require".to_owned()),
        ("127.0.0.1", format!("sslmode=verify-full&sslrootcert={}", ca.display())),
        ("localhost", format!("sslmode=verify-full&sslrootcert={}", ca.display())),
    ] {
        let env = env_with(host, &query);
        let id = env.send("t", "a", "bob", &format!("over {query}"));
        let unread = env.storage(&["list-unread", "t", "bob"]).ok().json();
        assert!(unread.iter().any(|r| r["id"] == id.as_str()), "{query}: {unread:?}");
    }
    let described = env_with("127.0.0.1", "sslmode=verify-full").storage(&["describe"]).ok().stdout.clone();
    assert!(described.contains("VerifyFull"), "{described}");

    // verify-full checks the name: the same CA's certificate, issued for another host only, is refused
    // whichever name or address the client used (require, which checks no name, still connects).
    cluster.reissue_server_cert("DNS:elsewhere.example");
    for host in ["127.0.0.1", "localhost"] {
        let run = env_with(host, &format!("sslmode=verify-full&sslrootcert={}", ca.display())).storage(&["send", "t", "a", "bob", "x"]);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{host}: {run:?}");
        let why = format!(
            "TLS: invalid peer certificate: certificate not valid for name \"{host}\"; certificate is only valid for DnsName(\"elsewhere.example\")"
        );
        assert!(run.stderr.contains(&why), "{host}: {run:?}");
    }
    env_with("127.0.0.1", "sslmode=require").send("t", "a", "bob", "no name checked");

    // verify-full against the public roots: the private CA is unknown.
    let run = env_with("127.0.0.1", "sslmode=verify-full").storage(&["send", "t", "a", "bob", "x"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("UnknownIssuer") && run.stderr.contains(&format!("127.0.0.1:{}", cluster.port)), "{run:?}");
    let bad_ca = Env::new().env("AGMSG_STORAGE_DRIVER", "postgres").env("PGPASSWORD", PASSWORD).env(
        "AGMSG_POSTGRES_URL",
        &format!("postgres://agmsg@127.0.0.1:{}/{database}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem", cluster.port),
    );
    let run = bad_ca.storage(&["send", "t", "a", "bob", "x"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("sslrootcert"), "{run:?}");
    // sslmode=require against a server without TLS is refused; prefer falls back.
    let plain = Cluster::start();
    let plain_db = plain.create_database();
    for (mode, ok) in [("require", false), ("prefer", true), ("disable", true)] {
        let env = Env::new()
            .env("AGMSG_STORAGE_DRIVER", "postgres")
            .env("PGPASSWORD", PASSWORD)
            .env("AGMSG_POSTGRES_URL", &plain.url(&plain_db, mode));
        let run = env.storage(&["send", "t", "a", "bob", "x"]);
        assert_eq!(run.code == 0, ok, "{mode}: {run:?}");
        if !ok {
            assert!(run.stderr.contains("does not offer TLS"), "{run:?}");
        }
    }
}

/// The server down, then back: a clear error naming the endpoint, at once; nothing half-applied; the
/// next op succeeds once it is back. A server that accepts and never answers: the error comes within the
/// call deadline.
#[test]
fn server_down_restarted_or_silent() {
    let mut cluster = Cluster::start();
    let database = cluster.create_database();
    let env = env_on(&cluster, &database);
    let before = env.send("t", "a", "bob", "before");
    cluster.stop();
    let started = Instant::now();
    let run = env.storage(&["send", "t", "a", "bob", "while down"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains(&format!("postgres at 127.0.0.1:{}", cluster.port)), "{run:?}");
    // At once, not at the 30 s call deadline (the bound leaves room for a loaded machine).
    assert!(started.elapsed() < Duration::from_secs(15), "refused at once: {:?}", started.elapsed());
    let run = env.storage(&["list-unread", "t", "bob"]);
    assert_eq!(run.code, 13, "{run:?}");
    cluster.restart_stopped();
    let after = env.send("t", "a", "bob", "after");
    let ids: Vec<String> =
        env.storage(&["list-unread", "t", "bob"]).ok().json().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, [before, after], "nothing of the failed send was applied");
    assert_eq!(cluster.psql(&database, "SELECT last FROM agmsg_counter").trim(), "2");

    // A silent server: it accepts connections and never answers.
    // It holds the connection until the test is done with it: a fixed 4 s hold closed it under a slow
    // op on a loaded machine, which then failed with another error.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let (done, until_done) = std::sync::mpsc::channel::<()>();
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for stream in silent.incoming().take(1) {
            kept.push(stream);
            let _ = until_done.recv();
        }
    });
    let env = Env::new()
        .env("AGMSG_STORAGE_DRIVER", "postgres")
        .env("PGPASSWORD", PASSWORD)
        .env("AGMSG_DRIVER_TIMEOUT_MS", "3000")
        .env("AGMSG_POSTGRES_URL", &format!("postgres://agmsg@127.0.0.1:{port}/x?sslmode=disable"));
    let started = Instant::now();
    let run = env.storage(&["send", "t", "a", "bob", "x"]);
    let took = started.elapsed();
    assert_eq!(run.code, 13, "{run:?}");
    // The driver's own error (its budget is 4/5 of the call's 3 s), not the host's trap at the call deadline.
    assert!(run.stderr.contains(&format!("postgres at 127.0.0.1:{port}: no answer before the deadline")), "{run:?}");
    // Bounded by the call (3 s), with room for a loaded machine; the server would never answer.
    assert!(took < Duration::from_secs(15), "{took:?}");
    drop(done);
    // Should the driver never have connected, this connection ends the listener's wait for one.
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    held.join().unwrap();
}

/// A per-team partition is a store of its own in the same database: its own numbers, cursors, export.
#[test]
fn per_team_partitions() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = env_on(&cluster, &database);
    let teams = env.dir.path().join(".agents/skills/agmsg/teams/solo");
    std::fs::create_dir_all(&teams).unwrap();
    std::fs::write(teams.join("config.json"), r#"{"drivers":{"partition":"per-team"}}"#).unwrap();
    env.send("shared", "a", "bob", "in the shared store");
    env.send("solo", "a", "bob", "in solo's partition");
    env.send("solo", "a", "bob", "again");
    let parts = cluster.psql(&database, "SELECT part || '=' || last FROM agmsg_counter ORDER BY part");
    assert_eq!(parts.lines().collect::<Vec<_>>(), ["=1", "solo=2"]);
    assert_eq!(env.storage(&["watch-tip", "solo:bob"]).ok().stdout.trim(), "2");
    assert_eq!(env.storage(&["list-unread", "solo", "bob"]).ok().json().len(), 2);
    let file = env.dir.path().join("solo.jsonl");
    env.storage(&["export", "solo", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 2);
    let file = env.dir.path().join("shared.jsonl");
    env.storage(&["export", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
}

/// `storage switch postgres --url`: checked against that database, recorded in agmsg's config (never a
/// password), used from then on; a URL with a password is refused.
#[test]
fn switch_with_url_records_the_database_without_a_password() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = Env::new().env("PGPASSWORD", PASSWORD);
    let url = cluster.url(&database, "disable");
    let run = env.storage(&["switch", "postgres", "--url", &url]);
    assert_eq!(run.code, 0, "{run:?}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.dir.path().join(".agents/agmsg/config.json")).unwrap()).unwrap();
    assert_eq!(config["storage"], "postgres");
    assert_eq!(config["postgres"]["url"], url.as_str());
    let id = env.send("t", "a", "bob", "through the configured database");
    assert_eq!(cluster.psql(&database, "SELECT id FROM agmsg_events").trim(), id);

    let run = env.storage(&["switch", "postgres", "--url", &format!("postgres://agmsg:{PASSWORD}@127.0.0.1:{}/x", cluster.port)]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("password"), "{run:?}");
    // A database that refuses the login: the switch does not happen.
    let wrong = Env::new().env("PGPASSWORD", "wrong");
    let run = wrong.storage(&["switch", "postgres", "--url", &url]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("password authentication failed"), "{run:?}");
    assert!(!wrong.dir.path().join(".agents/agmsg/config.json").exists());

    // The password from a password file, as libpq reads it (and only when it is private).
    let pgpass = Env::new();
    let file = pgpass.dir.path().join(".pgpass");
    std::fs::write(&file, format!("127.0.0.1:{}:*:agmsg:{PASSWORD}\n", cluster.port)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    pgpass.storage(&["switch", "postgres", "--url", &url]).ok();
    assert_eq!(pgpass.storage(&["history", "t"]).ok().json().len(), 1);
}

/// `storage convert postgres --url`: a sqlite home moves into the database in one step, which is
/// recorded as `switch --url` records it; the next runs find it with no variable but the password.
#[test]
fn convert_with_url_records_the_database() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = Env::new().env("PGPASSWORD", PASSWORD);
    let id = env.send("t", "alice", "bob", "sent while on sqlite");
    let url = cluster.url(&database, "disable");
    let run = env.storage(&["convert", "postgres", "--url", &format!("postgres://agmsg:{PASSWORD}@127.0.0.1:{}/x", cluster.port)]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("password"), "{run:?}");
    let run = env.storage(&["convert", "jsonl", "--url", &url]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("--url is for the postgres driver"), "{run:?}");
    let run = env.storage(&["convert", "postgres", "--url", &url]);
    assert_eq!(run.code, 0, "{run:?}");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.dir.path().join(".agents/agmsg/config.json")).unwrap()).unwrap();
    assert_eq!((config["storage"].as_str(), config["postgres"]["url"].as_str()), (Some("postgres"), Some(url.as_str())));
    let unread = env.storage(&["list-unread", "t", "bob"]).ok().json();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0]["id"], id.as_str());
    assert_eq!(cluster.psql(&database, "SELECT id FROM agmsg_events").trim(), id);
}

/// sqlite -> postgres -> sqlite: the event log (messages and read marks, in order) comes back exactly.
#[test]
fn convert_from_sqlite_and_back_round_trips_exactly() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let env = Env::new().env("PGPASSWORD", PASSWORD).env("AGMSG_POSTGRES_URL", &cluster.url(&database, "disable"));
    let mut ids = Vec::new();
    for i in 0..30 {
        ids.push(env.send(
            if i % 3 == 0 { "t2" } else { "t" },
            "alice",
            if i % 2 == 0 { "bob" } else { "carol" },
            &format!("m{i} \"quoted\" \\ {{}} , ü\ttab"),
        ));
    }
    env.storage(&["mark-read-batch", "t", "bob", &ids[2], &ids[4]]).ok();
    env.storage(&["mark-read-batch", "t", "carol", &ids[1]]).ok();
    let sqlite_export = env.dir.path().join("sqlite.jsonl");
    env.storage(&["export", sqlite_export.to_str().unwrap()]).ok();
    let unread_before = env.storage(&["list-unread", "t", "bob"]).ok().stdout.clone();

    let run = env.storage(&["convert", "postgres"]);
    assert_eq!(run.code, 0, "{run:?}");
    let pg_export = env.dir.path().join("postgres.jsonl");
    env.storage(&["export", pg_export.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&pg_export).unwrap(), std::fs::read_to_string(&sqlite_export).unwrap());
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).ok().stdout, unread_before);

    // Converting into a database that already holds events is refused, and changes nothing.
    let other = Env::new().env("PGPASSWORD", PASSWORD).env("AGMSG_POSTGRES_URL", &cluster.url(&database, "disable"));
    other.send("t", "x", "y", "a sqlite message");
    let run = other.storage(&["convert", "postgres"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("already holds events"), "{run:?}");

    // And back, into a new store directory.
    let back = env.dir.path().join("back");
    let run = env.run(&["--store", back.to_str().unwrap(), "storage", "convert", "sqlite"]);
    assert_eq!(run.code, 0, "{run:?}");
    let back_export = env.dir.path().join("back.jsonl");
    env.run(&["--store", back.to_str().unwrap(), "storage", "export", back_export.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&back_export).unwrap(), std::fs::read_to_string(&sqlite_export).unwrap());
}

/// One agmsg-host "machine" of [`two_machines_in_network_namespaces`]: its own home, config and
/// compile cache, every run inside its network namespace.
struct Machine<'lan> {
    env: Env,
    lan: &'lan common::netns::Lan,
    k: usize,
}

impl Machine<'_> {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = self.env.cmd();
        cmd.args(args);
        self.lan.inside(self.k, &cmd)
    }
    fn run(&self, args: &[&str]) -> common::Run {
        self.cmd(args).output().unwrap().into()
    }
}

/// The issue's deployment: the database on one network namespace's address, and two agmsg-host
/// "machines" (separate homes, configs and caches) in two others, each configured with `storage switch
/// postgres --url` (one finding the password in `PGPASSWORD` and using `sslmode=require`, the other in
/// its `~/.pgpass` with `verify-full` against the private CA), the server accepting TLS only. Both send
/// at once; each reads everything the other sent, in the same order; a read on one is seen on the other;
/// a watch on one gets what the other sends next. The server's log shows both machines' addresses.
#[test]
fn two_machines_in_network_namespaces() {
    const TEST: &str = "two_machines_in_network_namespaces";
    const SENDS: usize = 15;
    let lan = match common::netns::Lan::create(&["db", "alpha", "beta"]) {
        Ok(lan) => lan,
        Err(why) => return common::netns::skip_or_fail(TEST, &why),
    };
    // Declared after the namespaces, so dropped (stopped) before them.
    let cluster = Cluster::start_in_netns(lan.name(0), common::netns::SERVICE_ADDR, true);
    let database = cluster.create_database();
    let home = || {
        let env = Env::new();
        let cache = env.dir.path().join("cache");
        env.with_cache(cache)
    };
    let alpha = Machine { env: home().env("PGPASSWORD", PASSWORD), lan: &lan, k: 1 };
    let beta = Machine { env: home(), lan: &lan, k: 2 };
    let pgpass = beta.env.dir.path().join(".pgpass");
    std::fs::write(&pgpass, format!("{}:{}:*:{}:{PASSWORD}\n", cluster.addr, cluster.port, common::postgres::USER)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ca = beta.env.dir.path().join("db-ca.pem");
    std::fs::copy(cluster.ca.as_ref().unwrap(), &ca).unwrap();

    let plain = cluster.url(&database, "disable");
    let run = alpha.run(&["storage", "switch", "postgres", "--url", &plain]);
    assert_eq!(run.code, 13, "the server takes TLS only: {run:?}");
    let urls = [cluster.url(&database, "require"), format!("{}&sslrootcert={}", cluster.url(&database, "verify-full"), ca.display())];
    for (machine, url) in [(&alpha, &urls[0]), (&beta, &urls[1])] {
        machine.run(&["storage", "switch", "postgres", "--url", url]).ok();
        let config = std::fs::read_to_string(machine.env.dir.path().join(".agents/agmsg/config.json")).unwrap();
        assert!(config.contains(url.as_str()) && !config.contains(PASSWORD), "{config}");
    }
    // Not reachable from the host's own network: the machines really go through their links.
    assert!(std::net::TcpStream::connect_timeout(&(cluster.addr, cluster.port).into(), Duration::from_millis(500)).is_err());

    // Both machines send at once.
    let script = format!(r#"for i in $(seq 1 {SENDS}); do "$0" storage send t "$1" bob "$1-$i" || exit 1; done"#);
    let senders: Vec<_> = [(&alpha, "alpha"), (&beta, "beta")]
        .map(|(machine, name)| {
            let mut cmd = machine.env.program("bash");
            cmd.args(["-c", &script, common::BIN, name]);
            machine.lan.inside(machine.k, &cmd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .into_iter()
        .collect();
    let mut sent = HashSet::new();
    for sender in senders {
        let out = sender.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        sent.extend(String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned));
    }
    assert_eq!(sent.len(), 2 * SENDS);

    // Each machine reads everything, in the same order.
    let from_alpha = alpha.run(&["storage", "list-unread", "t", "bob"]).ok().stdout.clone();
    let from_beta = beta.run(&["storage", "list-unread", "t", "bob"]).ok().stdout.clone();
    assert_eq!(from_alpha, from_beta);
    let listed: HashSet<String> =
        from_alpha.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(listed, sent);
    let watched = alpha.run(&["storage", "watch-after", "0", "t:bob"]).ok().json();
    assert_eq!(watched.len(), 2 * SENDS + 1, "every message, then the cursor");
    let tip = watched.last().unwrap()["cursor"].as_str().unwrap().to_owned();
    assert_eq!(tip, (2 * SENDS).to_string());

    // bob reads his inbox on beta; alpha sees them read.
    let inbox = beta.run(&["inbox", "t", "bob", "--json"]).ok().json();
    assert_eq!(inbox.len(), 2 * SENDS);
    assert_eq!(alpha.run(&["storage", "list-unread", "t", "bob"]).ok().stdout, "");

    // A watch on beta, from its tip, gets what alpha sends next.
    let tip = beta.run(&["storage", "watch-tip", "t:bob"]).ok().stdout.trim().to_owned();
    let next = alpha.run(&["storage", "send", "t", "alpha", "bob", "after the inbox"]).ok().stdout.trim().to_owned();
    let batch = beta.run(&["storage", "watch-after", &tip, "t:bob"]).ok().json();
    assert_eq!(batch.len(), 2, "{batch:?}");
    assert_eq!(batch[0]["id"], next.as_str());
    assert_eq!(batch[0]["body"], "after the inbox");

    // Who connected: both machines, from their own addresses, encrypted.
    let log = cluster.server_log();
    for k in [1, 2] {
        let from = format!("connection received: host={}", lan.machine_addr(k));
        assert!(log.contains(&from), "no connection from machine {k} ({from}) in the server's log:\n{log}");
    }
    assert!(log.contains("SSL enabled"), "{log}");
}
