//! Every storage op through the built `agmsg-host` and the bundled sqlite component: argv, framing and
//! exit codes as agmsg's bash driver has them, on a real messages.db.

mod common;

use common::Env;
use rusqlite::Connection;

fn uuid7_shape(id: &str) -> bool {
    id.len() == 36 && &id[14..15] == "7" && matches!(&id[19..20], "8" | "9" | "a" | "b")
}

#[test]
fn check_and_describe() {
    let env = Env::new();
    let run = env.storage(&["check"]);
    assert_eq!((run.code, run.lines()), (0, vec!["ok"]));
    assert!(!env.store.exists(), "check must not create the store");

    let run = env.storage(&["describe"]);
    run.ok();
    let lines = run.lines();
    assert_eq!(lines[0], "name=sqlite");
    assert!(lines[1].starts_with("backend=SQLite"));
    assert!(lines[2].starts_with("capabilities="));
    assert_eq!(lines.len(), 3, "no db= line without a team");

    let run = env.storage(&["describe", "t"]);
    assert_eq!(run.lines()[3], format!("db={}", env.db().display()));
    // `storage` alone describes the active driver.
    assert_eq!(env.run(&["storage"]).lines()[0], "name=sqlite");
}

/// Issue 27: as agmsg's `[ -f messages.db ]`: a damaged store, or one holding only agmsg's legacy
/// `messages` table, exists (0), so the op that follows reports or migrates it; before, they answered
/// 12 and 1, and agmsg's check-inbox skipped the team silently.
#[test]
fn store_exists_is_the_files_presence_as_agmsgs() {
    let env = Env::new();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(env.db(), b"this is not a database, it is damaged").unwrap();
    assert_eq!(env.storage(&["store-exists", "t"]).code, 0);
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).code, 12, "the op after it says what is wrong");
    std::fs::remove_file(env.db()).unwrap();
    let legacy = Connection::open(env.db()).unwrap();
    legacy.execute_batch("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, team TEXT, from_agent TEXT, to_agent TEXT, body TEXT, created_at TEXT, read_at TEXT);").unwrap();
    drop(legacy);
    assert_eq!(env.storage(&["store-exists", "t"]).code, 0);
}

#[test]
fn init_and_store_exists() {
    let env = Env::new();
    assert_eq!(env.storage(&["store-exists"]).code, 1);
    assert!(!env.store.exists(), "store-exists must not create a store");
    let run = env.storage(&["init"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"));
    assert_eq!(env.storage(&["store-exists"]).code, 0);
    // agmsg's team-first shape.
    assert_eq!(env.storage(&["init", "t"]).stdout, "ok\n");
    assert_eq!(env.storage(&["store_exists", "t"]).code, 0);
    // The schema is agmsg's. A new store starts in rollback-journal mode (agmsg's own init switches it
    // to WAL, which the component handles as well: see agmsg_made_store_keeps_working).
    let db = Connection::open(env.db()).unwrap();
    let mode: String = db.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "delete");
    for table in ["events", "read_cursors", "storage_metadata", "messages"] {
        let n: i64 = db.query_row("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?1", [table], |r| r.get(0)).unwrap();
        assert_eq!(n, 1, "{table}");
    }
}

#[test]
fn send_then_list_unread() {
    let env = Env::new();
    let first = env.send("t", "alice", "bob", "hi");
    assert!(uuid7_shape(&first), "{first}");
    let second = env.send("t", "carol", "bob", "second");
    env.send("t", "bob", "alice", "not for bob");

    let run = env.storage(&["list-unread", "t", "bob"]);
    run.ok();
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let records = run.json();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["id"], first.as_str());
    assert_eq!(records[1]["id"], second.as_str());
    // Exact key order and values.
    let line = run.lines()[0];
    let keys: Vec<&str> = ["type", "id", "team", "from", "to", "body", "at"].to_vec();
    let positions: Vec<usize> = keys.iter().map(|k| line.find(&format!("\"{k}\":")).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "key order: {line}");
    assert_eq!(records[0]["type"], "message_sent");
    assert_eq!(records[0]["from"], "alice");
    assert_eq!(records[0]["body"], "hi");
    let at = records[0]["at"].as_str().unwrap();
    assert!(at.len() == 20 && at.ends_with('Z') && &at[10..11] == "T", "{at}");

    // --limit keeps the oldest N; snake_case op names work too.
    let limited = env.storage(&["list_unread", "t", "bob", "--limit", "1"]).json();
    assert_eq!(limited.len(), 1);
    assert_eq!(limited[0]["id"], first.as_str());
    assert_eq!(env.storage(&["list-unread", "t", "bob", "--limit=0"]).stdout, "");

    // Sends are dual-written to the legacy table, linked from the event.
    let db = Connection::open(env.db()).unwrap();
    let linked: i64 = db
        .query_row("SELECT count(*) FROM messages m JOIN events e ON e.legacy_id = m.id WHERE e.id = ?1 AND m.body='hi'", [&first], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(linked, 1);
}

#[test]
fn bodies_round_trip_byte_for_byte() {
    let env = Env::new();
    let bodies = ["--leading-dashes", "trailing newline\n", "crlf\r\n", "tab\there", "quote \" and backslash \\", "日本語 ✓", "", "\n\n"];
    for body in bodies {
        env.send("t", "a", "b", body);
    }
    let got: Vec<String> = env.storage(&["list-unread", "t", "b"]).json().iter().map(|r| r["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(got, bodies);

    // A 2 MiB body through stdin (over the argv limit).
    let big = "x".repeat(2 << 20) + "\r\nend\n";
    let run = env.run_stdin(&["storage", "send", "--body-stdin", "t", "a", "big"], big.as_bytes());
    run.ok();
    let got = env.storage(&["list-unread", "t", "big"]).json();
    assert_eq!(got[0]["body"].as_str().unwrap(), big);
}

#[test]
fn bad_names_are_refused_in_every_position() {
    let env = Env::new();
    for bad in ["", "a:b", "a/b", "a\\b", "..", "x\ny"] {
        for args in [["send", bad, "a", "b", "hi"], ["send", "t", bad, "b", "hi"], ["send", "t", "a", bad, "hi"]] {
            let run = env.storage(&args);
            assert_eq!(run.code, 13, "{args:?}: {run:?}");
            assert!(run.stdout.is_empty(), "record ops print no status word: {run:?}");
            assert!(run.stderr.contains("invalid"), "{run:?}");
        }
        let run = env.storage(&["list-unread", "t", bad]);
        assert_eq!(run.code, 13, "{run:?}");
    }
    assert!(!env.dir.path().join("a").exists());
}

#[test]
fn usage_errors() {
    let env = Env::new();
    for args in [
        vec!["send", "t", "a"],
        vec!["list-unread", "t", "b", "--bogus"],
        vec!["list-unread", "t", "b", "--limit", "x"],
        vec!["frobnicate"],
    ] {
        let run = env.storage(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains("agmsg-host storage"), "{run:?}");
    }
}

#[test]
fn global_options_before_and_after_the_subcommand() {
    let env = Env::new();
    let other = env.dir.path().join("other");
    let other = other.to_str().unwrap();
    env.run(&["--store", other, "--driver", "sqlite", "storage", "send", "t", "a", "b", "one"]).ok();
    env.run(&["storage", "--store", other, "send", "t", "a", "b", "two"]).ok();
    let run = env.run(&["storage", "--store", other, "--driver=sqlite", "list-unread", "t", "b"]);
    assert_eq!(run.json().len(), 2);
    assert!(!env.store.exists());
    let run = env.run(&["--driver", "nope", "storage", "check"]);
    assert_eq!(run.code, 13);
    assert!(run.stderr.contains("unknown storage driver 'nope'"), "{run:?}");
}

#[test]
fn driver_from_environment_and_config() {
    let env = Env::new().env("AGMSG_STORAGE_DRIVER", "nope");
    assert!(env.storage(&["check"]).stderr.contains("'nope'"));
    let env = Env::new();
    let config = env.dir.path().join("config.json");
    std::fs::write(&config, r#"{"storage":"elsewhere","delivery":{"codex":"turn"}}"#).unwrap();
    let env = env.env("AGMSG_CONFIG", config.to_str().unwrap());
    assert!(env.storage(&["check"]).stderr.contains("'elsewhere'"));
}

/// A messages.db made the way agmsg's bash driver makes it (WAL, its schema, a legacy row, the cursor
/// migration done) opens and keeps working through the component.
#[test]
fn agmsg_made_store_keeps_working() {
    let env = Env::new();
    let db = agmsg_made_store(&env);
    db.execute_batch(
        "INSERT INTO storage_metadata VALUES('read_cursor_v1', '1');
         -- a legacy row from before the event log
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'old', 'bob', 'legacy hello', '2026-01-01T00:00:00Z');
         -- a message agmsg's bash driver sent (dual-written and linked)
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'alice', 'bob', 'bash hello', '2026-02-01T00:00:00Z');
         INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id)
           VALUES('message_sent', '01920000-0000-7000-8000-000000000001', 't', 'alice', 'bob', 'bash hello', '2026-02-01T00:00:00Z', 2);",
    )
    .unwrap();
    drop(db);

    let id = env.send("t", "carol", "bob", "component hello");
    let unread = env.storage(&["list-unread", "t", "bob"]).json();
    let bodies: Vec<&str> = unread.iter().map(|r| r["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["legacy hello", "bash hello", "component hello"]);
    assert_eq!(unread[0]["id"], "1", "legacy ids are decimal strings");
    assert_eq!(unread[1]["id"], "01920000-0000-7000-8000-000000000001");
    assert_eq!(unread[2]["id"], id.as_str());

    // Native SQLite still reads it, and the new row is in the legacy table for outside readers.
    let db = Connection::open(env.db()).unwrap();
    let ok: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let mode: String = db.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let legacy: i64 = db.query_row("SELECT count(*) FROM messages WHERE body='component hello'", [], |r| r.get(0)).unwrap();
    assert_eq!(legacy, 1);
    let version: i64 = db.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 2, "agmsg's schema revision is left alone");
}

#[test]
fn broken_store_fails_loudly() {
    let env = Env::new();
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(env.db(), vec![b'z'; 8192]).unwrap();
    let run = env.storage(&["send", "t", "a", "b", "hi"]);
    assert_eq!(run.code, 12, "{run:?}");
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("not a usable SQLite database"), "{run:?}");
    let run = env.storage(&["list-unread", "t", "b"]);
    assert_eq!((run.code, run.stdout.as_str()), (12, ""));
    let run = env.storage(&["watch-tip", "t:b"]);
    assert_eq!((run.code, run.stdout.as_str()), (12, ""), "never a tip of 0");
    let run = env.storage(&["init"]);
    assert_eq!((run.code, run.stdout.as_str()), (12, "corrupt_state\n"));
    assert_eq!(std::fs::read(env.db()).unwrap(), vec![b'z'; 8192], "the file is left as it was");
}

#[test]
fn per_team_partition() {
    let env = Env::new();
    let teams = env.dir.path().join("teams");
    std::fs::create_dir_all(teams.join("solo")).unwrap();
    std::fs::write(teams.join("solo/config.json"), r#"{"drivers":{"partition":"per-team"}}"#).unwrap();
    std::fs::create_dir_all(teams.join("odd")).unwrap();
    std::fs::write(teams.join("odd/config.json"), r#"{"drivers":{"partition":"sideways"}}"#).unwrap();
    let env = env.env("AGMSG_TEAMS_DIR", teams.to_str().unwrap());

    env.send("solo", "a", "b", "in the team's own store");
    env.send("shared", "a", "b", "in the shared store");
    assert!(env.store.join("teams/solo/messages.db").is_file());
    assert_eq!(env.storage(&["list-unread", "solo", "b"]).json().len(), 1);
    assert_eq!(env.storage(&["list-unread", "shared", "b"]).json().len(), 1);
    let shared = Connection::open(env.db()).unwrap();
    let n: i64 = shared.query_row("SELECT count(*) FROM events WHERE team='solo'", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0);
    let run = env.storage(&["describe", "solo"]);
    assert!(run.stdout.contains(&format!("db={}", env.store.join("teams/solo/messages.db").display())), "{run:?}");
    assert_eq!(env.storage(&["watch-tip", "solo:b"]).stdout.trim(), env.storage(&["watch-tip", "solo:b"]).stdout.trim());
    let run = env.storage(&["send", "odd", "a", "b", "x"]);
    assert_eq!(run.code, 13);
    assert!(run.stderr.contains("unknown partition 'sideways'"), "{run:?}");
}

/// A messages.db with agmsg's bash-driver schema, in WAL mode, as agmsg creates it.
fn agmsg_made_store(env: &Env) -> Connection {
    std::fs::create_dir_all(&env.store).unwrap();
    let db = Connection::open(env.db()).unwrap();
    db.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).unwrap();
    db.execute_batch(include_str!("fixtures/agmsg-bash-schema.sql")).unwrap();
    db
}

/// The one-time cursor migration: a store that predates the cursor has its backlog treated as consumed
/// (no replay storm); what arrives afterwards is delivered.
#[test]
fn cursor_migration_consumes_the_backlog_once() {
    let env = Env::new();
    let db = agmsg_made_store(&env);
    db.execute_batch(
        "INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'old', 'bob', 'legacy backlog', '2026-01-01T00:00:00Z');
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'alice', 'bob', 'event backlog', '2026-02-01T00:00:00Z');
         INSERT INTO events(type, id, team, from_agent, to_agent, body, at, legacy_id)
           VALUES('message_sent', '01920000-0000-7000-8000-000000000009', 't', 'alice', 'bob', 'event backlog', '2026-02-01T00:00:00Z', 2);",
    )
    .unwrap();
    drop(db);
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).stdout, "", "backlog counts as consumed");
    let tip = env.storage(&["watch-tip", "t:bob"]).stdout;
    assert_eq!(env.storage(&["read-cursor-get", "t", "bob"]).stdout, tip);
    let new = env.send("t", "carol", "bob", "after the migration");
    let unread = env.storage(&["list-unread", "t", "bob"]).json();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0]["id"], new.as_str());
    // The legacy row itself is not mutated, and the migration ran once.
    let db = Connection::open(env.db()).unwrap();
    let read_at: Option<String> = db.query_row("SELECT read_at FROM messages WHERE id=1", [], |r| r.get(0)).unwrap();
    assert_eq!(read_at, None);
    let markers: i64 = db.query_row("SELECT count(*) FROM events WHERE id LIKE 'read-cursor-v1:%'", [], |r| r.get(0)).unwrap();
    assert_eq!(markers, 1);
}

/// A fresh store starts at zero; legacy rows appear in unread and history, and marking a legacy id read
/// hides it without mutating the row.
#[test]
fn legacy_rows_read_and_marked() {
    assert_eq!(Env::new().storage(&["read-cursor-get", "t", "bob"]).stdout, "0\n", "a fresh store starts at zero");
    let env = Env::new();
    let db = agmsg_made_store(&env);
    db.execute_batch(
        "INSERT INTO storage_metadata VALUES('read_cursor_v1', '1');
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'old', 'bob', 'legacy one', '2026-01-01T00:00:00Z');
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'old', 'carol', 'legacy two', '2026-01-02T00:00:00Z');",
    )
    .unwrap();
    drop(db);
    let history = env.storage(&["history", "t"]).json();
    assert_eq!(history.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(), ["1", "2"]);
    assert_eq!(env.storage(&["history", "t", "carol"]).json().len(), 1);
    let unread = env.storage(&["list-unread", "t", "bob"]).json();
    assert_eq!(unread[0]["body"], "legacy one");
    env.storage(&["mark-read-batch", "t", "bob", "1"]).ok();
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).stdout, "");
    assert_eq!(env.storage(&["list-unread", "t", "carol"]).json().len(), 1, "recipient-scoped");
    let db = Connection::open(env.db()).unwrap();
    let read_at: Option<String> = db.query_row("SELECT read_at FROM messages WHERE id=1", [], |r| r.get(0)).unwrap();
    assert_eq!(read_at, None, "a pure legacy row is never mutated");
    // A legacy row written later by an outside tool is found too.
    db.execute("INSERT INTO messages(team, from_agent, to_agent, body) VALUES('t', 'tool', 'bob', 'written by sqlite3')", []).unwrap();
    drop(db);
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json()[0]["body"], "written by sqlite3");
    env.send("t", "a", "bob", "and a new one");
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).json().len(), 2);
}

/// `storage --help` and `terminal --help` at 80 and 100 columns: clap wraps help at the terminal's
/// width, so every line of their op tables must already fit, or it is broken mid-table (before, an
/// op's description continued at column 0, under the op names). Each line of the text is printed as
/// it is, and none is longer than 79 columns.
#[test]
fn storage_and_terminal_help_fit_80_and_100_columns() {
    let env = Env::new();
    for command in ["storage", "terminal"] {
        let wide = env.cmd().env("COLUMNS", "400").args([command, "--help"]).output().unwrap();
        let wide = String::from_utf8(wide.stdout).unwrap();
        let table: Vec<&str> = wide.lines().take_while(|l| !l.starts_with("Usage: ")).collect();
        assert!(table.len() > 20, "{command}: {wide}");
        for line in &table {
            assert!(line.chars().count() <= 79, "{command}: a line of {} columns: {line:?}", line.chars().count());
        }
        for columns in ["80", "100"] {
            let run = env.cmd().env("COLUMNS", columns).args([command, "--help"]).output().unwrap();
            let text = String::from_utf8(run.stdout).unwrap();
            let got: Vec<&str> = text.lines().take(table.len()).collect();
            assert_eq!(got, table, "{command} --help at {columns} columns is re-wrapped");
        }
    }
}
