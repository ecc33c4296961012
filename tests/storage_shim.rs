//! The bash bridge: agmsg's core sources the generated shim and calls `storage_*` functions; every one
//! must behave as agmsg's own driver functions do, under `set -euo pipefail`, with bodies of any size
//! and content arriving byte for byte.

mod common;

use common::Env;

/// Generate the shim for `driver` and run `script` in bash with it sourced, as agmsg's core would;
/// the script ends with `echo done`, and must get there (`set -e`) and print nothing else.
fn with_shim(env: &Env, driver: &str, script: &str) {
    let shim = env.dir.path().join(format!("host-{driver}.sh"));
    let run = env.run(&["--driver", driver, "shim", "storage", "--output", shim.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let mut cmd = env.program("bash");
    // agmsg selects the shim by its name; agmsg-host must not read this as its own driver.
    cmd.env("AGMSG_STORAGE_DRIVER", format!("host-{driver}"))
        .env("OUT", env.dir.path())
        .arg("-c")
        .arg(format!("set -euo pipefail\nsource {}\n{script}", shim.display()));
    let run: common::Run = cmd.output().unwrap().into();
    assert_eq!((run.code, run.stdout.as_str()), (0, "done\n"), "{driver}: {run:?}");
}

#[test]
fn agmsg_core_drives_the_component_through_the_shim() {
    for driver in ["sqlite", "jsonl"] {
        let env = Env::new();
        // Newlines, quotes, backslashes, a command substitution, a leading dash, UTF-8, and more than
        // the kernel's 128 KiB limit on one argv string.
        let mut body = String::from("-n line one\n\"two\" 'three' \\four $(rm -rf /) `x`\n— ünïcødé —\n");
        while body.len() < 3 << 20 {
            body.push_str("padding to several megabytes; ");
        }
        body.push_str("the end");
        std::fs::write(env.dir.path().join("body"), &body).unwrap();
        with_shim(
            &env,
            driver,
            r#"
            [ "$(storage_init t)" = ok ]
            storage_store_exists t
            storage_describe t | grep -q '^name='
            body=$(<"$OUT/body")
            id=$(storage_send t alice bob "$body")
            other=$(storage_send t carol bob "short")
            storage_list_unread t bob > "$OUT/unread.jsonl"
            storage_list_unread t bob --limit 1 | grep -c . > "$OUT/limited"
            tip=$(storage_watch_tip t:bob)
            [ "$(storage_mark_read_batch t bob "$id")" = ok ]
            storage_watch_after 0 t:bob > "$OUT/watch.jsonl"
            [ "$(storage_read_cursor_consume t bob "$tip" "$other")" = ok ]
            [ "$(storage_read_cursor_get t bob)" = "$tip" ]
            [ -z "$(storage_list_unread t bob)" ]
            storage_history t bob --limit 1 > "$OUT/history.jsonl"
            storage_export t "$OUT/export.jsonl"
            [ "$(storage_compact t)" = ok ]
            # Failures: exit code and stderr, never a status word from a record op.
            set +e
            storage_send 't:x' a b c > "$OUT/bad.out" 2>/dev/null; echo $? > "$OUT/bad.rc"
            storage_read_cursor_consume t bob "not a cursor" > "$OUT/badcursor.out" 2>/dev/null; echo $? > "$OUT/badcursor.rc"
            echo done
            "#,
        );
        let read = |f: &str| std::fs::read_to_string(env.dir.path().join(f)).unwrap();
        let unread: Vec<serde_json::Value> = read("unread.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(unread.len(), 2, "{driver}");
        assert_eq!(unread[0]["body"].as_str().unwrap(), body, "{driver}: the body arrived byte for byte");
        assert_eq!(read("limited"), "1\n");
        let watched: Vec<serde_json::Value> = read("watch.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(watched.len(), 2, "{driver}: the unread one, then the cursor: {watched:?}");
        assert_eq!(watched[0]["body"], "short");
        assert_eq!(watched[1]["type"], "cursor");
        assert!(read("history.jsonl").contains("\"body\":\"short\""));
        assert!(read("export.jsonl").lines().count() >= 4);
        assert_eq!((read("bad.rc").as_str(), read("bad.out").as_str()), ("13\n", ""), "{driver}");
        assert_eq!((read("badcursor.rc").as_str(), read("badcursor.out").as_str()), ("13\n", "runtime_error\n"), "{driver}");
    }
}

#[test]
fn shim_names_are_checked_and_the_driver_resolved_up_front() {
    let env = Env::new();
    let run = env.run(&["--driver", "nosuch", "shim", "storage"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("unknown storage driver 'nosuch'"), "{run:?}");
    // A malformed --name is a usage error (2), as clap's own argument errors, and nothing is printed.
    let run = env.run(&["shim", "storage", "--name", "bad name"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--name must match") && run.stdout.is_empty(), "{run:?}");
    let run = env.run(&["shim", "storage"]);
    assert!(run.stdout.contains("AGMSG_STORAGE_DRIVER=host-sqlite") && run.stdout.contains("storage_send()"), "{run:?}");
}

/// The messages of `team` in a `messages.db` (message_sent events), by body.
fn bodies_in(db: &std::path::Path, team: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT body FROM events WHERE type='message_sent' AND team=?1 ORDER BY seq").unwrap();
    stmt.query_map([team], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// Sourced by agmsg, the shim opens the store agmsg's own facade resolves (`agmsg_db_path <team>`,
/// its partition applied; `agmsg_storage_dir` for ops without a team), not `AGMSG_STORAGE_PATH`, and
/// agmsg-host does not apply the per-team partition a second time to agmsg's already-partitioned
/// directory. A team agmsg cannot resolve fails the op rather than landing in another store.
#[test]
fn sourced_by_agmsg_the_shim_opens_the_store_agmsgs_facade_resolves() {
    for driver in ["sqlite", "jsonl"] {
        let env = Env::new();
        // agmsg's team registry, where agmsg-host looks for partitions too: `solo` is per-team.
        let teams = env.dir.path().join("teams");
        std::fs::create_dir_all(teams.join("solo")).unwrap();
        std::fs::write(teams.join("solo/config.json"), r#"{"drivers":{"partition":"per-team"}}"#).unwrap();
        let env = env.env("AGMSG_TEAMS_DIR", teams.to_str().unwrap());
        // agmsg's store: its skill directory's db/, not AGMSG_STORAGE_PATH (env.store).
        let agmsg_db = env.dir.path().join("skill/db");
        with_shim(
            &env,
            driver,
            &format!(
                r#"
            # agmsg's facade (scripts/lib/storage.sh), as the core has it sourced before any driver.
            agmsg_storage_dir() {{ printf '%s\n' {dir}; }}
            agmsg_db_path() {{
                local team="${{1-}}"
                if [ -z "$team" ]; then echo "Error: agmsg_db_path requires a team selector" >&2; return 1; fi
                case "$team" in
                    solo) printf '%s/teams/%s/messages.db\n' "$(agmsg_storage_dir)" "$team" ;;
                    broken) echo "Error: no partition driver 'sideways' for team 'broken'" >&2; return 1 ;;
                    *) printf '%s/messages.db\n' "$(agmsg_storage_dir)" ;;
                esac
            }}
            [ "$(storage_check)" = ok ]
            [ "$(storage_init shared)" = ok ]
            storage_send shared alice bob "into agmsg's shared store" > /dev/null
            [ "$(storage_init solo)" = ok ]
            id=$(storage_send solo alice bob "into solo's own store")
            storage_store_exists solo
            storage_list_unread solo bob > "$OUT/solo.jsonl"
            storage_watch_after 0 solo:bob > "$OUT/solo-watch.jsonl"
            storage_describe solo > "$OUT/describe"
            [ "$(storage_mark_read_batch solo bob "$id")" = ok ]
            [ -z "$(storage_list_unread solo bob)" ]
            storage_export solo "$OUT/solo-export.jsonl"
            # agmsg cannot resolve the team's store: the op fails, never falls back to another store.
            set +e
            storage_init broken > "$OUT/broken-init.out" 2>/dev/null; echo $? > "$OUT/broken-init.rc"
            storage_send broken a b "lost?" > "$OUT/broken-send.out" 2>"$OUT/broken-send.err"; echo $? > "$OUT/broken-send.rc"
            echo done
            "#,
                dir = agmsg_db.display()
            ),
        );
        let read = |f: &str| std::fs::read_to_string(env.dir.path().join(f)).unwrap();
        let solo_dir = agmsg_db.join("teams/solo");
        assert!(!env.store.exists(), "{driver}: nothing in AGMSG_STORAGE_PATH, which agmsg's facade overrides");
        assert!(!solo_dir.join("teams").exists(), "{driver}: the partition is applied once, by agmsg");
        assert_eq!(read("solo.jsonl").lines().count(), 1, "{driver}");
        assert!(read("solo.jsonl").contains("into solo's own store"), "{driver}");
        assert!(read("solo-watch.jsonl").contains("into solo's own store"), "{driver}");
        assert!(read("solo-export.jsonl").contains("into solo's own store"), "{driver}");
        assert!(!read("solo-export.jsonl").contains("shared store"), "{driver}");
        assert_eq!((read("broken-init.rc").as_str(), read("broken-init.out").as_str()), ("13\n", "runtime_error\n"), "{driver}");
        assert_eq!((read("broken-send.rc").as_str(), read("broken-send.out").as_str()), ("13\n", ""), "{driver}");
        assert!(read("broken-send.err").contains("no partition driver"), "{driver}: agmsg's own message is shown");
        assert!(!agmsg_db.join("teams/broken").exists() && !env.store.exists(), "{driver}");
        match driver {
            "sqlite" => {
                assert_eq!(bodies_in(&agmsg_db.join("messages.db"), "shared"), ["into agmsg's shared store"]);
                assert!(bodies_in(&agmsg_db.join("messages.db"), "solo").is_empty());
                assert_eq!(bodies_in(&solo_dir.join("messages.db"), "solo"), ["into solo's own store"]);
                assert!(read("describe").contains(&format!("db={}", solo_dir.join("messages.db").display())), "{}", read("describe"));
            }
            _ => {
                let shared = std::fs::read_to_string(agmsg_db.join("events.jsonl")).unwrap();
                let solo = std::fs::read_to_string(solo_dir.join("events.jsonl")).unwrap();
                assert!(shared.contains("into agmsg's shared store") && !shared.contains("solo's own"), "{shared}");
                assert!(solo.contains("into solo's own store") && !solo.contains("shared store"), "{solo}");
            }
        }
    }
}

/// agmsg re-checks its own cursor-migration marker (`storage_metadata.read_cursor_v1`) at every
/// `storage_init` and re-runs the migration when it is gone; so does the component, even on a store
/// that carries its own schema marker: the backlog (agmsg's legacy rows, and sends made before)
/// counts as consumed again, and the marker is back.
#[test]
fn init_reruns_the_cursor_migration_when_agmsgs_marker_is_gone() {
    let env = Env::new();
    with_shim(&env, "sqlite", "[ \"$(storage_init t)\" = ok ]\nstorage_send t alice carol 'sent before' > /dev/null\necho done");
    let db = rusqlite::Connection::open(env.db()).unwrap();
    let marker = |db: &rusqlite::Connection| -> Option<String> {
        use rusqlite::OptionalExtension;
        db.query_row("SELECT value FROM storage_metadata WHERE key='read_cursor_v1'", [], |r| r.get(0)).optional().unwrap()
    };
    assert_eq!(marker(&db).as_deref(), Some("1"));
    let ours: String = db.query_row("SELECT value FROM storage_metadata WHERE key='agmsg_host_schema'", [], |r| r.get(0)).unwrap();
    assert_eq!(ours, "2", "the component's own marker is there (revision 2: message_receipts)");
    // agmsg's marker goes (as with agmsg's own sqlite3), and a backlog arrives the legacy way: a row
    // of the legacy table only, never read.
    db.execute_batch(
        "DELETE FROM storage_metadata WHERE key='read_cursor_v1';
         INSERT INTO messages(team, from_agent, to_agent, body, created_at) VALUES('t', 'old', 'bob', 'legacy backlog', '2026-01-01T00:00:00Z');",
    )
    .unwrap();
    let legacy_id: i64 = db.query_row("SELECT id FROM messages WHERE body='legacy backlog'", [], |r| r.get(0)).unwrap();
    drop(db);

    with_shim(
        &env,
        "sqlite",
        r#"
        [ "$(storage_init t)" = ok ]
        storage_list_unread t bob > "$OUT/bob.jsonl"
        storage_list_unread t carol > "$OUT/carol.jsonl"
        storage_watch_tip t:carol > "$OUT/tip"
        storage_read_cursor_get t carol > "$OUT/carol-cursor"
        echo done
        "#,
    );
    let read = |f: &str| std::fs::read_to_string(env.dir.path().join(f)).unwrap();
    let db = rusqlite::Connection::open(env.db()).unwrap();
    assert_eq!(marker(&db).as_deref(), Some("1"), "init puts agmsg's marker back");
    assert_eq!(read("bob.jsonl"), "", "the legacy backlog counts as consumed");
    assert_eq!(read("carol.jsonl"), "", "so does what was sent before");
    assert_eq!(read("carol-cursor"), read("tip"), "the recipient's frontier is at the high-water");
    let exact: i64 = db
        .query_row(
            "SELECT count(*) FROM events WHERE type='message_read' AND team='t' AND agent='bob' AND msg_id=?1 AND id=?2",
            rusqlite::params![legacy_id.to_string(), format!("read-cursor-v1:t:bob:{legacy_id}")],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(exact, 1, "the legacy row has agmsg's exact read marker");
    let read_at: Option<String> = db.query_row("SELECT read_at FROM messages WHERE id=?1", [legacy_id], |r| r.get(0)).unwrap();
    assert_eq!(read_at, None, "the legacy row itself is not mutated");
    drop(db);

    // Once: with the marker back, init is the fast path again, and new mail is delivered.
    with_shim(
        &env,
        "sqlite",
        r#"
        [ "$(storage_init t)" = ok ]
        storage_send t dave bob 'after' > /dev/null
        storage_list_unread t bob > "$OUT/bob.jsonl"
        echo done
        "#,
    );
    let unread: Vec<serde_json::Value> = read("bob.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0]["body"], "after");
    let db = rusqlite::Connection::open(env.db()).unwrap();
    let markers: i64 = db.query_row("SELECT count(*) FROM events WHERE id LIKE 'read-cursor-v1:%'", [], |r| r.get(0)).unwrap();
    assert_eq!(markers, 1, "the migration ran once more, not at every op");
}
