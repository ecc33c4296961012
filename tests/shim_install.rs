//! `agmsg-host shim install | uninstall` on a real copy of agmsg 1.2.1's `scripts/` (copied at run time
//! by `tests/common/reference.rs`; never committed here): every
//! shim where agmsg's loaders look, agmsg's own storage facade sourcing the storage shim, idempotence,
//! and uninstall giving agmsg's tree back byte for byte (modes too); links refused with nothing changed.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{Env, Run};

/// Every entry below `root`, by relative path: a file's bytes and mode, a directory's mode, a link's
/// target.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    File(Vec<u8>, u32),
    Dir(u32),
    Link(PathBuf),
}

fn snapshot(root: &Path) -> BTreeMap<String, Node> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Node>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                out.insert(rel, Node::Link(std::fs::read_link(&path).unwrap()));
            } else if meta.is_dir() {
                out.insert(rel, Node::Dir(mode));
                walk(root, &path, out);
            } else {
                out.insert(rel, Node::File(std::fs::read(&path).unwrap(), mode));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The paths where two snapshots differ, each with what is there on either side (a file's size and
/// mode, not its bytes), so a failure says which file changed.
#[track_caller]
fn assert_same_tree(got: &BTreeMap<String, Node>, want: &BTreeMap<String, Node>, what: &str) {
    let show = |n: Option<&Node>| match n {
        None => "absent".to_owned(),
        Some(Node::File(bytes, mode)) => format!("file of {} bytes, mode {mode:o}", bytes.len()),
        Some(Node::Dir(mode)) => format!("directory, mode {mode:o}"),
        Some(Node::Link(target)) => format!("link to {}", target.display()),
    };
    let differ: Vec<String> = got
        .keys()
        .chain(want.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| got.get(*k) != want.get(*k))
        .map(|k| format!("{k}: {} (want {})", show(got.get(k)), show(want.get(k))))
        .collect();
    assert!(differ.is_empty(), "{what}:\n{}", differ.join("\n"));
}

fn shim(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["shim"];
    all.extend_from_slice(args);
    env.run(&all)
}

/// `shim <install|uninstall> <dir> [flags] --json`: its items as (path, action).
#[track_caller]
fn items(env: &Env, args: &[&str]) -> Vec<(String, String)> {
    let mut all = args.to_vec();
    all.push("--json");
    let run = shim(env, &all);
    assert_eq!(run.code, 0, "{run:?}");
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    assert_eq!(out["ok"], true, "{out}");
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["path"].as_str().unwrap().to_owned(), i["action"].as_str().unwrap().to_owned()))
        .collect()
}

fn action_of<'a>(items: &'a [(String, String)], path: &str) -> &'a str {
    items.iter().find(|(p, _)| p == path).map_or("(none)", |(_, a)| a.as_str())
}

/// `script` in bash with agmsg's directory as the working directory.
fn bash(env: &Env, dir: &Path, script: &str) -> Run {
    let mut cmd = env.program("bash");
    cmd.current_dir(dir).arg("-c").arg(format!("set -euo pipefail\n{script}"));
    cmd.output().unwrap().into()
}

/// agmsg 1.2.1's `scripts/` copied below `<env>/agmsg` (which it returns), by `common::reference`;
/// `None` (skipped, saying so) without agmsg.
fn agmsg_scripts(env: &Env) -> Option<PathBuf> {
    common::reference::scripts(env, &[])
}

/// A stand-in for an agmsg install, written here, for the tests that need no agmsg script to run (so
/// they run everywhere): the two files that make a directory one (`scripts/lib/storage.sh`,
/// `scripts/drivers/`), a storage driver file, and the cursor type's directory with a `type.conf` (the
/// bundled one agmsg-host ships) and a `_delivery.sh`.
fn minimal_agmsg(env: &Env) -> PathBuf {
    let dir = env.dir.path().join("agmsg");
    let files: [(&str, &[u8]); 5] = [
        ("scripts/lib/storage.sh", b"# a stand-in for agmsg's storage facade\n"),
        ("scripts/drivers/storage/sqlite.sh", b"# a stand-in for agmsg's sqlite driver\n"),
        ("scripts/drivers/storage/jsonl.sh", b"# a stand-in for agmsg's jsonl driver\n"),
        ("scripts/drivers/types/cursor/type.conf", include_bytes!("../host/src/agent/types/cursor/type.conf")),
        ("scripts/drivers/types/cursor/_delivery.sh", b"# a stand-in for agmsg's cursor delivery\n"),
    ];
    for (path, bytes) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// agmsg 1.2.1's types (each has a directory in its tree) and agmsg-host's bundled terminal drivers.
const TYPES: &[&str] =
    &["agmsg-app", "antigravity", "claude-code", "codex", "copilot", "cursor", "gemini", "grok-build", "hermes", "opencode"];
const TERMINALS: &[&str] = &["herdr", "orca", "plain", "tmux"];

#[test]
fn install_puts_every_shim_where_agmsg_looks_and_uninstall_gives_agmsg_back_byte_for_byte() {
    let env = Env::new();
    let Some(agmsg) = agmsg_scripts(&env) else { return };
    let dir = agmsg.to_str().unwrap();
    let original = snapshot(&agmsg);

    // --dry-run: the plan, and nothing changed.
    let planned = items(&env, &["install", dir, "--dry-run"]);
    assert_eq!(action_of(&planned, "scripts/drivers/storage/sqlite.sh"), "replace");
    assert_eq!(action_of(&planned, "scripts/drivers/terminals/"), "create");
    assert_eq!(action_of(&planned, "scripts/drivers/terminals/tmux/ops.sh"), "add");
    assert_same_tree(&snapshot(&agmsg), &original, "a dry run changes nothing");
    let text = shim(&env, &["install", dir, "--dry-run"]);
    assert!(text.code == 0 && text.stdout.contains("dry run") && text.stdout.contains("scripts/drivers/storage/jsonl.sh"), "{text:?}");

    let done = items(&env, &["install", dir]);
    assert_eq!(
        done.iter().map(|(p, a)| (p.as_str(), a.as_str())).collect::<Vec<_>>(),
        planned.iter().map(|(p, a)| (p.as_str(), a.as_str())).collect::<Vec<_>>(),
        "install did what the dry run said"
    );
    // Every storage driver agmsg-host runs by name: its bundled ones here (no plugin installed).
    let mut shims = vec![
        "scripts/drivers/storage/sqlite.sh".to_owned(),
        "scripts/drivers/storage/jsonl.sh".to_owned(),
        "scripts/drivers/storage/postgres.sh".to_owned(),
    ];
    for t in TYPES {
        shims.push(format!("scripts/drivers/types/{t}/_delivery.sh"));
    }
    for t in TERMINALS {
        shims.push(format!("scripts/drivers/terminals/{t}/ops.sh"));
        shims.push(format!("scripts/drivers/terminals/{t}/terminal.conf"));
    }
    for path in &shims {
        let text = std::fs::read_to_string(agmsg.join(path)).unwrap();
        assert!(text.contains("agmsg-host"), "{path} is a shim");
        if path.ends_with(".sh") {
            let parsed = bash(&env, &agmsg, &format!("bash -n {path}"));
            assert_eq!(parsed.code, 0, "{path}: {parsed:?}");
        }
    }
    // Where agmsg had a file, the shim keeps its mode.
    for path in ["scripts/drivers/storage/sqlite.sh", "scripts/drivers/types/codex/_delivery.sh"] {
        let Node::File(_, mode) = &original[path] else { panic!("{path}") };
        assert_eq!(std::fs::metadata(agmsg.join(path)).unwrap().permissions().mode() & 0o7777, *mode, "{path}");
    }

    // agmsg's own storage facade loads the shim by name and the op runs in agmsg-host's component,
    // on the store agmsg resolves.
    for driver in ["sqlite", "jsonl"] {
        let store = env.dir.path().join(format!("store-{driver}"));
        let run = bash(
            &env,
            &agmsg,
            &format!(
                "export AGMSG_STORAGE_DRIVER={driver} AGMSG_STORAGE_PATH={store}\n\
                 source scripts/lib/storage.sh\n\
                 agmsg_storage_load\n\
                 [ \"$_agmsg_host_storage_driver\" = {driver} ]\n\
                 [ \"$(storage_init t)\" = ok ]\n\
                 storage_send t alice bob \"it's \\$(not run) \\`x\\`\" >/dev/null\n\
                 storage_list_unread t bob",
                store = store.display()
            ),
        );
        assert_eq!(run.code, 0, "{driver}: {run:?}");
        let unread = run.json();
        assert_eq!(unread.len(), 1, "{driver}: {run:?}");
        assert_eq!(unread[0]["body"], "it's $(not run) `x`");
        // agmsg-host reads the same store as agmsg-host itself would.
        let own = env.run(&["--driver", driver, "--store", store.to_str().unwrap(), "storage", "list-unread", "t", "bob"]);
        assert_eq!(own.stdout, run.stdout, "{driver}");
    }
    // One shell may source the storage driver, a type's _delivery.sh and a terminal's ops.sh (they
    // share the _agmsg_host_ prefix): each keeps working, whatever was sourced after it.
    let store = env.dir.path().join("store-sqlite");
    let run = bash(
        &env,
        &agmsg,
        &format!(
            "export AGMSG_STORAGE_DRIVER=sqlite AGMSG_STORAGE_PATH={store}\n\
             source scripts/lib/storage.sh\n\
             agmsg_storage_load\n\
             source scripts/drivers/types/cursor/_delivery.sh\n\
             source scripts/drivers/terminals/plain/ops.sh\n\
             storage_list_unread t bob | wc -l\n\
             terminal_detect s",
            store = store.display()
        ),
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "1\n-\n"), "{run:?}");
    // A type's _delivery.sh defines agmsg's delivery functions; a terminal's ops.sh answers.
    let run = bash(
        &env,
        &agmsg,
        "source scripts/drivers/types/cursor/_delivery.sh\ndeclare -F agmsg_delivery_apply agmsg_delivery_status >/dev/null\nsource scripts/drivers/terminals/plain/ops.sh\nterminal_detect s",
    );
    assert_eq!((run.code, run.stdout.as_str()), (0, "-\n"), "{run:?}");

    // Again: nothing to do, nothing changed.
    let installed = snapshot(&agmsg);
    let again = items(&env, &["install", dir]);
    assert!(again.iter().all(|(_, a)| a == "unchanged"), "{again:?}");
    assert_same_tree(&snapshot(&agmsg), &installed, "agmsg's tree changed");

    // Uninstall: dry run changes nothing; then agmsg's tree exactly as it was.
    let planned = items(&env, &["uninstall", dir, "--dry-run"]);
    assert_eq!(action_of(&planned, "scripts/drivers/storage/sqlite.sh"), "restore");
    assert_eq!(action_of(&planned, "scripts/drivers/types/agmsg-app/_delivery.sh"), "remove");
    assert_same_tree(&snapshot(&agmsg), &installed, "agmsg's tree changed");
    let undone = items(&env, &["uninstall", dir]);
    assert_eq!(action_of(&undone, "agmsg-host-shims/"), "remove", "{undone:?}");
    assert_same_tree(
        &snapshot(&agmsg),
        &original,
        "uninstall restores agmsg's files byte for byte, modes too, and removes what install added",
    );
    // And again: nothing to undo.
    assert_eq!(items(&env, &["uninstall", dir]), [("agmsg-host-shims/".to_owned(), "nothing".to_owned())]);
    assert_same_tree(&snapshot(&agmsg), &original, "agmsg's tree changed");
}

#[test]
fn a_file_agmsg_replaced_after_install_is_agmsgs_from_then_on() {
    let env = Env::new();
    let Some(agmsg) = agmsg_scripts(&env) else { return };
    let dir = agmsg.to_str().unwrap();
    items(&env, &["install", dir]);
    // An agmsg update puts its own jsonl.sh back over the shim: install again keeps that one instead.
    let jsonl = agmsg.join("scripts/drivers/storage/jsonl.sh");
    std::fs::write(&jsonl, "# agmsg's newer jsonl driver\n").unwrap();
    let again = items(&env, &["install", dir]);
    assert_eq!(action_of(&again, "scripts/drivers/storage/jsonl.sh"), "replace");
    // Someone edits the sqlite shim: uninstall leaves their file.
    let sqlite = agmsg.join("scripts/drivers/storage/sqlite.sh");
    std::fs::write(&sqlite, "# edited by hand\n").unwrap();
    let undone = items(&env, &["uninstall", dir]);
    assert_eq!(action_of(&undone, "scripts/drivers/storage/sqlite.sh"), "leave");
    assert_eq!(action_of(&undone, "scripts/drivers/storage/jsonl.sh"), "restore");
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "# agmsg's newer jsonl driver\n");
    assert_eq!(std::fs::read_to_string(&sqlite).unwrap(), "# edited by hand\n");
    assert!(!agmsg.join("agmsg-host-shims").exists());
    assert!(!agmsg.join("scripts/drivers/terminals").exists());
}

#[test]
fn links_below_agmsgs_directory_are_refused_and_nothing_changes() {
    let env = Env::new();
    let agmsg = minimal_agmsg(&env);
    let dir = agmsg.to_str().unwrap();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("victim.sh"), "# not agmsg's\n").unwrap();

    // A link where a driver file is.
    let jsonl = agmsg.join("scripts/drivers/storage/jsonl.sh");
    std::fs::remove_file(&jsonl).unwrap();
    std::os::unix::fs::symlink(outside.join("victim.sh"), &jsonl).unwrap();
    let before = snapshot(&agmsg);
    let run = shim(&env, &["install", dir]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("scripts/drivers/storage/jsonl.sh is a symlink"), "{run:?}");
    assert_same_tree(&snapshot(&agmsg), &before, "nothing changed");
    assert_eq!(std::fs::read_to_string(outside.join("victim.sh")).unwrap(), "# not agmsg's\n");
    std::fs::remove_file(&jsonl).unwrap();

    // A link where a directory is (a type's), or where install would create one.
    let cursor = agmsg.join("scripts/drivers/types/cursor");
    let cursor_plug = std::fs::read(cursor.join("_delivery.sh")).unwrap();
    std::fs::rename(&cursor, outside.join("cursor")).unwrap();
    std::os::unix::fs::symlink(outside.join("cursor"), &cursor).unwrap();
    let before = snapshot(&agmsg);
    let run = shim(&env, &["install", dir, "--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(out["ok"] == false && out["error"].as_str().unwrap().contains("scripts/drivers/types/cursor is a symlink"), "{out}");
    assert_same_tree(&snapshot(&agmsg), &before, "agmsg's tree changed");
    assert_eq!(std::fs::read(outside.join("cursor/_delivery.sh")).unwrap(), cursor_plug, "nothing written through the link");
    std::fs::remove_file(&cursor).unwrap();
    std::fs::rename(outside.join("cursor"), &cursor).unwrap();
    std::os::unix::fs::symlink(&outside, agmsg.join("scripts/drivers/terminals")).unwrap();
    let run = shim(&env, &["install", dir, "--dry-run"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("scripts/drivers/terminals is a symlink"), "{run:?}");
    assert!(!agmsg.join("agmsg-host-shims").exists());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing written through the link");
}

#[test]
fn a_directory_that_is_no_agmsg_install_is_refused() {
    let env = Env::new();
    let empty = env.dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (dir, why) in [(empty.to_str().unwrap(), "is not an agmsg install directory"), ("/nonexistent/agmsg", "cannot open")] {
        for action in ["install", "uninstall"] {
            let run = shim(&env, &[action, dir]);
            assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{run:?}");
            assert!(run.stderr.starts_with(&format!("agmsg-host shim {action}: ")) && run.stderr.contains(why), "{run:?}");
        }
    }
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    let run = shim(&env, &["install"]);
    assert_eq!(run.code, 2, "a usage error: {run:?}");
}

/// Uninstall removes and rewrites what the record names; a record naming anything else (outside
/// `scripts/drivers/`, `..`) is refused, and nothing is touched.
#[test]
fn a_record_naming_other_paths_is_refused() {
    let env = Env::new();
    let agmsg = minimal_agmsg(&env);
    let dir = agmsg.to_str().unwrap();
    items(&env, &["install", dir]);
    let victim = env.dir.path().join("victim");
    std::fs::write(&victim, "keep me\n").unwrap();
    let record_path = agmsg.join("agmsg-host-shims/manifest.json");
    let honest = std::fs::read_to_string(&record_path).unwrap();
    let sha = format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(b"keep me\n"));
    for forged in ["scripts/drivers/../../../victim", "../victim", "scripts/lib/storage.sh"] {
        let mut record: serde_json::Value = serde_json::from_str(&honest).unwrap();
        record["files"][forged] = serde_json::json!({ "installed": sha, "original": null });
        std::fs::write(&record_path, record.to_string()).unwrap();
        let before = snapshot(&agmsg);
        let run = shim(&env, &["uninstall", dir]);
        assert_eq!(run.code, 1, "{forged}: {run:?}");
        assert!(run.stderr.contains("is not a path install writes"), "{run:?}");
        assert_same_tree(&snapshot(&agmsg), &before, "nothing changed");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    }
}

/// One install or uninstall at a time: while another holds agmsg's directory, a second is refused.
#[test]
fn a_second_run_at_the_same_time_is_refused() {
    let env = Env::new();
    let Some(agmsg) = agmsg_scripts(&env) else { return };
    let dir = agmsg.to_str().unwrap();
    // flock(1) holds the directory's lock, as a running install does, until its stdin closes.
    let mut holder = env
        .program("flock")
        .arg(&agmsg)
        .args(["cat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    loop {
        let probe = env.program("flock").args(["-n", dir, "true"]).status().unwrap();
        if !probe.success() {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "flock never took the lock");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let before = snapshot(&agmsg);
    for action in ["install", "uninstall"] {
        let run = shim(&env, &[action, dir]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("another agmsg-host shim install or uninstall is running"), "{run:?}");
    }
    assert_same_tree(&snapshot(&agmsg), &before, "nothing changed");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert_eq!(
        items(&env, &["install", dir]).iter().filter(|(_, a)| a == "replace").count(),
        11,
        "the install goes ahead once the other has finished"
    );
}

/// `shim install --help` lists only what install uses: not the global `--store` / `--driver`, which
/// do nothing there (they were listed before); given anyway, before or after `shim`, they are a usage
/// error (2) and nothing is written.
#[test]
fn install_takes_no_store_and_no_driver() {
    let env = Env::new();
    for action in ["install", "uninstall"] {
        let help = shim(&env, &[action, "--help"]);
        assert_eq!(help.code, 0, "{help:?}");
        assert!(help.stdout.contains("--dry-run") && !help.stdout.contains("--store") && !help.stdout.contains("--driver"), "{help:?}");
    }
    let agmsg = minimal_agmsg(&env);
    let before = snapshot(&agmsg);
    let dir = agmsg.to_str().unwrap();
    for args in [
        vec!["shim", "install", dir, "--store", "/tmp/x"],
        vec!["--driver", "jsonl", "shim", "install", dir],
        vec!["shim", "uninstall", "--driver", "x", dir],
    ] {
        let run = env.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains("does nothing here"), "{run:?}");
    }
    assert_same_tree(&snapshot(&agmsg), &before, "nothing written");
}
