//! The terminal contract (spec §6) rules that need no terminal: what every terminal driver must do
//! outside any terminal and with ids it cannot have produced. (The rules that drive real panes, for
//! drivers that run tmux, are in [`agmsg_conformance::tmux`].)

use agmsg_conformance::{Env, Harness, Rule, Run, tmux};

fn run(env: &Env, driver: &str, args: &[&str]) -> Run {
    let mut all = vec!["terminal", "--driver", driver];
    all.extend_from_slice(args);
    env.run(&all)
}

/// A driver that traps or panics is never an answer.
#[track_caller]
fn no_crash(run: &Run, what: &str) {
    for sign in ["trapped", "panicked", "exceeded its", "returned a malformed"] {
        assert!(!run.stderr.contains(sign), "{what}: the driver failed instead of answering: {run:?}");
    }
}

/// The manifest's `key=value` for a driver directory, or `terminal list --json` for a bundled driver.
fn manifest(env: &Env, driver: &str) -> serde_json::Value {
    if driver.contains('/') {
        let text = std::fs::read_to_string(std::path::Path::new(driver).join("terminal.conf")).expect("the driver's terminal.conf");
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.split_once('=').filter(|(k, _)| k.trim() == key).map(|(_, v)| v.trim().trim_matches('"').to_owned()))
                .unwrap_or_default()
        };
        let capabilities: Vec<String> = value("capabilities").split_whitespace().map(str::to_owned).collect();
        return serde_json::json!({ "name": value("name"), "capabilities": capabilities });
    }
    let list = env.run(&["terminal", "list", "--json"]);
    let all: serde_json::Value = serde_json::from_str(&list.ok().stdout).expect("terminal list --json");
    all.as_array().unwrap().iter().find(|d| d["name"] == driver).cloned().unwrap_or_else(|| panic!("{driver} is not listed"))
}

fn check_is_ok_or_missing_deps(harness: &Harness, driver: &str) {
    let env = Env::new(harness);
    let check = run(&env, driver, &["check"]);
    no_crash(&check, "check");
    match check.code {
        0 => assert_eq!(check.stdout, "ok\n", "{check:?}"),
        10 => {
            let lines = check.lines();
            assert_eq!(lines.last(), Some(&"missing_deps"), "{check:?}");
            assert!(lines.iter().any(|l| l.starts_with("AGMSG-DIRECTIVE: {")), "a directive says what to install: {check:?}");
        }
        _ => panic!("check exits 0 (ok) or 10 (missing_deps): {check:?}"),
    }
}

fn describe_matches_the_manifest(harness: &Harness, driver: &str) {
    let env = Env::new(harness);
    let describe = run(&env, driver, &["describe"]);
    no_crash(&describe, "describe");
    assert_eq!(describe.code, 0, "{describe:?}");
    let manifest = manifest(&env, driver);
    let field = |key: &str| describe.lines().iter().find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_owned));
    assert_eq!(field("name").as_deref(), manifest["name"].as_str(), "describe's name is the manifest's: {describe:?}");
    let capabilities: Vec<String> = field("capabilities").unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    let declared: Vec<String> = manifest["capabilities"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_owned()).collect();
    for capability in &declared {
        assert!(capabilities.contains(capability), "the manifest's capability {capability} is in describe: {describe:?}");
    }
    assert!(describe.lines().iter().all(|l| l.contains('=')), "describe prints key=value lines only: {describe:?}");
}

fn detect_outside_any_terminal(harness: &Harness, driver: &str) {
    // The harness's environment holds no terminal's variables.
    let env = Env::new(harness);
    let detect = run(&env, driver, &["detect", "session-1"]);
    no_crash(&detect, "detect");
    // Absent (exit 1, nothing printed), or the addressless fallback plain is (exit 0, `-`).
    assert!(
        (detect.code == 1 && detect.stdout.is_empty()) || (detect.code == 0 && detect.stdout == "-\n"),
        "outside any terminal, detect is absent: {detect:?}"
    );
}

/// Ids no driver can have produced, some of them hostile.
const MALFORMED: &[&str] = &["%9;kill", "$(touch pwned)", "`touch pwned`", "../../etc/passwd", "a\nb", "", " ", "-e", "%"];

fn malformed_ids_fail_closed(harness: &Harness, driver: &str) {
    let env = Env::new(harness);
    for id in MALFORMED {
        for (args, stdout) in [
            (vec!["peek", id], vec![""]),
            (vec!["poke", id, "hello"], vec!["runtime_error\n"]),
            (vec!["despawn", id], vec!["runtime_error\n"]),
            (vec!["pane-state", id], vec!["unknown\n"]),
            (vec!["where", id], vec!["unknown\n", "unsupported\n"]),
            (vec!["name", id, "t", "a"], vec!["runtime_error\n"]),
            (vec!["arrange", id, "swap", id], vec!["unknown\n", "unsupported\n", "runtime_error\n"]),
        ] {
            let result = run(&env, driver, &args);
            no_crash(&result, &format!("{args:?}"));
            assert!(matches!(result.code, 10 | 12 | 13), "{args:?} fails (10, 12 or 13), never succeeds: {result:?}");
            assert!(stdout.contains(&result.stdout.as_str()), "{args:?} prints agmsg's word for the failure: {result:?}");
        }
    }
    assert!(!env.dir.path().join("pwned").exists() && !std::path::Path::new("/pwned").exists(), "nothing ran");
}

fn optional_ops_answer_or_are_unsupported(harness: &Harness, driver: &str) {
    let env = Env::new(harness);
    for args in [
        vec!["team-observe", "%9;kill"],
        vec!["find-by-label", "t:a"],
        vec!["label-of", "%9;kill"],
        vec!["id-ok", "%9;kill"],
        vec!["pane-process-observe", "%9;kill"],
        vec!["enumerate-panes"],
        vec!["fence", "%9;kill"],
        vec!["pane-focused", "%9;kill"],
        vec!["input-clear", "%9;kill"],
        vec!["input-type", "%9;kill", "x"],
        vec!["expected-label", "t", "a"],
        vec!["instance-for-ref", "nosuch:ref"],
        vec!["id-split", "%9;kill"],
        vec!["capability", "teleport"],
        vec!["team-input-ready", "%9;kill", "codex"],
    ] {
        let result = run(&env, driver, &args);
        no_crash(&result, &format!("{args:?}"));
        assert!(matches!(result.code, 0 | 1 | 2 | 10 | 12 | 13), "{args:?}: {result:?}");
        if args[0] == "id-ok" {
            assert_ne!(result.code, 0, "a hostile id is not a valid id: {result:?}");
        }
    }
}

/// `spawn` with hostile names, a hostile project and boot words full of shell and tmux syntax, outside
/// any terminal. A driver that opens a window here for plain words (plain, through an `AGMSG_TERMINAL`
/// `{cmd}` template) must do so for the hostile ones too and run exactly the words it was given; the
/// others refuse both. In no case does a name, the project or a boot word run as a command.
/// `TMUX_TMPDIR` points where no server lives, so a tmux driver cannot reach the user's own server.
fn hostile_names_and_boot_are_data(harness: &Harness, driver: &str) {
    let env = Env::new(harness);
    let home = env.dir.path().to_owned();
    let no_server = home.join("no-tmux-server");
    std::fs::create_dir(&no_server).expect("a directory");
    let project = tmux::hostile_project(&home);
    let project = project.to_str().expect("a UTF-8 temp dir");
    let out = home.join("boot-words");
    let out_text = out.to_str().expect("a UTF-8 temp dir");
    let env = env.env("AGMSG_TERMINAL", "{cmd}").env("TMUX_TMPDIR", no_server.to_str().expect("UTF-8"));
    // The boot writes its last word to the file its first argument names (aside, then renamed: `>`
    // creates the file before printf fills it); every other boot word is plain, so a driver that runs
    // plain words at all runs this boot.
    let script = home.join("write-word.sh");
    std::fs::write(&script, "printf %s \"$2\" > \"$1.part\" && mv \"$1.part\" \"$1\"\n").expect("writing the boot's script");
    let script = script.to_str().expect("a UTF-8 temp dir").to_owned();
    let spawn = |name: &str, project: &str, word: &str| {
        let spawned = run(&env, driver, &["spawn", name, project, "window", "/bin/sh", &script, out_text, word]);
        no_crash(&spawned, &format!("spawn {name:?}"));
        assert!(matches!(spawned.code, 0 | 10 | 12 | 13), "spawn {name:?} succeeds or fails with a terminal class: {spawned:?}");
        if spawned.code == 0 {
            let started = std::time::Instant::now();
            while !out.exists() && started.elapsed() < std::time::Duration::from_secs(20) {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            let written = std::fs::read_to_string(&out).unwrap_or_default();
            assert_eq!(written, word, "spawned {name:?}: the boot got its words exactly: {spawned:?}");
            std::fs::remove_file(&out).expect("removing the boot's output");
        }
        spawned
    };
    let spawns_here = spawn("worker", home.to_str().expect("UTF-8"), "plain-words").code == 0;
    // Each word alone: an unbalanced quote must not hide a `$(...)` that a mangling driver would run.
    let words = ["$(cd;touch PWNED-b1) `cd;touch PWNED-b2` #(cd;touch PWNED-b3) {cmd} ~ * ? a;", "it's \"quoted\" \\ x\\;"];
    for (i, name) in tmux::HOSTILE_NAMES.iter().enumerate() {
        let spawned = spawn(name, project, words[i % words.len()]);
        if spawns_here {
            assert_eq!(spawned.code, 0, "this driver spawns here, so a hostile name, project or boot word is data too: {spawned:?}");
        }
    }
    tmux::assert_nothing_ran(&[&home]);
}

/// Every rule, in the order they are reported.
pub const RULES: &[Rule] = &[
    Rule { name: "check_is_ok_or_missing_deps", check: check_is_ok_or_missing_deps },
    Rule { name: "describe_matches_the_manifest", check: describe_matches_the_manifest },
    Rule { name: "detect_outside_any_terminal", check: detect_outside_any_terminal },
    Rule { name: "malformed_ids_fail_closed", check: malformed_ids_fail_closed },
    Rule { name: "optional_ops_answer_or_are_unsupported", check: optional_ops_answer_or_are_unsupported },
    Rule { name: "hostile_names_and_boot_are_data", check: hostile_names_and_boot_are_data },
];
