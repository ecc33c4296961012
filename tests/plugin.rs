//! Third-party drivers end to end, as a user meets them: `plugin install` of a driver an author wrote
//! (`driver new`, then built from source), `plugin inspect`, then using it by name (the Python driver in
//! `examples/` gets the same in `tests/driver_python.rs`); trust pinned to the component's hash and
//! the granted set; discovery order and shadowing; imports beyond the grant refused at load; programs
//! limited to their argument shapes; limits raised only as far as granted.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{Env, Run, build_project, fixture, workspace};

/// A third-party storage driver as its author makes it: `driver new storage memo`, then built from
/// source (once per test run). Its project directory.
fn memo_project() -> &'static Path {
    static PROJECT: OnceLock<PathBuf> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let project = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-sample-memo");
        let _ = std::fs::remove_dir_all(&project);
        let run: Run = std::process::Command::new(common::BIN)
            .args(["driver", "new", "storage", "memo", "--path"])
            .arg(&project)
            .output()
            .unwrap()
            .into();
        assert_eq!(run.code, 0, "{run:?}");
        build_project(&project, "memo");
        project
    })
}

/// Its component (built into the tests' shared target directory, so installed with `--manifest`).
fn memo_wasm() -> PathBuf {
    let _ = memo_project();
    workspace().join("target/scaffold/wasm32-wasip2/release/memo.wasm")
}

fn memo_manifest() -> PathBuf {
    memo_project().join("agmsg-driver.toml")
}

/// The hostile storage fixture as a package named `name`: its manifest asks for `capabilities`.
const HOSTILE_STORAGE: &str = "axis = \"storage\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\n";

/// A package directory under the test's home: `driver.wasm` (a copy of `wasm`) and `agmsg-driver.toml`.
fn package(env: &Env, dir: &str, wasm: &Path, manifest: &str) -> PathBuf {
    let dir = env.dir.path().join("packages").join(dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(wasm, dir.join("driver.wasm")).unwrap();
    std::fs::write(dir.join("agmsg-driver.toml"), manifest).unwrap();
    dir
}

fn hostile_storage(env: &Env, name: &str, capabilities: &str) -> PathBuf {
    package(env, name, &fixture("hostile-storage"), &format!("name = \"{name}\"\n{HOSTILE_STORAGE}[capabilities]\n{capabilities}"))
}

/// Where `plugin install` puts a driver.
fn installed(env: &Env, axis: &str, name: &str) -> PathBuf {
    env.dir.path().join(".agents/agmsg/plugins").join(axis).join(name)
}

fn plugin(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["plugin"];
    all.extend_from_slice(args);
    env.run(&all)
}

/// `plugin list --json`, as (driver, state, granted) rows.
fn listed(env: &Env) -> Vec<(String, String, String)> {
    let run = plugin(env, &["list", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    run.json()
        .iter()
        .map(|r| (r["driver"].as_str().unwrap().into(), r["state"].as_str().unwrap().into(), r["granted"].as_str().unwrap().into()))
        .collect()
}

fn state_of(env: &Env, driver: &str) -> Option<String> {
    listed(env).into_iter().rev().find(|(d, ..)| d == driver).map(|(_, state, _)| state)
}

/// `storage send <team> a b x` through the storage driver `driver`: the hostile fixture reads the team
/// as the misbehaviour to try.
fn send_through(env: &Env, driver: &str, team: &str) -> Run {
    send_body_through(env, driver, team, "x")
}

fn send_body_through(env: &Env, driver: &str, team: &str, body: &str) -> Run {
    env.cmd().env("AGMSG_STORAGE_DRIVER", driver).args(["storage", "send", team, "a", "b", body]).output().unwrap().into()
}

#[test]
fn a_driver_built_from_source_installs_inspects_and_stores() {
    let env = Env::new();
    let wasm = memo_wasm();
    let wasm = wasm.to_str().unwrap();
    let manifest = memo_manifest();
    let manifest = manifest.to_str().unwrap();

    let run = plugin(&env, &["inspect", wasm, "--manifest", manifest]);
    assert_eq!(run.code, 0, "{run:?}");
    for expected in [
        "storage/memo 0.1.0 (built against agmsg:storage@1.2.0)",
        "sha256 ",
        "It asks for:\n  store\n",
        "agmsg:storage/driver@1.2.0",
        "agmsg:host/lock@1.1.0",
        "Verdict: loads on this host",
    ] {
        assert!(run.stdout.contains(expected), "{expected}: {}", run.stdout);
    }

    // Without a terminal, consent must be explicit; nothing is written until it is.
    let run = plugin(&env, &["install", wasm, "--manifest", manifest]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("It asks for:\n  store") && run.stderr.contains("rerun with --yes"), "{run:?}");
    assert!(!installed(&env, "storage", "memo").exists());

    let run = plugin(&env, &["install", wasm, "--manifest", manifest, "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("installed storage/memo 0.1.0 in "), "{run:?}");
    assert!(installed(&env, "storage", "memo").join("driver.wasm").is_file());
    let rows = listed(&env);
    assert!(rows.contains(&("storage/memo".into(), "trusted".into(), "store".into())), "{rows:?}");
    assert!(rows.contains(&("storage/sqlite".into(), "builtin".into(), "store".into())), "{rows:?}");

    let run = plugin(&env, &["inspect", "storage/memo", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let report = &run.json()[0];
    assert_eq!(report["compatible"], true, "{report}");
    assert!(report["state"].as_str().unwrap().starts_with("trusted"), "{report}");
    assert!(report["exports"].as_array().unwrap().iter().any(|e| e == "agmsg:storage/driver@1.2.0"), "{report}");

    // Used by name, as agmsg's scripts would.
    let sent =
        env.cmd().env("AGMSG_STORAGE_DRIVER", "memo").args(["storage", "send", "t", "alice", "bob", "through a plugin"]).output().unwrap();
    let sent = Run::from(sent);
    assert_eq!(sent.code, 0, "{sent:?}");
    let unread: Run = env.cmd().env("AGMSG_STORAGE_DRIVER", "memo").args(["storage", "list-unread", "t", "bob"]).output().unwrap().into();
    assert_eq!(unread.json()[0]["body"], "through a plugin", "{unread:?}");
    assert!(env.store.join("store.json").is_file(), "the plugin's own store file");
}

#[test]
fn trust_is_pinned_to_the_component_and_to_what_was_granted() {
    let env = Env::new().env("SECRET_TOKEN", "hunter2");
    let pkg = hostile_storage(&env, "hostile", "store = true\ninert_sockets = true\n");
    plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]).ok();
    let run = send_through(&env, "hostile", "read-env");
    assert!(run.code == 13 && run.stderr.contains("blocked read-env"), "{run:?}");

    // A changed component (one custom section appended: still a valid component) is untrusted again.
    let component = installed(&env, "storage", "hostile").join("driver.wasm");
    let mut bytes = std::fs::read(&component).unwrap();
    bytes.extend_from_slice(&[0, 5, 4, b'e', b'v', b'i', b'l']);
    std::fs::write(&component, &bytes).unwrap();
    assert_eq!(state_of(&env, "storage/hostile").as_deref(), Some("UNTRUSTED"));
    let run = send_through(&env, "hostile", "read-env");
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{run:?}");
    assert!(run.stderr.contains("changed") && run.stderr.contains("agmsg-host plugin trust storage/hostile"), "{run:?}");
    plugin(&env, &["trust", "storage/hostile", "--yes"]).ok();
    assert_eq!(state_of(&env, "storage/hostile").as_deref(), Some("trusted"));

    // An update that asks for more is untrusted until granted, and the prompt shows what widened.
    let manifest = installed(&env, "storage", "hostile").join("agmsg-driver.toml");
    let text = std::fs::read_to_string(&manifest).unwrap().replace("[capabilities]", "[capabilities]\nenv = [\"SECRET_TOKEN\"]");
    std::fs::write(&manifest, text).unwrap();
    assert_eq!(state_of(&env, "storage/hostile").as_deref(), Some("UNTRUSTED"));
    let run = plugin(&env, &["trust", "storage/hostile"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("it now also asks for:\n  + env:SECRET_TOKEN"), "{run:?}");

    // Granted less than it asks for, it gets only what was granted.
    plugin(&env, &["trust", "storage/hostile", "--grant", "store", "--grant", "inert-sockets"]).ok();
    let run = send_through(&env, "hostile", "read-env");
    assert!(run.code == 13 && run.stderr.contains("blocked read-env"), "{run:?}");
    plugin(&env, &["trust", "storage/hostile", "--yes"]).ok();
    let run = send_through(&env, "hostile", "read-env");
    assert!(run.code == 0 && run.stdout.starts_with("ESCAPED-read-env"), "granted, the variable is visible: {run:?}");

    let run = plugin(&env, &["untrust", "storage/hostile"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(state_of(&env, "storage/hostile").as_deref(), Some("UNTRUSTED"));
    // Untrusted, it is not a driver at all: the store is never opened through it, and the user is told
    // why and how to opt in.
    let run = send_through(&env, "hostile", "read-env");
    assert_eq!((run.code, run.stdout.as_str()), (13, ""), "{run:?}");
    assert!(
        run.stderr.contains("external plugin 'storage/hostile' found at ") && run.stderr.contains("but not trusted (ignored)"),
        "{run:?}"
    );
    assert!(run.stderr.contains("Opt in if you put it there intentionally: agmsg-host plugin trust storage/hostile"), "{run:?}");
    assert!(run.stderr.contains("unknown storage driver 'hostile'"), "{run:?}");

    let run = plugin(&env, &["remove", "storage/hostile"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!installed(&env, "storage", "hostile").exists());
    assert_eq!(state_of(&env, "storage/hostile"), None);
    let run = plugin(&env, &["remove", "storage/hostile"]);
    assert_eq!(run.code, 1, "{run:?}");
}

#[test]
fn a_later_trusted_plugin_shadows_and_an_untrusted_one_is_ignored_with_the_trust_command() {
    let extra = tempfile::tempdir().unwrap();
    let env = Env::new().env("AGMSG_PLUGIN_DIRS", extra.path().to_str().unwrap());
    let describe_jsonl =
        || -> Run { env.cmd().env("AGMSG_STORAGE_DRIVER", "jsonl").args(["storage", "describe"]).output().unwrap().into() };
    assert!(describe_jsonl().stdout.contains("name=jsonl"));

    // A trusted plugin named like a bundled driver shadows it.
    let pkg = hostile_storage(&env, "jsonl", "store = true\ninert_sockets = true\n");
    let run = plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]);
    assert!(run.code == 0 && run.stdout.contains("it shadows the bundled storage driver 'jsonl'"), "{run:?}");
    assert!(describe_jsonl().stdout.contains("name=hostile"));

    // A later candidate (AGMSG_PLUGIN_DIRS) that is untrusted is ignored, with the exact command.
    let later = extra.path().join("storage/jsonl");
    std::fs::create_dir_all(&later).unwrap();
    std::fs::copy(memo_wasm(), later.join("driver.wasm")).unwrap();
    std::fs::write(
        later.join("agmsg-driver.toml"),
        "name = \"jsonl\"\naxis = \"storage\"\nversion = \"0.1.0\"\napi = \"1.0.0\"\n[capabilities]\nstore = true\n",
    )
    .unwrap();
    let run = describe_jsonl();
    assert!(run.stdout.contains("name=hostile"), "{run:?}");
    let command = format!("agmsg-host plugin trust storage/jsonl --path {}", later.display());
    assert!(run.stderr.contains(&command), "{command}: {run:?}");

    // Trusted, the later one wins.
    plugin(&env, &["trust", "storage/jsonl", "--path", later.to_str().unwrap(), "--yes"]).ok();
    let run = describe_jsonl();
    assert!(run.stdout.contains("name=memo") && run.stderr.is_empty(), "{run:?}");

    // An unknown driver's error lists what `storage list` shows: jsonl once, the two trusted plugins
    // of its name and the bundled one being one selectable driver.
    let run: Run = env.cmd().env("AGMSG_STORAGE_DRIVER", "nope").args(["storage", "describe"]).output().unwrap().into();
    let available = run.stderr.split("(available: ").nth(1).and_then(|rest| rest.split(';').next()).unwrap_or_default();
    assert_eq!(available.split(", ").filter(|name| *name == "jsonl").count(), 1, "{run:?}");
    assert!(available.split(", ").any(|name| name == "sqlite"), "{run:?}");
}

#[test]
fn imports_beyond_the_grant_or_an_incompatible_version_are_refused_before_running() {
    let env = Env::new();
    // wasi:sockets with no network asked for (and not declared inert): refused at install.
    let pkg = hostile_storage(&env, "netless", "store = true\n");
    let run = plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("refusing to install storage/netless: it imports wasi:sockets/"), "{run:?}");
    assert!(run.stderr.contains("no network access is granted"), "{run:?}");
    assert!(!installed(&env, "storage", "netless").exists());

    // Asked for but not granted: refused at load, naming the driver, with the contract's status.
    let pkg = hostile_storage(&env, "net", "store = true\nnetwork = [\"127.0.0.1:1\"]\n");
    plugin(&env, &["install", pkg.to_str().unwrap(), "--grant", "store"]).ok();
    // The address it tries listens for real: a refusal is the sandbox's, not an empty port's.
    let witness = common::egress::Listener::new();
    let run = send_body_through(&env, "net", "network", &witness.port());
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("'net'") && run.stderr.contains("no network access is granted"), "{run:?}");
    witness.assert_no_connection("not granted");
    // Granted: it may reach that endpoint and no other, and may not listen.
    plugin(&env, &["trust", "storage/net", "--yes"]).ok();
    let run = send_body_through(&env, "net", "network", &witness.port());
    assert!(run.code == 13 && run.stderr.contains("blocked network"), "{run:?}");
    assert!(!run.stdout.contains("ESCAPED"), "{run:?}");
    witness.assert_no_connection("granted 127.0.0.1:1 only");
    let run = send_through(&env, "net", "listen");
    assert!(run.code == 13 && run.stderr.contains("blocked listen"), "{run:?}");

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = String::new();
        std::io::Read::read_to_string(&mut conn, &mut got).unwrap();
        got
    });
    let manifest = format!("store = true\nenv = [\"AGMSG_FIXTURE_PORT\"]\nnetwork = [\"127.0.0.1:{port}\"]\n");
    let pkg = hostile_storage(&env, "remote", &manifest);
    plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]).ok();
    let run: Run = env
        .cmd()
        .env("AGMSG_STORAGE_DRIVER", "remote")
        .env("AGMSG_FIXTURE_PORT", &port)
        .args(["storage", "send", "network-granted", "a", "b", "x"])
        .output()
        .unwrap()
        .into();
    assert_eq!((run.code, run.stdout.as_str()), (0, "connected\n"), "{run:?}");
    assert_eq!(reader.join().unwrap(), "hello from the driver");

    // A host interface its axis is not offered, and a contract version this host does not speak.
    let cases = [
        (
            "(component (import \"agmsg:host/process@1.0.0\" (instance)))",
            "1.0.0",
            "it imports agmsg:host/process@1.0.0, which this host does not offer to storage drivers",
        ),
        (
            "(component (import \"agmsg:host/log@2.0.0\" (instance)))",
            "1.0.0",
            "it was built against agmsg:host@2.0.0, which is not compatible with the agmsg:host@1.1.0 this host offers",
        ),
        (
            "(component)",
            "2.0.0",
            "its manifest says it was built against agmsg:storage@2.0.0, which is not compatible with the agmsg:storage@1.2.0 this host offers",
        ),
    ];
    for (i, (wat, api, expected)) in cases.iter().enumerate() {
        let wasm = env.dir.path().join(format!("case{i}.wasm"));
        std::fs::write(&wasm, wat::parse_str(wat).unwrap()).unwrap();
        let manifest =
            format!("name = \"case{i}\"\naxis = \"storage\"\nversion = \"1.0.0\"\napi = \"{api}\"\n[capabilities]\nstore = true\n");
        let pkg = package(&env, &format!("case{i}"), &wasm, &manifest);
        let run = plugin(&env, &["inspect", pkg.to_str().unwrap()]);
        assert!(run.code == 1 && run.stdout.contains(&format!("Verdict: REFUSED: {expected}")), "{expected}: {run:?}");
        let run = plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]);
        assert!(run.code == 1 && run.stderr.contains(expected), "{expected}: {run:?}");
    }
}

#[test]
fn a_terminal_plugin_runs_only_its_granted_programs_with_their_argument_shapes() {
    let env = Env::new();
    let manifest = "name = \"hostile-term\"\naxis = \"terminal\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\n\
        [capabilities]\nprograms = [{ name = \"tmux\", args = [[\"-V\"]] }]\n\
        [terminal]\npriority = 1\nbackend = \"test fixture\"\ncapabilities = [\"peek\"]\n";
    let pkg = package(&env, "hostile-term", &fixture("hostile-terminal"), manifest);
    plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]).ok();
    let rows = listed(&env);
    assert!(rows.contains(&("terminal/hostile-term".into(), "trusted".into(), "program:tmux (arguments: -V)".into())), "{rows:?}");
    // `terminal list` says where each driver comes from, as resolved: this one from its plugin directory.
    let run = env.run(&["terminal", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    let row = rows.as_array().and_then(|rows| rows.iter().find(|r| r["name"] == "hostile-term")).unwrap_or_else(|| panic!("{run:?}"));
    assert_eq!((row["source"].as_str(), row["bundled"].as_bool()), (Some("plugin"), Some(false)), "{run:?}");
    assert!(row["path"].as_str().is_some_and(|p| p.ends_with("plugins/terminal/hostile-term")), "{run:?}");

    let peek = |attempt: &str| -> Run { env.run(&["terminal", "--driver", "hostile-term", "peek", attempt]) };
    let run = peek("declared");
    assert!(run.code == 0 && run.stdout.starts_with("ran: status Some(0): tmux "), "{run:?}");
    let run = peek("disallowed-args");
    assert!(run.code == 12 && run.stderr.contains("not among those granted"), "{run:?}");
    let run = peek("undeclared");
    assert!(run.code == 12 && run.stderr.contains("not declared"), "{run:?}");
    let run = peek("by-path");
    assert!(run.code == 12 && run.stderr.contains("never given by path"), "{run:?}");
}

/// `terminal list` shows, from the one enumeration, the drivers that run and, after them, a terminal
/// plugin that runs only once trusted, with the command that trusts it (text and JSON); trusted, it is
/// a row of its own, from its directory.
#[test]
fn terminal_list_offers_an_untrusted_plugin_with_its_trust_command() {
    let env = Env::new();
    let dropped = env.dir.path().join(".agents/agmsg/plugins/terminal/quiet");
    std::fs::create_dir_all(&dropped).unwrap();
    std::fs::copy(fixture("hostile-terminal"), dropped.join("driver.wasm")).unwrap();
    let manifest = "name = \"quiet\"\naxis = \"terminal\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\n[terminal]\npriority = 90\n";
    std::fs::write(dropped.join("agmsg-driver.toml"), manifest).unwrap();

    let run = env.run(&["terminal", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("quiet ") && last.ends_with(" untrusted: agmsg-host plugin trust terminal/quiet"), "{run:?}");
    assert_eq!(run.stderr.matches("external plugin 'terminal/quiet'").count(), 1, "warned about once: {run:?}");
    let run = env.run(&["terminal", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    let quiet: Vec<&serde_json::Value> = rows.as_array().unwrap().iter().filter(|r| r["name"] == "quiet").collect();
    assert_eq!(quiet.len(), 1, "{run:?}");
    assert_eq!(
        (quiet[0]["source"].as_str(), quiet[0]["trust_command"].as_str()),
        (Some("untrusted"), Some("agmsg-host plugin trust terminal/quiet")),
        "{run:?}"
    );

    plugin(&env, &["trust", "terminal/quiet", "--yes"]).ok();
    let run = env.run(&["terminal", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"));
    let quiet: Vec<&serde_json::Value> = rows.as_array().unwrap().iter().filter(|r| r["name"] == "quiet").collect();
    assert_eq!(quiet.len(), 1, "{run:?}");
    assert_eq!((quiet[0]["source"].as_str(), quiet[0]["priority"].as_u64()), (Some("plugin"), Some(90)), "{run:?}");
    assert!(run.stderr.is_empty(), "{run:?}");
}

#[test]
fn limits_are_raised_only_as_far_as_granted() {
    let env = Env::new().env("AGMSG_DRIVER_MEMORY_MB", "32").env("AGMSG_DRIVER_TIMEOUT_MS", "1000");
    let pkg = hostile_storage(&env, "greedy", "store = true\ninert_sockets = true\nmemory_mb = 96\ncall_timeout_ms = 2500\n");
    plugin(&env, &["install", pkg.to_str().unwrap(), "--grant", "store", "--grant", "inert-sockets"]).ok();
    let run = send_through(&env, "greedy", "hog");
    assert!(run.code == 13 && run.stderr.contains("driver 'greedy' exceeded its memory limit of 32 MiB"), "{run:?}");
    let run = send_through(&env, "greedy", "loop");
    assert!(run.code == 13 && run.stderr.contains("exceeded its time limit of 1000 ms"), "{run:?}");

    plugin(&env, &["trust", "storage/greedy", "--yes"]).ok();
    let run = send_through(&env, "greedy", "hog");
    assert!(run.code == 13 && run.stderr.contains("exceeded its memory limit of 96 MiB"), "{run:?}");
    let run = send_through(&env, "greedy", "loop");
    assert!(run.code == 13 && run.stderr.contains("exceeded its time limit of 2500 ms"), "{run:?}");
    // And a good driver works on the same store afterwards.
    env.send("t", "alice", "bob", "after");
}

#[test]
fn on_a_terminal_install_asks_and_takes_the_answer() {
    let env = Env::new();
    let pkg = hostile_storage(&env, "asked", "store = true\ninert_sockets = true\n");
    // `script` (util-linux) gives the command a terminal; the answer comes through it.
    let on_a_terminal = |answer: &str| -> Run {
        let command = format!("{} plugin install {}", common::BIN, pkg.display());
        let mut child = env
            .program("script")
            .args(["-qec", &command, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), answer.as_bytes()).unwrap();
        child.wait_with_output().unwrap().into()
    };
    let run = on_a_terminal("n\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("Trust it and grant these? [y/N]") && run.stdout.contains("you declined"), "{run:?}");
    assert!(!installed(&env, "storage", "asked").exists());
    let run = on_a_terminal("y\n");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("installed storage/asked 1.0.0"), "{run:?}");
    assert_eq!(state_of(&env, "storage/asked").as_deref(), Some("trusted"));
}

#[test]
fn odd_plugin_directories_and_homes_neither_hang_nor_hijack() {
    let extra = tempfile::tempdir().unwrap();
    let env = Env::new().env("AGMSG_PLUGIN_DIRS", extra.path().to_str().unwrap());

    // A directory in the current directory named like a driver is not that driver.
    let impostor = env.dir.path().join("plain");
    std::fs::create_dir_all(&impostor).unwrap();
    std::fs::copy(common::workspace().join("drivers/terminal-plain/terminal.conf"), impostor.join("terminal.conf")).unwrap();
    std::fs::write(impostor.join("driver.wasm"), b"not a component").unwrap();
    let run = env.run(&["terminal", "--driver", "plain", "describe"]);
    assert!(run.code == 0 && run.stdout.contains("name=plain"), "the bundled plain driver: {run:?}");
    let run = env.run(&["terminal", "--driver", "./plain", "describe"]);
    assert_ne!(run.code, 0, "named as a path, the directory is what loads: {run:?}");

    // A component that is a FIFO (or a device) is refused without blocking on it.
    let evil = extra.path().join("terminal/evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("agmsg-driver.toml"), "name = \"evil\"\naxis = \"terminal\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\n").unwrap();
    assert!(std::process::Command::new("mkfifo").arg(evil.join("driver.wasm")).status().unwrap().success());
    let run = env.run(&["terminal", "list"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("not a regular file") && !run.stderr.contains("plugin trust terminal/evil"),
        "a broken plugin is not offered for trust: {run:?}"
    );

    // A terminal plugin whose manifest changes anywhere (here: its priority) is untrusted again.
    let manifest = "name = \"quiet\"\naxis = \"terminal\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\n[terminal]\npriority = 90\n";
    let pkg = package(&env, "quiet", &fixture("hostile-terminal"), manifest);
    plugin(&env, &["install", pkg.to_str().unwrap(), "--yes"]).ok();
    assert_eq!(state_of(&env, "terminal/quiet").as_deref(), Some("trusted"));
    let installed_manifest = installed(&env, "terminal", "quiet").join("agmsg-driver.toml");
    let text = std::fs::read_to_string(&installed_manifest).unwrap().replace("priority = 90", "priority = 1");
    std::fs::write(&installed_manifest, text).unwrap();
    assert_eq!(state_of(&env, "terminal/quiet").as_deref(), Some("UNTRUSTED"));
    let run = plugin(&env, &["list"]);
    assert!(run.stdout.contains("its manifest changed since it was trusted"), "{run:?}");

    // A relative AGMSG_HOME: what install trusts is what discovery finds.
    let run: Run =
        env.cmd().env("AGMSG_HOME", "relative-home").args(["plugin", "install", pkg.to_str().unwrap(), "--yes"]).output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
    let run: Run = env.cmd().env("AGMSG_HOME", "relative-home").args(["plugin", "list", "--json"]).output().unwrap().into();
    assert!(
        run.json()
            .iter()
            .any(|r| r["driver"] == "terminal/quiet" && r["state"] == "trusted" && r["path"].as_str().unwrap().starts_with('/')),
        "{run:?}"
    );

    // No home at all: bundled drivers still work.
    let run: Run = env.cmd().env_remove("HOME").args(["storage", "send", "t", "alice", "bob", "homeless"]).output().unwrap().into();
    assert_eq!(run.code, 0, "{run:?}");
}

/// `plugin inspect` reports the drivers bundled in this binary too, every one `plugin list` shows as
/// builtin (by `axis/name` or a bare name, text and --json): the component's real imports and exports,
/// its sha256, what it runs with, and the verdict, as for a plugin.
#[test]
fn inspect_reports_bundled_drivers_as_list_shows_them() {
    let env = Env::new();
    let builtin: Vec<(String, String, String)> = listed(&env).into_iter().filter(|(_, state, _)| state == "builtin").collect();
    for expected in ["storage/sqlite", "storage/jsonl", "terminal/tmux", "terminal/plain"] {
        assert!(builtin.iter().any(|(d, ..)| d == expected), "{expected}: {builtin:?}");
    }
    for (driver, _, granted) in &builtin {
        let (axis, name) = driver.split_once('/').unwrap();
        let run = plugin(&env, &["inspect", driver, "--json"]);
        assert_eq!(run.code, 0, "{driver}: {run:?}");
        let report = &run.json()[0];
        assert_eq!((report["name"].as_str(), report["axis"].as_str()), (Some(name), Some(axis)), "{report}");
        assert_eq!((report["builtin"].as_bool(), report["state"].as_str()), (Some(true), Some("builtin")), "{report}");
        assert_eq!(report["compatible"], true, "{report}");
        assert!(report["verdict"].as_str().unwrap().starts_with("loads on this host"), "{report}");
        let sha = report["sha256"].as_str().unwrap();
        assert!(sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()), "{report}");
        let axis_facts = agmsg_host::axis::Axis::parse(axis).unwrap();
        let (package, version) = (axis_facts.package(), axis_facts.package_version());
        assert_eq!(report["api"], version, "{report}");
        let names = |key: &str| -> Vec<String> { report[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect() };
        assert!(names("exports").contains(&format!("{package}/driver@{version}")), "{report}");
        // The optional `live` export (agmsg:storage 1.1.0, named at the version built against): postgres offers it, the file stores are polled.
        assert_eq!(names("exports").contains(&"agmsg:storage/live@1.2.0".to_owned()), driver == "storage/postgres", "{report}");
        assert!(names("imports").iter().any(|i| i.starts_with("wasi:")), "the component's real imports: {report}");
        // (list says `none` for a driver that runs with nothing, like a delivery plug.)
        let runs_with = names("runs_with").join(", ");
        assert_eq!(if runs_with.is_empty() { "none" } else { &runs_with }, granted, "{driver}: what it runs with, as list says");
        if driver == "storage/postgres" {
            // Its store is a database: no directory, and with none configured here, no network either.
            assert_eq!(names("runs_with"), ["inert-sockets (wasi:sockets linked, every call denied)"], "{report}");
            assert!(names("imports").contains(&"wasi:sockets/tcp@0.2.6".to_owned()), "{report}");
        } else if axis == "storage" {
            assert_eq!(names("runs_with"), ["store"], "{report}");
            assert!(names("imports").contains(&"agmsg:host/lock@1.1.0".to_owned()), "{report}");
        }
    }

    // Text, by bare name too; and the tmux driver runs only what its terminal.conf names.
    let run = plugin(&env, &["inspect", "storage/sqlite"]);
    assert_eq!(run.code, 0, "{run:?}");
    for expected in [
        "storage/sqlite ",
        "(built against agmsg:storage@1.2.0)",
        "sha256 ",
        "It runs with:\n  store\n",
        "agmsg:storage/driver@1.2.0",
        "Verdict: loads on this host",
        "Installed: builtin",
    ] {
        assert!(run.stdout.contains(expected), "{expected}: {}", run.stdout);
    }
    let run = plugin(&env, &["inspect", "tmux"]);
    assert_eq!(run.code, 0, "{run:?}");
    for expected in ["terminal/tmux ", "program:tmux", "agmsg:host/process@1.1.0", "agmsg:terminal/driver@1.0.0", "Installed: builtin"] {
        assert!(run.stdout.contains(expected), "{expected}: {}", run.stdout);
    }
    // Still an error for a name nothing has.
    let run = plugin(&env, &["inspect", "storage/nosuch"]);
    assert_eq!(run.code, 1, "{run:?}");
}

/// A `--grant` that names no capability is a malformed argument: a usage error (2), as any other bad
/// argument of the command line, said before anything is written, never a refusal of the plugin.
#[test]
fn a_malformed_grant_is_a_usage_error_and_installs_nothing() {
    let env = Env::new();
    let pkg = hostile_storage(&env, "typo", "store = true\ninert_sockets = true\n");
    for grant in ["stroe", "memory:0", "timeout:soon"] {
        let run = plugin(&env, &["install", pkg.to_str().unwrap(), "--grant", "store", "--grant", grant]);
        assert_eq!(run.code, 2, "{grant}: {run:?}");
        assert!(run.stderr.contains(&format!("--grant {grant}: ")), "{grant}: {run:?}");
        assert!(!installed(&env, "storage", "typo").exists(), "{grant}");
    }
    plugin(&env, &["install", pkg.to_str().unwrap(), "--grant", "store", "--grant", "inert-sockets"]).ok();
    let run = plugin(&env, &["trust", "storage/typo", "--grant", "env:"]);
    assert_eq!(run.code, 2, "{run:?}");
}

/// Consent on a real terminal (a tmux pane): the question is asked, the answer read from the keyboard,
/// `y` installs and trusts, `n` declines with nothing written; and a manifest whose description is a
/// stranger's terminal escapes (a title change, a screen clear, a colour) is refused before any question,
/// its refusal inert on the screen.
#[test]
fn consent_is_asked_on_a_real_terminal_and_a_manifest_cannot_drive_it() {
    let server = agmsg_conformance::tmux::TmuxServer::start();
    let escapes = "notes \\u001b]2;pwned\\u0007\\u001b[2J\\u001b[31mred";
    for (answer, name, description) in [("", "hostile", escapes), ("n", "declined", "notes"), ("y", "accepted", "notes")] {
        let env = Env::new();
        let manifest = format!(
            "name = \"{name}\"\n{HOSTILE_STORAGE}description = \"{description}\"\n[capabilities]\nstore = true\ninert_sockets = true\n"
        );
        let pkg = package(&env, name, &fixture("hostile-storage"), &manifest);
        let exit_file = env.dir.path().join("exit");
        let line = format!(
            "env -i PATH=\"$PATH\" TERM=xterm HOME='{home}' AGMSG_CACHE_DIR='{cache}' '{bin}' plugin install '{pkg}'; echo $? > '{exit}'; sleep 600",
            home = env.dir.path().display(),
            cache = env.cache.display(),
            bin = common::BIN,
            pkg = pkg.display(),
            exit = exit_file.display()
        );
        let pane = server.query(&["new-window", "-d", "-P", "-F", "#{pane_id}", &line]);
        let screen = || server.query(&["capture-pane", "-p", "-J", "-t", &pane]);
        let waited = std::time::Instant::now();
        let wait_for = |what: &dyn Fn() -> bool| {
            while !what() {
                assert!(waited.elapsed() < std::time::Duration::from_secs(60), "{name}: waited in vain: {}", screen());
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        };
        if answer.is_empty() {
            wait_for(&|| exit_file.exists());
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert_eq!(std::fs::read_to_string(&exit_file).unwrap().trim(), "1", "{}", screen());
            let shown = screen();
            assert!(shown.contains("description must be one line") && !shown.contains("Trust it"), "{shown}");
            // Inert: the title is not changed, no colour set, the screen not cleared (the refusal's own
            // start is still on it).
            assert_ne!(server.query(&["display-message", "-p", "-t", &pane, "#{pane_title}"]), "pwned");
            assert!(!server.query(&["capture-pane", "-p", "-e", "-t", &pane]).contains("\u{1b}[31m"), "a colour was set");
            assert!(shown.contains("agmsg-host plugin:"), "{shown}");
            assert!(!installed(&env, "storage", name).exists());
            continue;
        }
        wait_for(&|| screen().contains("Trust it and grant these? [y/N]"));
        let shown = screen();
        assert!(shown.contains("It asks for:\n  store") && shown.contains("notes"), "{shown}");
        server.query(&["send-keys", "-t", &pane, answer, "Enter"]);
        wait_for(&|| exit_file.exists());
        std::thread::sleep(std::time::Duration::from_millis(100));
        let code = std::fs::read_to_string(&exit_file).unwrap();
        if answer == "y" {
            assert_eq!(code.trim(), "0", "{}", screen());
            assert_eq!(state_of(&env, &format!("storage/{name}")).as_deref(), Some("trusted"));
        } else {
            assert_eq!(code.trim(), "1", "{}", screen());
            assert!(screen().contains("not trusted: you declined"), "{}", screen());
            assert!(!installed(&env, "storage", name).exists());
        }
    }
}
