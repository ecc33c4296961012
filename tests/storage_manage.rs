//! The store-management workflows through the library API (`storage::manage`), as another front end
//! than the CLI would call them: convert reports its stages and counts to the caller's `Progress` and
//! returns what it did; switch returns what the config now records; neither prints. Then the CLI's
//! `--json` forms of both, and convert's silence on a stderr that is not a terminal.

mod common;

use agmsg_host::storage::manage::{self, Progress, Stage};
use common::Env;

#[derive(Default)]
struct Seen {
    stages: Vec<Stage>,
    copied: Option<usize>,
    verified: Option<usize>,
}

impl Progress for Seen {
    fn stage(&mut self, stage: Stage) {
        self.stages.push(stage);
    }
    fn events(&mut self, stage: Stage, events: usize, done: bool) {
        if done {
            *(if stage == Stage::Copying { &mut self.copied } else { &mut self.verified }) = Some(events);
        }
    }
}

fn config(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn convert_and_switch_through_the_library() {
    let env = Env::new();
    let config_path = env.dir.path().join("agmsg/config.json");
    std::fs::create_dir_all(config_path.parent().unwrap()).unwrap();
    std::fs::write(&config_path, r#"{"keep": [1, 2], "storage": "sqlite"}"#).unwrap();
    let env = env.env("AGMSG_CONFIG", config_path.to_str().unwrap());
    env.storage(&["init"]).ok();
    for i in 0..7 {
        env.send("t", "alice", "bob", &format!("m{i}"));
    }
    // This process is the front end now: the same environment the binary gets.
    // SAFETY: this test binary holds this one test, so no other thread reads the environment.
    unsafe {
        std::env::set_var("HOME", env.dir.path());
        std::env::set_var("AGMSG_CONFIG", &config_path);
        std::env::set_var("AGMSG_CACHE_DIR", &env.cache);
        std::env::set_var("AGMSG_STORAGE_PATH", &env.store);
        std::env::remove_var("AGMSG_STORAGE_DRIVER");
        std::env::remove_var("AGMSG_HOME");
    }

    let mut seen = Seen::default();
    let done = manage::convert(None, "jsonl", None, &mut seen).expect("convert");
    assert_eq!((done.from.as_str(), done.to.as_str(), done.events), ("sqlite", "jsonl", 7));
    assert_eq!(done.config, config_path);
    assert_eq!(seen.stages, [Stage::Checking, Stage::Copying, Stage::Verifying, Stage::MovingIn, Stage::Recording]);
    assert_eq!((seen.copied, seen.verified), (Some(7), Some(7)));
    assert_eq!(config(&config_path), serde_json::json!({"keep": [1, 2], "storage": "jsonl"}));
    assert!(env.store.join("events.jsonl").is_file() && env.store.join("messages.db").is_file());
    assert_eq!(env.run(&["history", "t", "--json"]).ok().lines().len(), 7, "the messages, through jsonl");

    // Converting into what the store already uses changes nothing; the error is the area's own.
    let again = manage::convert(None, "jsonl", None, &mut manage::Silent).unwrap_err();
    assert!(again.message.contains("already uses 'jsonl'"), "{again:?}");

    // A driver that does not exist: refused, the config as it was.
    assert!(manage::switch(None, "nosuch", None, &mut manage::Silent).is_err());
    assert_eq!(config(&config_path)["storage"], "jsonl");
    let mut seen = Seen::default();
    let back = manage::switch(None, "sqlite", None, &mut seen).expect("switch");
    assert_eq!((back.driver.as_str(), back.config.as_path()), ("sqlite", config_path.as_path()));
    assert_eq!(seen.stages, [Stage::Checking, Stage::Recording]);
    assert_eq!(config(&config_path), serde_json::json!({"keep": [1, 2], "storage": "sqlite"}));

    // The CLI over it: --json says what was done, and a stderr that is no terminal gets no progress.
    let run = env.storage(&["switch", "jsonl", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let value: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!((value["status"].as_str(), value["driver"].as_str()), (Some("ok"), Some("jsonl")), "{run:?}");
    assert_eq!(value["config"].as_str(), config_path.to_str());
    // The old sqlite store (and its journal) out of the way of a convert back into sqlite.
    for entry in std::fs::read_dir(&env.store).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("messages.db") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let run = env.storage(&["convert", "sqlite", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let value: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(
        (value["from"].as_str(), value["to"].as_str(), value["events"].as_u64()),
        (Some("jsonl"), Some("sqlite"), Some(7)),
        "{run:?}"
    );
    assert_eq!(run.stderr, "", "no progress off a terminal, and --json says the rest: {run:?}");
    // --url is for a driver whose store is a database, named from the drivers with host settings.
    let run = env.storage(&["switch", "jsonl", "--url", "postgres://agmsg@127.0.0.1:1/x"]);
    assert_eq!((run.code, run.stdout.as_str()), (13, "runtime_error\n"), "{run:?}");
    assert!(run.stderr.contains("--url is for the postgres driver, not 'jsonl'"), "{run:?}");
    let bad = env.storage(&["convert", "jsonl", "--json", "--json"]);
    assert_eq!(bad.code, 2, "a repeated flag is a usage error: {bad:?}");
}
