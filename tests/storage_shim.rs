//! The bash bridge: agmsg's core sources the generated shim and calls `storage_*` functions; every one
//! must behave as agmsg's own driver functions do, under `set -euo pipefail`, with bodies of any size
//! and content arriving byte for byte.

mod common;

use common::Env;

/// Generate the shim for `driver` and run `script` in bash with it sourced, as agmsg's core would.
fn with_shim(env: &Env, driver: &str, script: &str) -> common::Run {
    let shim = env.dir.path().join(format!("host-{driver}.sh"));
    let run = env.run(&["--driver", driver, "shim", "storage", "--output", shim.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let mut cmd = env.program("bash");
    // agmsg selects the shim by its name; agmsg-host must not read this as its own driver.
    cmd.env("AGMSG_STORAGE_DRIVER", format!("host-{driver}"))
        .env("OUT", env.dir.path())
        .arg("-c")
        .arg(format!("set -euo pipefail\nsource {}\n{script}", shim.display()));
    cmd.output().unwrap().into()
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
        let run = with_shim(
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
        assert_eq!((run.code, run.stdout.as_str()), (0, "done\n"), "{driver}: {run:?}");
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
    let run = env.run(&["shim", "storage", "--name", "bad name"]);
    assert_eq!(run.code, 13, "{run:?}");
    let run = env.run(&["shim", "storage"]);
    assert!(run.stdout.contains("AGMSG_STORAGE_DRIVER=host-sqlite") && run.stdout.contains("storage_send()"), "{run:?}");
}
