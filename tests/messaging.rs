//! The commands people use: send, inbox, history, watch; and choosing the storage driver: storage
//! list, switch and convert.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, Run};

fn ids(run: &Run) -> Vec<String> {
    run.json().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn send_inbox_history() {
    let env = Env::new();
    let first = env.run(&["send", "t", "alice", "bob", "hi bob\nsecond line"]).ok().stdout.trim().to_owned();
    let second = env.run_stdin(&["send", "t", "carol", "bob", "-"], b"from stdin\n").ok().stdout.trim().to_owned();

    let text = env.run(&["history", "t"]);
    let lines = text.ok().lines();
    assert!(lines[0].ends_with("  alice → bob  hi bob"), "{lines:?}");
    assert!(lines[1].trim_start() == "second line" && lines[1].len() > "second line".len(), "continuation is indented: {lines:?}");
    assert!(!text.stdout.contains('\x1b'), "no colors when stdout is not a terminal");

    let inbox = env.run(&["inbox", "t", "bob", "--json"]);
    assert_eq!(ids(&inbox), [first.clone(), second.clone()]);
    // As agmsg's send.sh takes a piped body (`"$(cat)"`): trailing newlines dropped.
    assert_eq!(inbox.json()[1]["body"], "from stdin");
    // Shown means consumed.
    assert_eq!(env.run(&["inbox", "t", "bob", "--json"]).stdout, "");
    assert_eq!(env.run(&["inbox", "t", "bob"]).stdout, "(no unread messages)\n");
    assert_eq!(ids(&env.run(&["history", "t", "bob", "--limit", "1", "--json"])), [second]);
    let bad = env.run(&["send", "t:x", "a", "b", "c"]);
    assert_eq!(bad.code, 13, "{bad:?}");
}

#[test]
fn shell_completions() {
    let env = Env::new();
    let bash = env.run(&["completions", "bash"]);
    assert!(bash.ok().stdout.contains("complete -F") && bash.stdout.contains("inbox"), "{bash:?}");
    assert!(env.run(&["completions", "zsh"]).ok().stdout.contains("#compdef agmsg-host"));
}

#[test]
fn watch_prints_and_consumes_what_arrives_and_stops_cleanly() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    let before = env.send("t", "a", "bob", "before the watch");
    let mut watch = env.cmd().args(["watch", "t", "bob", "--interval", "0.1", "--json"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut seen = vec![serde_json::from_str::<serde_json::Value>(&lines.next().unwrap().unwrap()).unwrap()];
    let sent: Vec<String> = (0..3).map(|i| env.send("t", "a", "bob", &format!("live {i}"))).collect();
    env.send("t", "a", "carol", "not for bob");
    while seen.len() < 4 {
        seen.push(serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap());
    }
    let seen_ids: Vec<&str> = seen.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(seen_ids, [&before, &sent[0], &sent[1], &sent[2]]);
    // Ctrl-C: a clean exit.
    Command::new("kill").args(["-INT", &watch.id().to_string()]).status().unwrap();
    let status = watch.wait().unwrap();
    assert!(status.success(), "{status:?}");
    // What was printed was consumed.
    assert_eq!(env.run(&["inbox", "t", "bob", "--json"]).stdout, "");
}

#[test]
fn watch_in_a_tmux_pane_while_another_terminal_sends() {
    let tmux_dir = tempfile::tempdir().unwrap();
    let socket = tmux_dir.path().join("sock");
    let env = Env::new();
    env.storage(&["init"]).ok();
    // The pane's environment is the tmux server's, which is this process's: the watch gets the test's
    // own home and nothing else (the user's ~/.agents/agmsg/config.json could pick another driver).
    let command = format!(
        "env -i HOME='{}' PATH=\"$PATH\" AGMSG_STORAGE_PATH='{}' AGMSG_CACHE_DIR='{}' '{}' watch t bob --interval 0.1",
        env.dir.path().display(),
        env.store.display(),
        env.cache.display(),
        common::BIN
    );
    let tmux = |args: &[&str]| Command::new("tmux").arg("-S").arg(&socket).args(args).env_remove("TMUX").output().unwrap();
    assert!(tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "w", "-x", "200", "-y", "40", &command]).status.success());
    env.send("t", "alice", "bob", "hello from the other terminal");
    let started = Instant::now();
    loop {
        let pane = String::from_utf8(tmux(&["capture-pane", "-p", "-t", "w"]).stdout).unwrap();
        if pane.contains("alice → bob  hello from the other terminal") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the watch never showed the message:\n{pane}");
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux(&["kill-server"]);
}

fn config(env: &Env) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(env.dir.path().join("config.json")).unwrap()).unwrap()
}

fn with_config(env: Env) -> Env {
    let path = env.dir.path().join("config.json");
    std::fs::write(&path, r#"{"delivery": {"mode": "poll"}, "storage": "sqlite"}"#).unwrap();
    let path = path.to_str().unwrap().to_owned();
    env.env("AGMSG_CONFIG", &path)
}

#[test]
fn list_and_switch_keep_the_config_s_other_keys() {
    let env = with_config(Env::new());
    let list = env.storage(&["list"]);
    assert!(list.ok().lines().iter().any(|l| l.starts_with("* sqlite")), "{list:?}");
    assert_eq!(env.storage(&["switch", "jsonl"]).stdout, "ok\n");
    assert_eq!(config(&env), serde_json::json!({"delivery": {"mode": "poll"}, "storage": "jsonl"}));
    assert!(env.storage(&[]).stdout.contains("name=jsonl"));
    let bad = env.storage(&["switch", "nosuch"]);
    assert_eq!((bad.code, bad.stdout.as_str()), (13, "runtime_error\n"), "{bad:?}");
    assert_eq!(config(&env)["storage"], "jsonl", "a failed switch changes nothing");
}

/// What a user sees: every message, bob's unread ones, and what a watch from bob's stored cursor
/// delivers (cursor tokens are each driver's own, so they are compared by what they deliver).
fn snapshot(env: &Env) -> (String, String, Vec<String>) {
    let cursor = env.storage(&["read-cursor-get", "t", "bob"]).stdout.trim().to_owned();
    let watch = env.storage(&["watch-after", &cursor, "t:bob"]);
    let delivered = watch.json().iter().filter_map(|r| r["id"].as_str().map(str::to_owned)).collect();
    (env.run(&["history", "t", "--json"]).stdout, env.storage(&["list-unread", "t", "bob"]).stdout, delivered)
}

#[test]
fn convert_copies_verifies_and_switches_or_changes_nothing() {
    let env = with_config(Env::new());
    env.storage(&["init"]).ok();
    let ids: Vec<String> = (0..5).map(|i| env.send("t", "alice", "bob", &format!("m{i}"))).collect();
    env.storage(&["mark-read-batch", "t", "bob", &ids[0], &ids[1]]).ok();
    let before = snapshot(&env);

    // The target's file is in the way: nothing changes, and no work directory is left.
    std::fs::write(env.store.join("events.jsonl"), "").unwrap();
    let blocked = env.storage(&["convert", "jsonl"]);
    assert_eq!((blocked.code, blocked.stdout.as_str()), (13, "runtime_error\n"), "{blocked:?}");
    assert!(blocked.stderr.contains("events.jsonl already exists"), "{blocked:?}");
    assert_eq!(config(&env)["storage"], "sqlite");
    assert_eq!(snapshot(&env), before);
    std::fs::remove_file(env.store.join("events.jsonl")).unwrap();
    assert!(std::fs::read_dir(&env.store).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with(".agmsg-convert")));

    let run = env.storage(&["convert", "jsonl"]);
    assert_eq!(run.stdout, "ok\n", "{run:?}");
    assert_eq!(config(&env)["storage"], "jsonl");
    assert_eq!(config(&env)["delivery"]["mode"], "poll");
    assert_eq!(snapshot(&env), before, "the same messages, reads and cursor through the new driver");
    assert!(env.store.join("messages.db").exists(), "the old store is left in place");
}

#[test]
fn a_convert_killed_midway_leaves_everything_as_it_was() {
    let env = with_config(Env::new());
    env.storage(&["init"]).ok();
    // A store big enough that the convert is still running when it is killed.
    let mut import = String::new();
    for i in 0..40_000 {
        import.push_str(&format!(
            r#"{{"type":"message_sent","id":"m{i}","team":"t","from":"a","to":"bob","body":"message {i}","at":"2026-01-01T00:00:00Z"}}"#
        ));
        import.push('\n');
    }
    let file = env.dir.path().join("import.jsonl");
    std::fs::write(&file, import).unwrap();
    env.storage(&["import", file.to_str().unwrap()]).ok();
    let before = snapshot(&env);

    // Killed while this convert's work directory is in the store directory (a finished convert leaves
    // none; one a killed convert left is another name): the kill is shown to have landed before the flip.
    let work_dirs = || -> std::collections::HashSet<String> {
        std::fs::read_dir(&env.store)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(".agmsg-convert"))
            .collect()
    };
    let mut landed = 0;
    for _ in 0..3 {
        let earlier = work_dirs();
        let converting = || !work_dirs().is_subset(&earlier);
        let mut cmd = env.cmd();
        cmd.args(["storage", "convert", "jsonl"]);
        common::sync::kill_when(&mut cmd, "", converting);
        if !converting() {
            break; // it finished first: the flip is done
        }
        landed += 1;
        assert_eq!(config(&env)["storage"], "sqlite", "killed before the flip: the config is unchanged");
        assert!(!env.store.join("events.jsonl").exists());
        assert_eq!(snapshot(&env), before);
        if landed == 2 {
            break;
        }
    }
    assert_eq!(landed, 2, "two kills landed while the convert was under way");
    // A later convert cleans up after the killed one and succeeds.
    if config(&env)["storage"] == "sqlite" {
        assert_eq!(env.storage(&["convert", "jsonl"]).stdout, "ok\n");
    }
    assert_eq!(snapshot(&env), before);
    assert!(std::fs::read_dir(&env.store).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with(".agmsg-convert")));
}
