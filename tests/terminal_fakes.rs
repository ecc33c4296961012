//! The herdr and orca drivers against fake `herdr` and `orca` programs: the exact argv each op runs,
//! how each canned answer is read (gone only from a positive answer), that a hostile id runs nothing,
//! and where both drivers stand in the §6.3 resolvers.
//!
//! A fake is a bash script first on PATH. The host runs it with the environment cleared, so it finds
//! its files next to itself: it appends its argv to `calls.log` (one call per line, arguments joined by
//! `|`) and answers with `answers/<verb>-<subverb>[.<n>].out` and `.rc` (the n-th call of that verb, else
//! the default), printing nothing and exiting 0 when no answer was set.

mod common;

use std::path::PathBuf;

use common::{Env, Run};
use sha2::{Digest, Sha256};

const FAKE: &str = r#"#!/bin/bash
here="${0%/*}"
line=""
for arg in "$@"; do line="$line${line:+|}$arg"; done
printf '%s\n' "$line" >> "$here/calls.log"
printf '%s\n' "${HERDR_SOCKET_PATH:-}" >> "$here/sockets.log"
key="$1-$2"
count="$here/answers/$key.count"
n=1
[ -f "$count" ] && n=$(( $(< "$count") + 1 ))
printf '%s\n' "$n" > "$count"
for base in "$here/answers/$key.$n" "$here/answers/$key"; do
  if [ -f "$base.out" ] || [ -f "$base.rc" ]; then
    [ -f "$base.out" ] && /bin/cat "$base.out"
    rc=0
    [ -f "$base.rc" ] && rc=$(< "$base.rc")
    exit "$rc"
  fi
done
exit 0
"#;

/// A directory holding one fake program, put first on PATH.
struct Fake {
    bin: PathBuf,
}

impl Fake {
    /// `program` as a fake in a fresh bin directory of `env`'s temp dir, first on PATH.
    fn install(env: Env, program: &str) -> (Env, Fake) {
        let bin = env.dir.path().join(format!("bin-{program}"));
        std::fs::create_dir_all(bin.join("answers")).unwrap();
        let path = bin.join(program);
        std::fs::write(&path, FAKE).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = std::env::var("PATH").unwrap_or_default();
        let env = env.env("PATH", &format!("{}:{old}", bin.display()));
        (env, Fake { bin })
    }

    /// What `<verb> <subverb>` prints (every call, or the `n`-th with [`Fake::answer_nth`]).
    fn answer(&self, key: &str, stdout: &str) -> &Self {
        std::fs::write(self.bin.join("answers").join(format!("{key}.out")), stdout).unwrap();
        self
    }

    fn answer_nth(&self, key: &str, n: u32, stdout: &str) -> &Self {
        std::fs::write(self.bin.join("answers").join(format!("{key}.{n}.out")), stdout).unwrap();
        self
    }

    fn exit(&self, key: &str, rc: i32) -> &Self {
        std::fs::write(self.bin.join("answers").join(format!("{key}.rc")), rc.to_string()).unwrap();
        self
    }

    /// Forget earlier answers, counts and calls.
    fn reset(&self) {
        let _ = std::fs::remove_dir_all(self.bin.join("answers"));
        std::fs::create_dir_all(self.bin.join("answers")).unwrap();
        self.take_calls();
    }

    /// The calls so far, and start a new log.
    fn take_calls(&self) -> Vec<String> {
        let log = self.bin.join("calls.log");
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        let _ = std::fs::remove_file(&log);
        calls.lines().map(str::to_owned).collect()
    }

    fn log_exists(&self) -> bool {
        self.bin.join("calls.log").exists()
    }
}

fn terminal(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["terminal"];
    all.extend_from_slice(args);
    env.run(&all)
}

#[track_caller]
fn expect(run: &Run, code: i32, stdout: &str) {
    assert_eq!((run.code, run.stdout.as_str()), (code, stdout), "{run:#?}");
}

// ---------------------------------------------------------------------------------------------------
// herdr

const SOCK: &str = "/tmp/agmsg-fake-herdr.sock";
const PANE: &str = "w1:p4";

fn herdr_id(pane: &str) -> String {
    format!("{SOCK}:{pane}")
}

/// As if inside herdr pane w1:p4 of the instance at SOCK, with a fake herdr.
fn in_herdr() -> (Env, Fake) {
    let env = Env::new().env("HERDR_ENV", "1").env("HERDR_SOCKET_PATH", SOCK).env("HERDR_PANE_ID", PANE).env("HERDR_WORKSPACE_ID", "w1");
    Fake::install(env, "herdr")
}

fn herdr(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["--driver", "herdr"];
    all.extend_from_slice(args);
    terminal(env, &all)
}

/// An `agent list` entry as herdr 0.8 prints one for a pane: the identity anchor, no session.
fn agent_entry(pane: &str) -> serde_json::Value {
    serde_json::json!({
        "pane_id": pane, "agent": "codex", "terminal_id": format!("term-{pane}"),
        "tab_id": "w1:t2", "workspace_id": "w1", "agent_status": "idle",
    })
}

fn agent_list(entries: &[serde_json::Value]) -> String {
    serde_json::json!({"result": {"agents": entries}}).to_string()
}

/// `pane layout`: w1:p4 on top of w1:p5 in tab w1:t2, under one `down` split.
const LAYOUT: &str = r#"{"result":{"layout":{"tab_id":"w1:t2","panes":[
  {"pane_id":"w1:p4","rect":{"x":0,"y":0,"width":80,"height":12}},
  {"pane_id":"w1:p5","rect":{"x":0,"y":12,"width":80,"height":12}}],
  "splits":[{"direction":"down","rect":{"x":0,"y":0,"width":80,"height":24}}]}}}"#;

/// `pane process-info` of w1:p9: the shell holds the foreground (at its prompt), or a child does.
const READY: &str = r#"{"result":{"process_info":{"pane_id":"w1:p9","shell_pid":4242,
  "foreground_process_group_id":4242,"foreground_processes":[]}}}"#;
const BUSY: &str = r#"{"result":{"process_info":{"pane_id":"w1:p9","shell_pid":4242,
  "foreground_process_group_id":5151,"foreground_processes":[{"pid":5151}]}}}"#;

/// As [`in_herdr`], with `tab create` answering a new tab w1:t3 whose root pane w1:pA is at its prompt.
fn in_herdr_with_new_tab() -> (Env, Fake) {
    let (env, fake) = in_herdr();
    fake.answer("tab-create", r#"{"result":{"tab":{"tab_id":"w1:t3"},"root_pane":{"pane_id":"w1:pA"}}}"#)
        .answer("pane-process-info", READY.replace("w1:p9", "w1:pA").as_str());
    (env, fake)
}

#[test]
fn herdr_detect_check_and_describe() {
    let (env, fake) = in_herdr();
    expect(&herdr(&env, &["detect", "s"]), 0, &format!("{}\n", herdr_id(PANE)));
    expect(&herdr(&env, &["check"]), 0, "ok\n");
    let describe = herdr(&env, &["describe"]);
    for line in [
        "name=herdr",
        "priority=10",
        "capabilities=spawn despawn peek poke where arrange name",
        "intent.swap=herdr pane swap --source-pane SOURCE --target-pane TARGET",
    ] {
        assert!(describe.stdout.lines().any(|l| l == line), "{line}: {describe:?}");
    }
    // The environment alone answered: nothing ran.
    assert!(fake.take_calls().is_empty());

    // Not under herdr: absent, whatever else is set.
    let (outside, _) = Fake::install(Env::new().env("HERDR_PANE_ID", PANE).env("HERDR_SOCKET_PATH", SOCK), "herdr");
    assert_eq!(herdr(&outside, &["detect", "s"]).code, 1);

    // No usable HERDR_PANE_ID: the session id is looked up in `agent list`.
    let (env, fake) = Fake::install(Env::new().env("HERDR_ENV", "1").env("HERDR_SOCKET_PATH", SOCK).env("HERDR_PANE_ID", "p4"), "herdr");
    let mut mine = agent_entry("w2:p7");
    mine["agent_session"] = serde_json::json!({"value": "sess-42"});
    fake.answer("agent-list", &agent_list(&[agent_entry("w1:p1"), mine]));
    expect(&herdr(&env, &["detect", "sess-42"]), 0, &format!("{}\n", herdr_id("w2:p7")));
    assert_eq!(fake.take_calls(), ["agent|list"]);
    // Answered, and not among them: present, unresolved, with the reason.
    let run = herdr(&env, &["detect", "sess-other"]);
    expect(&run, 0, "");
    assert!(run.stderr.contains("not among the live agents"), "{run:?}");
    // No instance to qualify the id with: present, unresolved.
    let (env, _) = Fake::install(Env::new().env("HERDR_ENV", "1").env("HERDR_PANE_ID", PANE), "herdr");
    let run = herdr(&env, &["detect", "s"]);
    expect(&run, 0, "");
    assert!(run.stderr.contains("HERDR_SOCKET_PATH"), "{run:?}");
}

#[test]
fn herdr_spawn_splits_the_callers_pane_and_waits_for_its_prompt() {
    let (env, fake) = in_herdr();
    let env = env.env("AGMSG_SPAWN_TEAM", "crew");
    fake.answer("pane-split", r#"{"result":{"pane":{"pane_id":"w1:p9","tab_id":"w1:t2"}}}"#)
        .answer_nth("pane-process-info", 1, BUSY)
        .answer("pane-process-info", READY);
    let run = herdr(&env, &["spawn", "worker", "/work/proj", "pane-v", "codex", "--yolo", "it's; $(here)"]);
    expect(&run, 0, &format!("{}\n", herdr_id("w1:p9")));
    assert_eq!(
        fake.take_calls(),
        [
            "pane|split|w1:p4|--direction|down|--no-focus|--cwd|/work/proj",
            "pane|rename|w1:p9|crew:worker",
            "pane|process-info|--pane|w1:p9",
            "pane|process-info|--pane|w1:p9",
            // Typed into a shell: a word that is not plain is single-quoted, so it arrives as given.
            r"pane|run|w1:p9|codex --yolo 'it'\''s; $(here)'",
        ]
    );

    // A window is a new tab in this workspace; without a team the label is the bare name.
    let (env, fake) = in_herdr_with_new_tab();
    expect(&herdr(&env, &["spawn", "worker", "/work/proj", "window", "claude"]), 0, &format!("{}\n", herdr_id("w1:pA")));
    assert_eq!(
        fake.take_calls(),
        [
            "tab|create|--workspace|w1|--label|worker|--cwd|/work/proj",
            "pane|rename|w1:pA|worker",
            "pane|process-info|--pane|w1:pA",
            "pane|run|w1:pA|claude",
        ]
    );

    // A label herdr's `pane rename` would read as its `--clear` flag is not sent: it would clear the
    // label the tab was just created with, not set it.
    let (env, fake) = in_herdr_with_new_tab();
    expect(&herdr(&env, &["spawn", "--clear", "/work/proj", "window", "claude"]), 0, &format!("{}\n", herdr_id("w1:pA")));
    assert_eq!(
        fake.take_calls(),
        ["tab|create|--workspace|w1|--label|--clear|--cwd|/work/proj", "pane|process-info|--pane|w1:pA", "pane|run|w1:pA|claude"]
    );

    // An answer without a pane id of the grammar creates no record: 13, nothing printed.
    fake.reset();
    fake.answer("pane-split", r#"{"result":{"pane":{"pane_id":"w1:p9\n"}}}"#);
    expect(&herdr(&env, &["spawn", "worker", "/work/proj", "pane-h", "claude"]), 13, "");
    assert_eq!(fake.take_calls(), ["pane|split|w1:p4|--direction|right|--no-focus|--cwd|/work/proj"]);
    // Without HERDR_SOCKET_PATH nothing is created: the pane could not be recorded.
    let (no_sock, fake) = Fake::install(Env::new().env("HERDR_ENV", "1").env("HERDR_PANE_ID", PANE), "herdr");
    expect(&herdr(&no_sock, &["spawn", "worker", "/work/proj", "pane-v", "claude"]), 13, "");
    assert!(!fake.log_exists());
}

#[test]
fn herdr_spawn_never_types_into_a_busy_pane() {
    let (env, fake) = in_herdr();
    fake.answer("pane-split", r#"{"result":{"pane":{"pane_id":"w1:p9"}}}"#).answer("pane-process-info", BUSY);
    let run = herdr(&env, &["spawn", "worker", "/work/proj", "pane-v", "claude"]);
    expect(&run, 12, "");
    assert!(run.stderr.contains("NOT typed"), "{run:?}");
    let calls = fake.take_calls();
    assert_eq!(calls.iter().filter(|c| c.starts_with("pane|process-info|")).count(), 50, "{calls:?}");
    assert_eq!(calls.last().map(String::as_str), Some("pane|close|w1:p9"));
    assert!(!calls.iter().any(|c| c.starts_with("pane|run|")), "{calls:?}");
}

#[test]
fn herdr_peek_poke_despawn_and_name() {
    let (env, fake) = in_herdr();
    let id = herdr_id(PANE);

    // peek: the pane's bytes verbatim; --lines reads the recent source.
    fake.answer("pane-read", "line one\n\n  line two  \n\n");
    expect(&herdr(&env, &["peek", &id]), 0, "line one\n\n  line two  \n\n");
    expect(&herdr(&env, &["peek", &id, "--lines", "5"]), 0, "line one\n\n  line two  \n\n");
    assert_eq!(fake.take_calls(), ["pane|read|w1:p4|--source|visible", "pane|read|w1:p4|--source|recent|--lines|5"]);
    // herdr's own pane_not_found about this pane is gone (12); any other failure is undecided (10).
    fake.answer("pane-read", r#"{"error":{"code":"pane_not_found","pane":"w1:p4","message":"no such pane"}}"#).exit("pane-read", 1);
    expect(&herdr(&env, &["peek", &id]), 12, "");
    fake.answer("pane-read", r#"{"error":{"code":"pane_not_found","pane":"w1:p8"}}"#);
    expect(&herdr(&env, &["peek", &id]), 10, "");
    fake.answer("pane-read", r#"{"error":{"code":"permission_denied","message":"mentions pane_not_found"}}"#);
    expect(&herdr(&env, &["peek", &id]), 10, "");

    // poke: one `agent prompt`, the text one argv entry, untouched.
    fake.reset();
    let text = "hello; rm -rf ~ $(boom) 'quoted' \"too\"";
    expect(&herdr(&env, &["poke", &id, text]), 0, "ok\n");
    assert_eq!(fake.take_calls(), [format!("agent|prompt|w1:p4|{text}")]);
    fake.exit("agent-prompt", 1);
    expect(&herdr(&env, &["poke", &id, "hi"]), 12, "runtime_error\n");

    // despawn: `pane close` of the bare pane.
    fake.reset();
    expect(&herdr(&env, &["despawn", &format!("herdr:{id}")]), 0, "ok\n");
    assert_eq!(fake.take_calls(), ["pane|close|w1:p4"]);
    fake.exit("pane-close", 1);
    expect(&herdr(&env, &["despawn", &id]), 13, "runtime_error\n");

    // name: the internal key first (a + 24 hex of SHA-256 over "team\nagent"), then the label.
    fake.reset();
    let digest: String = Sha256::digest(b"crew\nbuilder").iter().map(|b| format!("{b:02x}")).collect();
    let key = format!("a{}", &digest[..24]);
    expect(&herdr(&env, &["name", &id, "crew", "builder"]), 0, "ok\n");
    assert_eq!(fake.take_calls(), [format!("agent|rename|w1:p4|{key}"), "pane|rename|w1:p4|crew:builder".to_owned()]);
    expect(&herdr(&env, &["name", &id, "crew", "builder", "key"]), 0, "ok\n");
    assert_eq!(fake.take_calls(), [format!("agent|rename|w1:p4|{key}")]);
    // A failed key is fatal, and the label is not attempted; a failed label is not.
    fake.exit("agent-rename", 1);
    expect(&herdr(&env, &["name", &id, "crew", "builder"]), 13, "runtime_error\n");
    assert_eq!(fake.take_calls(), [format!("agent|rename|w1:p4|{key}")]);
    fake.reset();
    fake.exit("pane-rename", 1);
    expect(&herdr(&env, &["name", &id, "crew", "builder"]), 0, "ok\n");
}

#[test]
fn herdr_pane_state_is_gone_only_on_a_positive_answer() {
    let (env, fake) = in_herdr();
    let id = herdr_id(PANE);
    let state = |id: &str| herdr(&env, &["pane-state", id]);

    fake.answer("agent-list", &agent_list(&[agent_entry("w1:p1"), agent_entry(PANE)]));
    expect(&state(&id), 0, "present\n");
    assert_eq!(fake.take_calls(), ["agent|list"]);
    // Every entry a readable, anchored pane, and ours not among them: gone.
    fake.answer("agent-list", &agent_list(&[agent_entry("w1:p1"), agent_entry("w1:p2")]));
    expect(&state(&id), 0, "gone\n");
    expect(&state(&format!("herdr:{id}")), 0, "gone\n");
    // A bare id names no instance: its absence here proves nothing.
    expect(&state(PANE), 10, "unknown\n");
    // One entry this driver cannot read: the pane could be hiding there.
    fake.answer("agent-list", &agent_list(&[agent_entry("w1:p1"), serde_json::json!({"pane_id": "w1:p2"})]));
    expect(&state(&id), 10, "unknown\n");
    fake.answer("agent-list", r#"{"result":{"agents":"none"}}"#);
    expect(&state(&id), 10, "unknown\n");
    fake.answer("agent-list", "not json");
    expect(&state(&id), 10, "unknown\n");
    fake.answer("agent-list", "");
    expect(&state(&id), 10, "unknown\n");
    fake.answer("agent-list", &agent_list(&[])).exit("agent-list", 1);
    expect(&state(&id), 10, "unknown\n");
    // An id of another instance is asked of that instance: HERDR_SOCKET_PATH set for the call, as
    // agmsg's driver does.
    fake.reset();
    let _ = std::fs::remove_file(fake.bin.join("sockets.log"));
    fake.answer("agent-list", &agent_list(&[agent_entry("w1:p1")]));
    expect(&state("/tmp/another-herdr.sock:w1:p4"), 0, "gone\n");
    assert_eq!(fake.take_calls(), ["agent|list"]);
    assert_eq!(std::fs::read_to_string(fake.bin.join("sockets.log")).unwrap(), "/tmp/another-herdr.sock\n");
}

#[test]
fn herdr_where_and_arrange() {
    let (env, fake) = in_herdr();
    let (p4, p5) = (herdr_id("w1:p4"), herdr_id("w1:p5"));
    fake.answer("pane-layout", LAYOUT);

    expect(&herdr(&env, &["where", &p4]), 0, "w1:t2\n");
    assert_eq!(fake.take_calls(), ["pane|layout|--pane|w1:p4"]);
    expect(&herdr(&env, &["where", &herdr_id("w1:p8")]), 10, "unknown\n");
    fake.take_calls();

    // p5 already sits below p4: unchanged, one read, no move.
    expect(&herdr(&env, &["arrange", &p5, "place_below", &p4]), 0, "unchanged\n");
    assert_eq!(fake.take_calls(), ["pane|layout|--pane|w1:p4"]);
    // Right of it is different: through a temporary tab, then back beside the target.
    fake.answer("pane-move", r#"{"result":{"move_result":{"changed":true,"created_tab":{"tab_id":"w1:t9"}}}}"#);
    expect(&herdr(&env, &["arrange", &p5, "place_right", &p4]), 0, "moved\n");
    assert_eq!(
        fake.take_calls(),
        [
            "pane|layout|--pane|w1:p4",
            "pane|move|w1:p5|--new-tab|--no-focus",
            "pane|move|w1:p5|--tab|w1:t2|--split|right|--target-pane|w1:p4|--no-focus",
        ]
    );
    // A move herdr does not report as changed is a failure (the pane may sit in the temporary tab).
    fake.answer_nth("pane-move", 4, r#"{"result":{"move_result":{"changed":false}}}"#);
    let run = herdr(&env, &["arrange", &p5, "place_right", &p4]);
    expect(&run, 12, "runtime_error\n");
    assert!(run.stderr.contains("left in temporary tab \"w1:t9\""), "{run:?}");
    fake.take_calls();

    // swap: both panes observed, then one native swap.
    fake.answer("pane-swap", r#"{"result":{"swap_result":{"changed":true}}}"#);
    expect(&herdr(&env, &["arrange", &p5, "swap", &p4]), 0, "moved\n");
    assert_eq!(
        fake.take_calls(),
        ["pane|layout|--pane|w1:p4", "pane|layout|--pane|w1:p5", "pane|swap|--source-pane|w1:p5|--target-pane|w1:p4"]
    );
    expect(&herdr(&env, &["arrange", &p4, "swap", &p4]), 13, "unsupported\n");
    // Two instances: refused before anything runs.
    fake.take_calls();
    expect(&herdr(&env, &["arrange", &p5, "place_below", "/tmp/another-herdr.sock:w1:p4"]), 10, "unknown\n");
    expect(&herdr(&env, &["arrange", &p5, "place_below", "w1:p4"]), 10, "unknown\n");
    assert!(!fake.log_exists());
}

#[test]
fn herdr_read_backs() {
    let (env, fake) = in_herdr();
    let id = herdr_id(PANE);
    fake.answer(
        "pane-list",
        r#"{"result":{"panes":[{"pane_id":"w1:p4","label":"crew:builder"},
          {"pane_id":"bad|id","label":"crew:builder"},{"pane_id":"w1:p5","label":"crew:other"}]}}"#,
    )
    .answer(
        "pane-get",
        r#"{"result":{"pane":{"pane_id":"w1:p4","label":"crew:builder","terminal_id":"term-77",
          "agent_status":"idle","terminal_title":"codex"}}}"#,
    );
    expect(&herdr(&env, &["find-by-label", "crew:builder"]), 0, &format!("{id}\n"));
    expect(&herdr(&env, &["label-of", &id]), 0, "crew:builder\n");
    expect(&herdr(&env, &["fence", &id]), 0, &format!("{SOCK}\tterm-77\n"));
    assert_eq!(fake.take_calls(), ["pane|list", "pane|get|w1:p4", "pane|get|w1:p4"]);
    expect(&herdr(&env, &["id-split", &id]), 0, &format!("{SOCK}\t{PANE}\n"));
    assert_eq!(herdr(&env, &["id-ok", &id]).code, 0);
    assert_eq!(herdr(&env, &["id-ok", "w1:p4;kill"]).code, 1);
    assert!(!fake.log_exists());
}

// ---------------------------------------------------------------------------------------------------
// orca

const HANDLE: &str = "term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba";

/// As if inside an Orca-hosted terminal, with a fake orca.
fn in_orca() -> (Env, Fake) {
    Fake::install(Env::new().env("TERM_PROGRAM", "Orca").env("ORCA_TERMINAL_HANDLE", HANDLE), "orca")
}

fn orca(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["--driver", "orca"];
    all.extend_from_slice(args);
    terminal(env, &all)
}

fn show(connected: &str) -> String {
    let terminal = format!(r#"{{"handle":"{HANDLE}","tabId":"tab-3","connected":{connected},"writable":{connected}}}"#);
    format!(r#"{{"ok":true,"result":{{"terminal":{terminal}}}}}"#)
}

#[test]
fn orca_detect_check_and_describe() {
    let (env, fake) = in_orca();
    expect(&orca(&env, &["detect", "s"]), 0, &format!("{HANDLE}\n"));
    expect(&orca(&env, &["check"]), 0, "ok\n");
    let describe = orca(&env, &["describe"]);
    for line in ["name=orca", "priority=5", "capabilities=peek where spawn despawn name poke", "syntax_help=orca terminal --help"] {
        assert!(describe.stdout.lines().any(|l| l == line), "{line}: {describe:?}");
    }
    assert!(!fake.log_exists());
    // A malformed handle: present, unresolved.
    let (env, _) = Fake::install(Env::new().env("TERM_PROGRAM", "Orca").env("ORCA_TERMINAL_HANDLE", "term_x\tinjected"), "orca");
    let run = orca(&env, &["detect", "s"]);
    expect(&run, 0, "");
    assert!(run.stderr.contains("ORCA_TERMINAL_HANDLE"), "{run:?}");
    // The handle alone, without Orca's marker, is not orca.
    let (env, _) = Fake::install(Env::new().env("ORCA_TERMINAL_HANDLE", HANDLE), "orca");
    assert_eq!(orca(&env, &["detect", "s"]).code, 1);
}

#[test]
fn orca_spawn_despawn_and_name() {
    let (env, fake) = in_orca();
    let new = "term_11111111-2222-3333-4444-555555555555";
    fake.answer("terminal-create", &format!(r#"{{"ok":true,"result":{{"terminal":{{"handle":"{new}"}}}}}}"#));
    expect(&orca(&env, &["spawn", "worker", "/work/proj", "pane-h", "codex", "--yolo", "a b"]), 0, &format!("{new}\n"));
    // `--command` is a shell line: a word that is not plain is single-quoted, so it stays one word.
    assert_eq!(fake.take_calls(), ["terminal|create|--worktree|path:/work/proj|--title|worker|--command|codex --yolo 'a b'|--json"]);
    fake.answer("terminal-create", r#"{"ok":true,"result":{"terminal":{"handle":"term_bad\nhandle"}}}"#);
    expect(&orca(&env, &["spawn", "worker", "/work/proj", "window", "codex"]), 13, "");
    fake.answer("terminal-create", r#"{"ok":false,"error":{"code":"worktree_not_found"}}"#);
    expect(&orca(&env, &["spawn", "worker", "/work/proj", "window", "codex"]), 13, "");

    // despawn: close, then only a positively confirmed connected:false is success.
    fake.reset();
    fake.answer("terminal-close", r#"{"ok":true,"result":{"ptyKilled":true}}"#).answer("terminal-show", &show("false"));
    expect(&orca(&env, &["despawn", &format!("orca:{HANDLE}")]), 0, "ok\n");
    assert_eq!(
        fake.take_calls(),
        [format!("terminal|close|--terminal|{HANDLE}|--json"), format!("terminal|show|--terminal|{HANDLE}|--json")]
    );
    fake.answer("terminal-show", &show("true"));
    expect(&orca(&env, &["despawn", HANDLE]), 13, "runtime_error\n");

    // name: the one name orca has, the tab title; key mode is the same call.
    fake.reset();
    fake.answer("terminal-rename", r#"{"ok":true,"result":{}}"#);
    expect(&orca(&env, &["name", HANDLE, "crew", "builder"]), 0, "ok\n");
    expect(&orca(&env, &["name", &format!("local:{HANDLE}"), "crew", "builder", "key"]), 0, "ok\n");
    let rename = format!("terminal|rename|--terminal|{HANDLE}|--title|crew:builder|--json");
    assert_eq!(fake.take_calls(), [rename.clone(), rename]);
    fake.answer("terminal-rename", r#"{"ok":false,"error":{"code":"terminal_handle_stale"}}"#);
    expect(&orca(&env, &["name", HANDLE, "crew", "builder"]), 13, "runtime_error\n");
}

#[test]
fn orca_peek_and_poke() {
    let (env, fake) = in_orca();
    fake.answer("terminal-read", r#"{"ok":true,"result":{"terminal":{"tail":["$ ls","a  b",""]}}}"#);
    expect(&orca(&env, &["peek", HANDLE]), 0, "$ ls\na  b\n\n");
    expect(&orca(&env, &["peek", HANDLE, "--lines", "3"]), 0, "$ ls\na  b\n\n");
    assert_eq!(
        fake.take_calls(),
        [
            format!("terminal|read|--terminal|{HANDLE}|--screen|--json"),
            format!("terminal|read|--terminal|{HANDLE}|--screen|--limit|3|--json"),
        ]
    );
    for (answer, code) in [
        (r#"{"ok":false,"error":{"code":"runtime_unavailable"}}"#, 10),
        (r#"{"ok":false,"error":{"code":"terminal_handle_stale"}}"#, 12),
        (r#"{"ok":true,"result":{"terminal":{"tail":"flat"}}}"#, 12),
        (r#"{"ok":true,"result":{"terminal":{"tail":["a",null]}}}"#, 12),
        ("not json", 12),
        ("", 12),
    ] {
        fake.answer("terminal-read", answer);
        expect(&orca(&env, &["peek", HANDLE]), code, "");
    }

    fake.reset();
    let text = "hi there; $(x) `y`";
    fake.answer("terminal-send", r#"{"ok":true,"result":{"send":{"accepted":true}}}"#);
    expect(&orca(&env, &["poke", HANDLE, text]), 0, "ok\n");
    assert_eq!(fake.take_calls(), [format!("terminal|send|--terminal|{HANDLE}|--text|{text}|--enter|--json")]);
    // The envelope is not the receipt.
    fake.answer("terminal-send", r#"{"ok":true,"result":{"send":{"accepted":false}}}"#);
    expect(&orca(&env, &["poke", HANDLE, text]), 12, "runtime_error\n");
    fake.answer("terminal-send", r#"{"ok":true,"result":{"send":{"accepted":"yes"}}}"#);
    expect(&orca(&env, &["poke", HANDLE, text]), 12, "runtime_error\n");
    fake.answer("terminal-send", r#"{"ok":false,"error":{"code":"runtime_unavailable"}}"#);
    expect(&orca(&env, &["poke", HANDLE, text]), 10, "runtime_error\n");
}

#[test]
fn orca_pane_state_where_and_arrange() {
    let (env, fake) = in_orca();
    fake.answer("terminal-show", &show("true"));
    expect(&orca(&env, &["pane-state", HANDLE]), 0, "present\n");
    expect(&terminal(&env, &["pane-state", &format!("orca:{HANDLE}")]), 0, "present\n");
    expect(&orca(&env, &["where", HANDLE]), 0, "tab-3\n");
    assert_eq!(fake.take_calls(), vec![format!("terminal|show|--terminal|{HANDLE}|--json"); 3]);
    fake.answer("terminal-show", &show("false"));
    expect(&orca(&env, &["pane-state", HANDLE]), 0, "gone\n");
    // A stale handle, the runtime down, or an unreadable answer is never gone.
    for answer in [
        r#"{"ok":false,"error":{"code":"terminal_handle_stale"}}"#.to_owned(),
        r#"{"ok":false,"error":{"code":"runtime_unavailable"}}"#.to_owned(),
        show("null"),
        show("\"false\""),
        "not json".to_owned(),
        String::new(),
    ] {
        fake.answer("terminal-show", &answer);
        expect(&orca(&env, &["pane-state", HANDLE]), 10, "unknown\n");
    }
    fake.answer("terminal-show", r#"{"ok":true,"result":{"terminal":{"connected":true}}}"#);
    expect(&orca(&env, &["where", HANDLE]), 10, "unknown\n");
    // No reordering verb in orca.
    fake.take_calls();
    expect(&orca(&env, &["arrange", HANDLE, "place_below", HANDLE]), 13, "unsupported\n");
    assert!(!fake.log_exists());
    expect(&orca(&env, &["id-split", &format!("local:{HANDLE}")]), 0, &format!("local\t{HANDLE}\n"));
    expect(&orca(&env, &["instance-for-ref", &format!("orca:{HANDLE}")]), 0, &format!("local\t{HANDLE}\n"));
    expect(&orca(&env, &["instance-for-ref", "tmux:/tmp/s:%1"]), 0, "unknown:wrong_terminal\n");
}

// ---------------------------------------------------------------------------------------------------
// Both

#[test]
fn hostile_ids_run_nothing() {
    for (driver, ids) in [
        ("herdr", vec!["w1:p4;kill", "/tmp/s:w1:p4\n", "w1:p4 && touch x", ":w1:p4", "tmp/s:w1:p4", "%3"]),
        ("orca", vec!["term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba;kill", "remote:term_ea11f227-ca2c-44b0-a3e6-75c62b9f20ba", "term_x"]),
    ] {
        let (env, fake) = if driver == "herdr" { in_herdr() } else { in_orca() };
        for id in ids {
            for (op, stdout) in [
                (vec!["peek", id], ""),
                (vec!["poke", id, "text"], "runtime_error\n"),
                (vec!["despawn", id], "runtime_error\n"),
                (vec!["pane-state", id], "unknown\n"),
                (vec!["where", id], "unsupported\n"),
                (vec!["name", id, "crew", "builder"], "runtime_error\n"),
                (vec!["arrange", id, "swap", id], "unsupported\n"),
            ] {
                let mut args = vec!["--driver", driver];
                args.extend(&op);
                let run = terminal(&env, &args);
                assert_eq!((run.code, run.stdout.as_str()), (13, stdout), "{driver} {op:?}: {run:#?}");
            }
            // As a placement reference too.
            let run = terminal(&env, &["peek", &format!("{driver}:{id}")]);
            assert_eq!(run.code, 13, "{driver}:{id}: {run:#?}");
        }
        assert!(!fake.log_exists(), "{driver} ran for a hostile id: {:?}", fake.take_calls());
    }
}

#[test]
fn resolution_with_herdr_orca_and_tmux() {
    // herdr inside tmux: herdr is present (HERDR_ENV=1) but has no usable pane id, and its agent list
    // cannot resolve the session, so the live tmux underneath names the pane.
    let nested = || {
        Env::new()
            .env("HERDR_ENV", "1")
            .env("HERDR_SOCKET_PATH", SOCK)
            .env("HERDR_PANE_ID", "not-a-pane")
            .env("TMUX", "/tmp/x,1,0")
            .env("TMUX_PANE", "%3")
    };
    let (env, fake) = Fake::install(nested(), "herdr");
    fake.exit("agent-list", 1);
    expect(&terminal(&env, &["resolve-name", "s"]), 0, "tmux\t/tmp/x:%3\n");
    assert_eq!(fake.take_calls(), ["agent|list"]);
    // Placement needs presence only: herdr (10) comes before tmux (20).
    expect(&terminal(&env, &["resolve-placement", "s"]), 0, "herdr\t\n");
    // The same with an agent list that answers, without this session.
    fake.reset();
    fake.answer("agent-list", &agent_list(&[agent_entry("w1:p1")]));
    expect(&terminal(&env, &["resolve-name", "s"]), 0, "tmux\t/tmp/x:%3\n");

    // With a good HERDR_PANE_ID, herdr wins.
    let (env, fake) = Fake::install(nested().env("HERDR_PANE_ID", PANE), "herdr");
    expect(&terminal(&env, &["resolve-name", "s"]), 0, &format!("herdr\t{}\n", herdr_id(PANE)));
    expect(&terminal(&env, &["resolve-placement", "s"]), 0, &format!("herdr\t{}\n", herdr_id(PANE)));
    assert!(!fake.log_exists());

    // herdr present but unresolved and nothing else to name the pane: a loud failure, not plain.
    let (env, fake) = Fake::install(Env::new().env("HERDR_ENV", "1").env("HERDR_SOCKET_PATH", SOCK), "herdr");
    fake.exit("agent-list", 1);
    let run = terminal(&env, &["resolve-name", "s"]);
    expect(&run, 10, "");
    assert!(run.stderr.contains("herdr:"), "{run:?}");

    // orca by its environment; with herdr and tmux around too, orca (5) comes first.
    let (env, _) = Fake::install(Env::new().env("TERM_PROGRAM", "Orca").env("ORCA_TERMINAL_HANDLE", HANDLE), "orca");
    expect(&terminal(&env, &["resolve-name", "s"]), 0, &format!("orca\t{HANDLE}\n"));
    let everything = nested().env("HERDR_PANE_ID", PANE).env("TERM_PROGRAM", "Orca").env("ORCA_TERMINAL_HANDLE", HANDLE);
    expect(&terminal(&everything, &["resolve-name", "s"]), 0, &format!("orca\t{HANDLE}\n"));

    // The list shows both, in priority order before tmux.
    let run = terminal(&Env::new(), &["list", "--json"]);
    let drivers: serde_json::Value = serde_json::from_str(&run.ok().stdout).unwrap();
    let names: Vec<&str> = drivers.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["orca", "herdr", "tmux", "plain"]);
}
