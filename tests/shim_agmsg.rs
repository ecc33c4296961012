//! A third-party storage driver used through agmsg, and shims that never fail silently: a shim names
//! its plugin, so every call through it is resolved and trust-checked as `agmsg-host --driver <name>`
//! is (an untrusted or changed plugin refused with the same words and exit code); `shim install` writes
//! a shim for every trusted storage plugin, which agmsg 1.2.1's own `send.sh` and `inbox.sh` then use
//! when it is selected the way agmsg selects drivers (`AGMSG_STORAGE_DRIVER`, `storage switch`), and
//! untrusting it stops it in agmsg too; a shim whose agmsg-host is gone answers runtime_error (13)
//! saying what to do; `AGMSG_HOME` is agmsg-host's home, never the store.
//!
//! agmsg 1.2.1 is installed from its release tree (`AGMSG_REFERENCE_TREE`, else `../shared/agmsg-1.2.1`
//! beside this repository, copied first: it is read-only) with its own `install.sh`, offline, into the
//! test's home; without that tree those tests are skipped, saying so (a failure with
//! `AGMSG_REQUIRE_REFERENCE=1`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{Env, Run, build_project};

/// The plugin's name: a storage driver as `driver new storage` makes it (a small working store).
const PLUGIN: &str = "shimstore";

/// Its project, made by `driver new` and built from source once per run: (component, manifest).
fn plugin_package() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let project = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shim-agmsg-plugin");
        let _ = std::fs::remove_dir_all(&project);
        let run: Run =
            Command::new(common::BIN).args(["driver", "new", "storage", PLUGIN, "--path"]).arg(&project).output().unwrap().into();
        assert_eq!(run.code, 0, "{run:?}");
        (build_project(&project, PLUGIN), project.join("agmsg-driver.toml"))
    })
}

/// `plugin install` of the plugin, trusted (`--yes`), into the env's home.
fn install_plugin(env: &Env) {
    let (wasm, manifest) = plugin_package();
    let run = env.run(&["plugin", "install", wasm.to_str().unwrap(), "--manifest", manifest.to_str().unwrap(), "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// The installed plugin's component.
fn component(env: &Env) -> PathBuf {
    env.dir.path().join(".agents/agmsg/plugins/storage").join(PLUGIN).join("driver.wasm")
}

/// agmsg 1.2.1's release tree, or `None` (skipped, saying why: `common::reference`).
fn agmsg_tree() -> Option<PathBuf> {
    common::reference::tree(&["bash", "sqlite3"])
}

/// agmsg 1.2.1 installed into the env's home by its own `install.sh` (offline), from a copy of its
/// tree; its install directory (`~/.agents/skills/agmsg`), or `None` as [`agmsg_tree`] says.
fn install_agmsg(env: &Env) -> Option<PathBuf> {
    let tree = agmsg_tree()?;
    let copy = env.dir.path().join("agmsg-1.2.1");
    let copied = Command::new("cp").arg("-R").arg(&tree).arg(&copy).output().unwrap();
    assert!(copied.status.success(), "{copied:?}");
    let run: Run = env.program("bash").arg(copy.join("install.sh")).args(["--cmd", "agmsg"]).output().unwrap().into();
    assert_eq!(run.code, 0, "agmsg's install.sh: {run:?}");
    let skill = env.dir.path().join(".agents/skills/agmsg");
    assert!(skill.join("scripts/send.sh").is_file(), "{run:?}");
    Some(skill)
}

/// agmsg's `scripts/<script> <args>` in the env, with `vars` set.
fn agmsg(env: &Env, skill: &Path, vars: &[(&str, &str)], script: &str, args: &[&str]) -> Run {
    let mut cmd = env.program("bash");
    cmd.arg(skill.join("scripts").join(script)).args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap().into()
}

/// Two agents of team t1, joined by agmsg's own `join.sh`.
fn join_team(env: &Env, skill: &Path) {
    for (agent, project) in [("alice", "proj-a"), ("bob", "proj-b")] {
        let project = env.dir.path().join(project);
        std::fs::create_dir_all(&project).unwrap();
        let run = agmsg(env, skill, &[], "join.sh", &["t1", agent, "claude-code", project.to_str().unwrap()]);
        assert_eq!(run.code, 0, "join {agent}: {run:?}");
    }
}

/// Append a custom section to a component: still a valid component, but not the one trusted.
fn change_component(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes.extend_from_slice(&[0, 5, 4, b'e', b'v', b'i', b'l']);
    std::fs::write(path, bytes).unwrap();
}

/// `storage send` through the shim `shim` (sourced, as agmsg does) and with `--driver` directly: each
/// as (exit code, stderr).
fn send_both_ways(env: &Env, shim: &Path, body: &str) -> ((i32, String), (i32, String)) {
    let through: Run = env
        .program("bash")
        .arg("-c")
        .arg("source \"$1\"; storage_send t alice bob \"$2\"")
        .arg("bash")
        .arg(shim)
        .arg(body)
        .output()
        .unwrap()
        .into();
    let direct = env.run(&["--driver", PLUGIN, "storage", "send", "t", "alice", "bob", body]);
    ((through.code, through.stderr), (direct.code, direct.stderr))
}

/// The shim names the plugin, not its component: untrusted, or its component replaced, the plugin is
/// refused through the shim exactly as `--driver <plugin>` refuses it (before, the shim ran the
/// component's path and stored the message).
#[test]
fn a_shim_names_its_plugin_and_every_call_checks_trust_as_driver_does() {
    let env = Env::new();
    install_plugin(&env);
    let shim = env.dir.path().join(format!("{PLUGIN}.sh"));
    let run = env.run(&["--driver", PLUGIN, "shim", "storage", "--output", shim.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let text = std::fs::read_to_string(&shim).unwrap();
    assert!(
        text.contains(&format!("_agmsg_host_storage_driver={PLUGIN}\n"))
            || text.contains(&format!("_agmsg_host_storage_driver='{PLUGIN}'\n")),
        "by name: {text}"
    );
    assert!(!text.contains("driver.wasm"), "never the component's path: {text}");
    // The selector agmsg loads it by is the file's name.
    assert!(run.stderr.contains(&format!("AGMSG_STORAGE_DRIVER={PLUGIN} ")), "{run:?}");

    let (through, direct) = send_both_ways(&env, &shim, "trusted");
    assert_eq!((through.0, direct.0), (0, 0), "{through:?} {direct:?}");

    let run = env.run(&["plugin", "untrust", &format!("storage/{PLUGIN}")]);
    assert_eq!(run.code, 0, "{run:?}");
    let (through, direct) = send_both_ways(&env, &shim, "untrusted");
    assert_ne!(direct.0, 0, "{direct:?}");
    assert_eq!(through, direct, "through the shim as with --driver");

    let run = env.run(&["plugin", "trust", &format!("storage/{PLUGIN}"), "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(send_both_ways(&env, &shim, "trusted again").0.0, 0);
    change_component(&component(&env));
    let (through, direct) = send_both_ways(&env, &shim, "changed");
    assert!(direct.0 != 0 && direct.1.contains("changed"), "{direct:?}");
    assert_eq!(through, direct, "through the shim as with --driver");

    // Only what was trusted was stored.
    let run = env.run(&["plugin", "trust", &format!("storage/{PLUGIN}"), "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    let unread = env.run(&["--driver", PLUGIN, "storage", "list-unread", "t", "bob"]);
    let bodies: Vec<String> =
        unread.stdout.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(bodies, ["trusted", "trusted", "trusted again", "trusted again"], "{unread:?}");
}

/// `shim storage`'s selector is the file's name (agmsg loads `storage/<name>.sh`): the hint names it,
/// and a `--name` that differs from the file is a usage error.
#[test]
fn the_shims_selector_is_its_file_name() {
    let env = Env::new();
    let out = env.dir.path().join("scripts/drivers/storage");
    std::fs::create_dir_all(&out).unwrap();
    let file = out.join("my-store.sh");
    let run = env.run(&["--driver", "jsonl", "shim", "storage", "--output", file.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("AGMSG_STORAGE_DRIVER=my-store ") && !run.stderr.contains("host-jsonl"), "{run:?}");
    assert!(std::fs::read_to_string(&file).unwrap().contains("select it with AGMSG_STORAGE_DRIVER=my-store"));
    let run = env.run(&["--driver", "jsonl", "shim", "storage", "--name", "other", "--output", file.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("file's name"), "{run:?}");
}

/// `AGMSG_HOME` is agmsg-host's home (its plugins and their trust), never the store: with it set and
/// no `AGMSG_STORAGE_PATH`, the store is agmsg's default one (`~/.agents/skills/agmsg/db`).
#[test]
fn agmsg_home_is_the_plugin_home_and_never_the_store() {
    let env = Env::new();
    let home = env.dir.path().join("host-home");
    let run: Run = env
        .cmd()
        .env_remove("AGMSG_STORAGE_PATH")
        .env("AGMSG_HOME", &home)
        .args(["storage", "send", "t", "alice", "bob", "hi"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!home.join("db").exists(), "AGMSG_HOME/db is not the store");
    assert!(env.dir.path().join(".agents/skills/agmsg/db/messages.db").is_file(), "agmsg's default store");
    let (wasm, manifest) = plugin_package();
    let run: Run = env
        .cmd()
        .env("AGMSG_HOME", &home)
        .args(["plugin", "install", wasm.to_str().unwrap(), "--manifest", manifest.to_str().unwrap(), "--yes"])
        .output()
        .unwrap()
        .into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(home.join("plugins/storage").join(PLUGIN).join("driver.wasm").is_file() && home.join("trusted-plugins.json").is_file());
}

/// The one flow, against agmsg 1.2.1 itself: install and trust a driver once, `shim install`, select it
/// as agmsg selects drivers, and agmsg's `send.sh` and `inbox.sh` use it; untrusted, it stops in agmsg
/// with agmsg-host's refusal (non-zero). `storage switch` to a driver agmsg could not load is refused,
/// saying what to run, rather than leaving every agmsg command failing.
#[test]
fn agmsg_uses_a_trusted_plugin_after_shim_install_and_stops_when_it_is_untrusted() {
    let env = Env::new();
    let Some(skill) = install_agmsg(&env) else { return };
    install_plugin(&env);
    join_team(&env, &skill);
    let config = env.dir.path().join(".agents/agmsg/config.json");

    // Before shim install agmsg has no such driver: switching to it is refused, nothing changed.
    let run = env.run(&["storage", "switch", PLUGIN]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains(&format!("agmsg-host shim install {}", skill.display())), "{run:?}");
    assert!(!std::fs::read_to_string(&config).unwrap_or_default().contains(PLUGIN));

    let run = env.run(&["shim", "install", skill.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains(&format!("scripts/drivers/storage/{PLUGIN}.sh")), "{run:?}");

    // Selected by AGMSG_STORAGE_DRIVER.
    let select = [("AGMSG_STORAGE_DRIVER", PLUGIN)];
    let run = agmsg(&env, &skill, &select, "send.sh", &["t1", "alice", "bob", "through the plugin"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(env.store.join("store.json").is_file(), "the plugin's own store file: {run:?}");
    let run = agmsg(&env, &skill, &select, "inbox.sh", &["t1", "bob"]);
    assert!(run.code == 0 && run.stdout.contains("through the plugin"), "{run:?}");

    // Selected by agmsg's config, through `storage switch`.
    let run = env.run(&["storage", "switch", PLUGIN]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(std::fs::read_to_string(&config).unwrap().contains(PLUGIN));
    let run = agmsg(&env, &skill, &[], "send.sh", &["t1", "alice", "bob", "selected by the config"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = agmsg(&env, &skill, &[], "inbox.sh", &["t1", "bob"]);
    assert!(run.code == 0 && run.stdout.contains("selected by the config") && !run.stdout.contains("through the plugin"), "{run:?}");

    // Untrusted: agmsg's commands stop with agmsg-host's refusal, never "No new messages".
    let run = env.run(&["plugin", "untrust", &format!("storage/{PLUGIN}")]);
    assert_eq!(run.code, 0, "{run:?}");
    let trust_command = format!("agmsg-host plugin trust storage/{PLUGIN}");
    let run = agmsg(&env, &skill, &[], "send.sh", &["t1", "alice", "bob", "after untrust"]);
    assert!(run.code != 0 && run.stderr.contains(&trust_command), "{run:?}");
    let run = agmsg(&env, &skill, &[], "inbox.sh", &["t1", "bob"]);
    assert!(run.code == 13 && run.stderr.contains(&trust_command) && !run.stdout.contains("No new messages"), "{run:?}");
}

/// Shims find agmsg-host by the path the user ran it by (a link kept, not resolved), and once it is
/// gone from there every agmsg command through a shim fails with runtime_error (13), saying so and what
/// to run, where agmsg 1.2.1's `inbox.sh`, `history.sh` and `check-inbox.sh` used to answer "no
/// messages" (0) and `send.sh` 127.
#[test]
fn with_agmsg_host_gone_agmsgs_commands_fail_saying_what_to_do() {
    let env = Env::new();
    let Some(skill) = install_agmsg(&env) else { return };
    join_team(&env, &skill);
    // agmsg-host as a user installs it: a link on PATH to the build.
    let bin_dir = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let link = bin_dir.join("agmsg-host");
    std::os::unix::fs::symlink(common::BIN, &link).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let run: Run = env.program("agmsg-host").env("PATH", &path).args(["shim", "install", skill.to_str().unwrap()]).output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    let shim = std::fs::read_to_string(skill.join("scripts/drivers/storage/sqlite.sh")).unwrap();
    assert!(shim.contains(&format!("_agmsg_host_storage_bin='{}'\n", link.display())), "the link's path, not where it leads: {shim}");
    let run = agmsg(&env, &skill, &[], "send.sh", &["t1", "alice", "bob", "before the move"]);
    assert_eq!(run.code, 0, "{run:?}");

    std::fs::remove_file(&link).unwrap();
    let advice = format!("agmsg-host shim install {}", skill.display());
    let project_b = env.dir.path().join("proj-b");
    for (script, args) in [
        ("send.sh", vec!["t1", "alice", "bob", "after the move"]),
        ("inbox.sh", vec!["t1", "bob"]),
        ("history.sh", vec!["t1"]),
        ("check-inbox.sh", vec!["claude-code", project_b.to_str().unwrap()]),
    ] {
        let run = agmsg(&env, &skill, &[], script, &args);
        assert_eq!(run.code, 13, "{script}: {run:?}");
        assert!(
            run.stderr.contains(&format!("agmsg-host: cannot run {}", link.display())) && run.stderr.contains(&advice),
            "{script}: {run:?}"
        );
        assert!(!run.stdout.contains("No new messages") && !run.stdout.contains("No message history"), "{script}: {run:?}");
    }
}

/// `agmsg-host send` refuses what agmsg 1.2.1's `send.sh` refuses once agmsg's registry is there: an
/// unregistered recipient, sender or team (exit 1, nothing sent), unless `--force`; and a body piped
/// with `-` is stored as `send.sh t a b "$(cat)"` stores it (trailing newlines dropped). Before, both
/// unregistered sends printed an id and exited 0, and `echo x | send ... -` stored "x\n".
#[test]
fn agmsg_host_send_refuses_what_agmsgs_send_refuses_and_reads_a_piped_body_as_agmsg_does() {
    let env = Env::new();
    let Some(skill) = install_agmsg(&env) else { return };
    join_team(&env, &skill);
    for (team, from, to) in [("t1", "alice", "nobody"), ("t1", "nobody", "bob"), ("nosuchteam", "zed", "yan")] {
        let theirs = agmsg(&env, &skill, &[], "send.sh", &[team, from, to, "hi"]);
        assert_eq!(theirs.code, 1, "agmsg's send.sh refuses {team}/{from}->{to}: {theirs:?}");
        let ours = env.run(&["send", team, from, to, "hi"]);
        assert_eq!((ours.code, ours.stdout.as_str()), (1, ""), "{team}/{from}->{to}: {ours:?}");
        assert!(ours.stderr.contains("--force") && ours.stderr.contains("nothing was sent"), "{ours:?}");
    }
    let history = env.run(&["history", "t1", "--json"]);
    assert_eq!((history.code, history.stdout.as_str()), (0, ""), "nothing was sent: {history:?}");
    let forced = env.run(&["send", "t1", "alice", "nobody", "before nobody joins", "--force"]);
    assert_eq!(forced.code, 0, "{forced:?}");

    // The same piped body, through agmsg's send.sh and through agmsg-host's `-`.
    let theirs: Run = env
        .program("bash")
        .arg("-c")
        .arg("bash \"$1\" t1 alice bob \"$(printf 'piped\\n\\n')\"")
        .arg("bash")
        .arg(skill.join("scripts/send.sh"))
        .output()
        .unwrap()
        .into();
    assert_eq!(theirs.code, 0, "{theirs:?}");
    let ours = env.run_stdin(&["send", "t1", "alice", "bob", "-"], b"piped\n\n");
    assert_eq!(ours.code, 0, "{ours:?}");
    let bodies: Vec<String> =
        env.run(&["history", "t1", "bob", "--json"]).json().iter().map(|m| m["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(bodies, ["piped", "piped"]);
}

/// A message read with `agmsg-host inbox` or `watch` has the receipt agmsg 1.2.1's `inbox.sh` and
/// `watch.sh` record (sqlite's hand-off audit): agmsg's `message-status.sh` counts it as handed off,
/// not as an unknown legacy read marker. Before, both counted 2 unknown and 0 handed off.
#[test]
fn a_message_read_with_agmsg_host_inbox_or_watch_is_handed_off_for_agmsg() {
    use std::io::BufRead;
    let env = Env::new();
    let Some(skill) = install_agmsg(&env) else { return };
    join_team(&env, &skill);
    let run = agmsg(&env, &skill, &[], "send.sh", &["t1", "alice", "bob", "read by inbox"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = env.run(&["inbox", "t1", "bob"]);
    assert!(run.code == 0 && run.stdout.contains("read by inbox"), "{run:?}");

    let mut watch =
        env.cmd().args(["watch", "t1", "bob", "--json", "--interval", "0.1"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let run = agmsg(&env, &skill, &[], "send.sh", &["t1", "alice", "bob", "read by watch"]);
    assert_eq!(run.code, 0, "{run:?}");
    let mut line = String::new();
    std::io::BufReader::new(watch.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("read by watch"), "{line}");
    // The receipt follows the consume, right after the line is printed: wait for it, bounded.
    let status = || agmsg(&env, &skill, &[], "message-status.sh", &["t1", "bob"]);
    let started = std::time::Instant::now();
    let mut run = status();
    while !run.stdout.contains("handed off: 2") && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        run = status();
    }
    let _ = watch.kill();
    let _ = watch.wait();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("handed off: 2") && run.stdout.contains("unknown legacy read marker: 0"), "{run:?}");
}

/// `plugin trust` of a plugin already trusted, unchanged (same component, same manifest, asking for the
/// same), without a terminal and without `--yes`: a no-op that succeeds, what it runs with unchanged.
/// Before, it exited 1 asking for consent again ("no terminal to ask").
#[test]
fn trusting_an_unchanged_trusted_plugin_again_is_a_no_op() {
    let env = Env::new();
    install_plugin(&env);
    let trust_file = env.dir.path().join(".agents/agmsg/trusted-plugins.json");
    let before: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    let run = env.cmd().args(["plugin", "trust", &format!("storage/{PLUGIN}")]).stdin(std::process::Stdio::null()).output().unwrap();
    let run: Run = run.into();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with(&format!("trusted storage/{PLUGIN} at ")), "{run:?}");
    let after: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trust_file).unwrap()).unwrap();
    assert_eq!(after, before, "the trust record is unchanged");
    // Changed, it is asked about again (refused without a terminal), and stays untrusted.
    change_component(&component(&env));
    let run: Run =
        env.cmd().args(["plugin", "trust", &format!("storage/{PLUGIN}")]).stdin(std::process::Stdio::null()).output().unwrap().into();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no terminal to ask for consent"), "{run:?}");
}

/// agmsg's `scripts/<script> <args>` on the jsonl store, which must succeed.
fn agmsg_jsonl(env: &Env, skill: &Path, script: &str, args: &[&str]) -> Run {
    let run = agmsg(env, skill, &[("AGMSG_STORAGE_DRIVER", "jsonl")], script, args);
    assert_eq!(run.code, 0, "{script} {args:?}: {run:?}");
    run
}

/// Every file below `dir` (relative path → mode), the host's cache directory left out.
fn modes(dir: &Path) -> std::collections::BTreeMap<String, u32> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            let rel = e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if meta.is_dir() {
                todo.push(e.path());
            } else {
                out.insert(rel, meta.permissions().mode() & 0o7777);
            }
        }
    }
    out
}

/// Issue 35 §4: a store agmsg-host has used through the shims is still agmsg's. Its jsonl store used by
/// agmsg's own scripts, then through the shims: every file agmsg made keeps the mode agmsg gave it (its
/// read cursors are 0600), a file the driver renames into place under a new name gets agmsg's
/// (`mktemp`'s: no group or other bits), and agmsg's own reads of the store, after `shim uninstall`,
/// see every message.
#[test]
fn files_keep_agmsgs_modes_and_agmsgs_reads_are_unaffected() {
    let env = Env::new();
    let Some(skill) = install_agmsg(&env) else { return };
    for (agent, project) in [("alice", "proj-a"), ("bob", "proj-b")] {
        let project = env.dir.path().join(project);
        std::fs::create_dir_all(&project).unwrap();
        agmsg_jsonl(&env, &skill, "join.sh", &["t1", agent, "claude-code", project.to_str().unwrap()]);
    }
    agmsg_jsonl(&env, &skill, "send.sh", &["t1", "alice", "bob", "from agmsg"]);
    agmsg_jsonl(&env, &skill, "inbox.sh", &["t1", "bob"]);
    let db = env.store.clone();
    let before = modes(&db);
    assert_eq!(before.get("read-cursors.tsv"), Some(&0o600), "agmsg's own cursors: {before:?}");

    let install = env.run(&["shim", "install", skill.to_str().unwrap()]);
    assert_eq!(install.code, 0, "{install:?}");
    agmsg_jsonl(&env, &skill, "send.sh", &["t1", "alice", "bob", "through the shim"]);
    agmsg_jsonl(&env, &skill, "inbox.sh", &["t1", "bob"]);
    agmsg_jsonl(&env, &skill, "send.sh", &["t1", "bob", "alice", "a reply"]);
    agmsg_jsonl(&env, &skill, "history.sh", &["t1", "alice"]);
    let after = modes(&db);
    for (file, mode) in &before {
        assert_eq!(after.get(file), Some(mode), "{file} keeps agmsg's mode {mode:o}: {after:?}");
    }

    // A store whose cursors agmsg-host writes first: agmsg's mode for them all the same.
    std::fs::remove_file(db.join("read-cursors.tsv")).unwrap();
    agmsg_jsonl(&env, &skill, "inbox.sh", &["t1", "alice"]);
    assert_eq!(modes(&db).get("read-cursors.tsv"), Some(&0o600), "new cursors as agmsg makes them");

    // agmsg's own reads, agmsg-host gone from its scripts, see every message.
    let uninstall = env.run(&["shim", "uninstall", skill.to_str().unwrap()]);
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    // Not on a terminal, the cache is kept by default, and the line says how to remove it.
    let cache = db.join(".events-index");
    assert!(cache.is_dir(), "{uninstall:?}");
    assert!(
        uninstall.stdout.contains(&format!("keep      {} (agmsg-host's cache: `shim uninstall --remove-caches`", cache.display())),
        "{uninstall:?}"
    );
    let history = agmsg_jsonl(&env, &skill, "history.sh", &["t1", "bob"]);
    for body in ["from agmsg", "through the shim", "a reply"] {
        assert!(history.stdout.contains(body), "{body}: {history:?}");
    }
    agmsg_jsonl(&env, &skill, "send.sh", &["t1", "alice", "bob", "after"]);
    let inbox = agmsg_jsonl(&env, &skill, "inbox.sh", &["t1", "bob"]);
    assert!(inbox.stdout.contains("after") && !inbox.stdout.contains("through the shim"), "only the new one is unread: {inbox:?}");

    // --remove-caches removes only the cache; install takes no such option.
    let dir = skill.to_str().unwrap();
    assert_eq!(env.run(&["shim", "install", dir, "--remove-caches"]).code, 2);
    assert_eq!(env.run(&["shim", "install", dir]).code, 0);
    agmsg_jsonl(&env, &skill, "inbox.sh", &["t1", "bob"]);
    assert!(cache.is_dir());
    let uninstall = env.run(&["shim", "uninstall", dir, "--remove-caches"]);
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    assert!(uninstall.stdout.contains(&format!("remove    {} (agmsg-host's cache)", cache.display())), "{uninstall:?}");
    assert!(!cache.exists() && db.join("events.jsonl").is_file() && db.join("read-cursors.tsv").is_file());
    let history = agmsg_jsonl(&env, &skill, "history.sh", &["t1", "bob"]);
    assert!(history.stdout.contains("after") && history.stdout.contains("from agmsg"), "{history:?}");
}

/// Every file and directory below `dir` (relative path, a directory's with a trailing '/') → mode.
fn modes_with_dirs(dir: &Path) -> std::collections::BTreeMap<String, u32> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            let mut rel = e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if meta.is_dir() {
                todo.push(e.path());
                rel.push('/');
            }
            out.insert(rel, meta.permissions().mode() & 0o7777);
        }
    }
    out
}

/// Issue 35 §4: a store that agmsg-host's drivers start, through the shims, has the modes agmsg's own
/// drivers give theirs: each file both make (the jsonl log, its migration marker, the read cursors,
/// sqlite's database) has agmsg's mode, and what only agmsg-host makes is private (no group or other
/// bits: the jsonl index `.events-index/` and its files; sqlite's kept journal has the database's
/// mode, as sqlite gives it). agmsg's own reads of that store, the shims uninstalled, see every message.
#[test]
fn a_store_started_through_the_shims_has_agmsgs_modes() {
    for driver in ["jsonl", "sqlite"] {
        let mut made = Vec::new();
        for through_shims in [false, true] {
            let env = Env::new();
            let Some(skill) = install_agmsg(&env) else { return };
            if through_shims {
                let install = env.run(&["shim", "install", skill.to_str().unwrap()]);
                assert_eq!(install.code, 0, "{install:?}");
            }
            let vars = [("AGMSG_STORAGE_DRIVER", driver)];
            let ok = |script: &str, args: &[&str]| {
                let run = agmsg(&env, &skill, &vars, script, args);
                assert_eq!(run.code, 0, "{driver} {script} {args:?}: {run:?}");
                run
            };
            for (agent, project) in [("alice", "proj-a"), ("bob", "proj-b")] {
                let project = env.dir.path().join(project);
                std::fs::create_dir_all(&project).unwrap();
                ok("join.sh", &["t1", agent, "claude-code", project.to_str().unwrap()]);
            }
            ok("send.sh", &["t1", "alice", "bob", "first"]);
            ok("inbox.sh", &["t1", "bob"]);
            ok("send.sh", &["t1", "bob", "alice", "second"]);
            ok("history.sh", &["t1", "alice"]);
            if through_shims {
                let uninstall = env.run(&["shim", "uninstall", skill.to_str().unwrap()]);
                assert_eq!(uninstall.code, 0, "{uninstall:?}");
                let history = ok("history.sh", &["t1", "bob"]);
                assert!(history.stdout.contains("first") && history.stdout.contains("second"), "{driver}: {history:?}");
            }
            made.push((modes_with_dirs(&env.store), env));
        }
        let (agmsgs, hosts) = (&made[0].0, &made[1].0);
        let main = if driver == "jsonl" { "events.jsonl" } else { "messages.db" };
        assert!(agmsgs.contains_key(main) && hosts.contains_key(main), "{driver}: {agmsgs:?} {hosts:?}");
        for (name, mode) in hosts {
            match agmsgs.get(name) {
                Some(agmsgs) => assert_eq!(mode, agmsgs, "{driver}: {name} {mode:o}, agmsg's {agmsgs:o}: {hosts:?}"),
                None if name.ends_with("-journal") => {
                    assert_eq!(Some(mode), hosts.get(name.trim_end_matches("-journal")), "{driver}: {name}: {hosts:?}")
                }
                None => assert_eq!(mode & 0o077, 0, "{driver}: agmsg-host's own {name} is {mode:o}, not private: {hosts:?}"),
            }
        }
    }
}

/// Issue 35 §4: sqlite's kept journal holds pages of the database, so it gets the database's mode, as
/// sqlite's own VFS gives it (WASI's open cannot carry a mode, so the host sets it): a database its
/// owner made private is not readable through its journal. (It was 0644 beside a 0600 database.)
#[test]
fn a_private_sqlite_database_keeps_its_journal_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let send = |body: &str| {
        let run = env.run(&["--driver", "sqlite", "storage", "send", "t", "alice", "bob", body]);
        assert_eq!(run.code, 0, "{run:?}");
    };
    send("first");
    let (db, journal) = (env.store.join("messages.db"), env.store.join("messages.db-journal"));
    let _ = std::fs::remove_file(&journal);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    send("second");
    send("third");
    let mode = std::fs::metadata(&journal).expect("sqlite keeps its journal").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600, "the journal of a 0600 database is {mode:o}");
}
