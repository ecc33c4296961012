//! The agent types as data (issue 17 parts 1, 2 and 4), through the binary with a fresh home:
//! `types list | describe | get` for every bundled type against agent-types-reference §2, agmsg's
//! installed types read from a skill directory, detection from the environment and from a real
//! process tree, and `types boot-argv` against the reference's argv (§5).

mod common;

use std::path::Path;

use common::{Env, Run};
use serde_json::Value;

/// agent-types-reference §2, "Values per type": every key each bundled type sets (a key not listed is
/// absent and reads as empty).
const REFERENCE: &[(&str, &[(&str, &str)])] = &[
    ("agmsg-app", &[("spawnable", "no"), ("monitor", "no"), ("delivery_modes", "off")]),
    (
        "antigravity",
        &[
            ("template", "template.md"),
            ("cli", "agy"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("prompt_arg", "--prompt-interactive"),
            ("cmd_prefix", "$"),
            ("detect", "explicit"),
            ("hooks_file", ".agent/rules/agmsg.md"),
            ("monitor", "no"),
            ("delivery_modes", "turn off"),
        ],
    ),
    (
        "claude-code",
        &[
            ("template", "template.md"),
            ("cli", "claude"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("name_arg", "-n"),
            ("resume_arg", "--resume"),
            ("detect", "CLAUDE_CODE_SESSION_ID"),
            ("detect_proc", "claude claude-code claude-*"),
            ("hooks_file", ".claude/settings.local.json"),
            ("monitor", "yes"),
            ("delivery_modes", "monitor turn both off"),
            ("vendor", "claude"),
            ("spawn_unset_env", "CLAUDE_CODE_SESSION_ID"),
        ],
    ),
    (
        "codex",
        &[
            ("template", "template.md"),
            ("cli", "codex"),
            ("spawnable", "yes"),
            ("model_arg", "-m"),
            ("cmd_prefix", "$"),
            ("resume_arg", "resume"),
            ("detect", "CODEX_SANDBOX CODEX_THREAD_ID"),
            ("detect_proc", "codex codex-*"),
            ("hooks_file", ".codex/hooks.json"),
            ("monitor", "no"),
            ("delivery_modes", "monitor turn off"),
            ("vendor", "codex"),
            ("stop_output", "json"),
            ("hook_windows_wrap", "yes"),
            ("role_overlay_profile_args", "-p --profile"),
            ("role_overlay_profile_home_env", "CODEX_HOME"),
            ("role_overlay_profile_default_dir", ".codex"),
            ("role_overlay_profile_suffix", ".config.toml"),
        ],
    ),
    (
        "copilot",
        &[
            ("template", "template.md"),
            ("cli", "copilot"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("prompt_arg", "--interactive"),
            ("detect", "explicit"),
            ("hooks_file", ".github/hooks/agmsg.json"),
            ("monitor", "no"),
            ("delivery_modes", "turn off"),
            ("stop_output", "json"),
        ],
    ),
    (
        "cursor",
        &[
            ("template", "template.md"),
            ("cli", "cursor-agent"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("detect_proc", "cursor-agent cursor-agent-*"),
            ("hooks_file", ".cursor/rules/agmsg.mdc"),
            ("monitor", "no"),
            ("delivery_modes", "turn off"),
        ],
    ),
    (
        "gemini",
        &[
            ("template", "template.md"),
            ("cli", "gemini"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("cmd_prefix", "$"),
            ("detect", "GEMINI_CLI GEMINI_API_KEY"),
            ("detect_proc", "gemini gemini-*"),
            ("hooks_file", ".agent/rules/agmsg.md"),
            ("monitor", "no"),
            ("delivery_modes", "turn off"),
        ],
    ),
    (
        "grok-build",
        &[
            ("template", "template.md"),
            ("cli", "grok"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("detect", "GROK_SESSION_ID"),
            ("detect_proc", "grok grok-*"),
            ("hooks_file", ".grok/rules/agmsg.md"),
            ("monitor", "no"),
            ("delivery_modes", "turn monitor off"),
        ],
    ),
    ("hermes", &[("template", "template.md"), ("cli", "hermes"), ("detect", "explicit"), ("monitor", "no"), ("delivery_modes", "off")]),
    (
        "opencode",
        &[
            ("template", "template.md"),
            ("cli", "opencode"),
            ("spawnable", "yes"),
            ("model_arg", "--model"),
            ("prompt_arg", "--prompt"),
            ("cmd_prefix", "$"),
            ("detect_proc", "opencode opencode-*"),
            ("hooks_file", ".opencode/rules/agmsg.md"),
            ("monitor", "yes"),
            ("delivery_modes", "monitor turn off"),
        ],
    ),
];

/// Every key the reference's table has a column or note for.
const KEYS: &[&str] = &[
    "template",
    "cli",
    "spawnable",
    "spawn",
    "model_arg",
    "prompt_arg",
    "cmd_prefix",
    "name_arg",
    "resume_arg",
    "detect",
    "detect_proc",
    "hooks_file",
    "monitor",
    "delivery_modes",
    "stop_output",
    "hook_windows_wrap",
    "vendor",
    "spawn_unset_env",
    "role_overlay_profile_args",
    "role_overlay_profile_home_env",
    "role_overlay_profile_default_dir",
    "role_overlay_profile_suffix",
];

fn types(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["types"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn one_json(run: &Run) -> Value {
    run.ok();
    let rows = run.json();
    assert_eq!(rows.len(), 1, "{run:?}");
    rows.into_iter().next().unwrap()
}

#[test]
fn get_reads_every_bundled_key_as_the_reference_lists_it() {
    let env = Env::new();
    for (name, values) in REFERENCE {
        for key in KEYS.iter().copied().chain(["name"]) {
            let expected = match key {
                "name" => *name,
                _ => values.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| *v),
            };
            let run = types(&env, &["get", name, key]);
            run.ok();
            assert_eq!(run.stdout, format!("{expected}\n"), "{name} {key}");
        }
    }
}

#[test]
fn get_behaves_as_agmsg_type_get() {
    let env = Env::new();
    // A missing key or an unknown type: the default (or nothing), exit 0, nothing on stderr.
    for (args, out) in [
        (&["get", "codex", "prompt_arg"][..], "\n"),
        (&["get", "codex", "prompt_arg", "dflt"], "dflt\n"),
        (&["get", "codex", "cmd_prefix", "/"], "$\n"),
        (&["get", "claude-code", "cmd_prefix", "/"], "/\n"),
        (&["get", "no-such-type", "cli", "-x"], "-x\n"),
        (&["get", "no-such-type", "cli"], "\n"),
    ] {
        let run = types(&env, args);
        assert_eq!((run.code, run.stdout.as_str(), run.stderr.as_str()), (0, out, ""), "{args:?}");
    }
    // A key that is not a key: usage error. --strict: missing things are errors.
    let run = types(&env, &["get", "codex", "cli.*"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    assert!(run.stderr.contains("invalid key"), "{run:?}");
    let run = types(&env, &["get", "codex", "prompt_arg", "--strict"]);
    assert_eq!(run.code, 1, "{run:?}");
    let run = types(&env, &["get", "nope", "cli", "--strict"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("unknown agent type \"nope\""), "{run:?}");
}

#[test]
fn list_shows_the_ten_bundled_types() {
    let env = Env::new();
    let run = types(&env, &["list", "--json"]);
    run.ok();
    let rows = run.json();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let expected: Vec<&str> = REFERENCE.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, expected);
    for row in &rows {
        let name = row["name"].as_str().unwrap();
        let values = REFERENCE.iter().find(|(n, _)| *n == name).unwrap().1;
        let value = |k: &str| values.iter().find(|(key, _)| *key == k).map_or("", |(_, v)| *v);
        assert_eq!(row["source"], "bundled");
        assert_eq!(row["spawnable"], value("spawnable") == "yes", "{name}");
        assert_eq!(row["cli"], value("cli"), "{name}");
        let modes: Vec<&str> = row["delivery_modes"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(modes.join(" "), value("delivery_modes"), "{name}");
    }
    let run = types(&env, &["list"]);
    run.ok();
    assert_eq!(run.lines().len(), 11, "a header and ten rows: {run:?}");
    assert!(run.stdout.contains("grok-build     bundled  yes       grok"), "{}", run.stdout);
}

#[test]
fn describe_says_every_key_its_origin_template_and_plug() {
    let env = Env::new();
    // The plug each type's agmsg ships, and what it overrides (reference §4).
    let plugs: &[(&str, Option<&[&str]>)] = &[
        ("agmsg-app", None),
        ("antigravity", Some(&["apply", "status"])),
        ("claude-code", Some(&["on_enable"])),
        ("codex", Some(&["on_enable", "on_disable", "runtime_status"])),
        ("copilot", Some(&["apply", "status"])),
        ("cursor", Some(&["apply", "status"])),
        ("gemini", Some(&["apply", "status"])),
        ("grok-build", Some(&["apply", "status", "on_enable", "stop_directive"])),
        ("hermes", Some(&["apply", "status", "on_disable"])),
        ("opencode", Some(&["apply", "status"])),
    ];
    for (name, values) in REFERENCE {
        let d = one_json(&types(&env, &["describe", name, "--json"]));
        assert_eq!(d["name"], *name);
        assert_eq!(d["source"], "bundled");
        assert_eq!(d["manifest"], format!("(built in) {name}/type.conf"));
        let keys: Vec<(String, String)> = d["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["key"].as_str().unwrap().to_owned(), k["value"].as_str().unwrap().to_owned()))
            .collect();
        let mut expected: Vec<(String, String)> = values.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        expected.push(("name".into(), (*name).into()));
        let mut got = keys.clone();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "{name}");
        assert!(d["keys"].as_array().unwrap().iter().all(|k| k["read"] == true && k["known"] == true && k["line"].as_u64().unwrap() > 0));
        // Missing keys with what they read as.
        let missing = d["missing"].as_array().unwrap();
        if !values.iter().any(|(k, _)| *k == "cmd_prefix") {
            assert!(missing.iter().any(|m| m["key"] == "cmd_prefix" && m["reads_as"] == "/"), "{name}");
        }
        // The template it names.
        match values.iter().find(|(k, _)| *k == "template") {
            Some(_) => {
                assert_eq!(d["template"]["file"], "template.md");
                assert!(d["template"]["bytes"].as_u64().unwrap() > 100, "{name}");
            }
            None => assert!(d["template"].is_null()),
        }
        // The plug and what it overrides; the rest is agmsg's default.
        let (_, plug) = plugs.iter().find(|(n, _)| n == name).unwrap();
        let overrides: Vec<&str> = d["plug"]["overrides"].as_array().unwrap().iter().map(|o| o["function"].as_str().unwrap()).collect();
        match plug {
            None => {
                assert!(d["plug"]["file"].is_null());
                assert!(overrides.is_empty());
            }
            Some(functions) => {
                assert_eq!(d["plug"]["file"], "_delivery.sh", "{name}");
                assert_eq!(&overrides, functions, "{name}");
            }
        }
        assert_eq!(d["plug"]["overrides"].as_array().unwrap().len() + d["plug"]["defaults"].as_array().unwrap().len(), 6);
        // What agmsg-host itself runs: the bundled plug component and what it is granted, or none.
        let granted = match *name {
            "claude-code" => Some("env:CLAUDE_CODE_SESSION_ID"),
            "grok-build" => Some("env:GROK_SESSION_ID"),
            "cursor" => Some("none"),
            _ => None,
        };
        match granted {
            Some(granted) => {
                assert_eq!(d["component"]["name"], *name);
                assert_eq!(d["component"]["capabilities"], granted, "{name}");
                assert!(d["component"]["path"].is_null() && d["component"]["sha256"].as_str().unwrap().len() == 64);
            }
            None => assert!(d["component"].is_null(), "{name}: {}", d["component"]),
        }
    }
    let run = types(&env, &["describe", "claude-code"]);
    assert!(
        run.stdout.contains("component  agmsg-host runs bundled plug 'claude-code' (sha256 ")
            && run.stdout.contains("granted: env:CLAUDE_CODE_SESSION_ID"),
        "{}",
        run.stdout
    );
    let run = types(&env, &["describe", "codex"]);
    run.ok();
    for needle in [
        "source     bundled",
        "model_arg=-m  [type.conf line",
        "prompt_arg  [missing: reads as empty]",
        "on_disable      overridden:",
        "apply           default:",
        "component  none",
    ] {
        assert!(run.stdout.contains(needle), "{needle:?} in {}", run.stdout);
    }
    let run = types(&env, &["describe", "nope"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("unknown agent type") && run.stderr.contains("grok-build"), "{run:?}");
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

#[test]
fn agmsg_installed_types_are_read_unchanged() {
    let env = Env::new();
    // agmsg's default install: ~/.agents/skills/agmsg.
    let types_dir = env.dir.path().join(".agents/skills/agmsg/scripts/drivers/types");
    write(
        &types_dir.join("codex"),
        "type.conf",
        "# newer agmsg\nname=codex\ncli=codex --flag\nspawnable=yes\ntemplate=template.md\ncmd_prefix=$\nsession_env=CODEX_THREAD_ID\n",
    );
    write(&types_dir.join("codex"), "template.md", "installed template __SKILL_NAME__\n");
    write(&types_dir.join("codex"), "_delivery.sh", "agmsg_delivery_on_enable() { :; }\nagmsg_delivery_runtime_status() {\n :\n}\n");
    write(&types_dir.join("codex"), "codex-bridge.js", "");
    write(&types_dir.join("devin"), "type.conf", "name=devin\ncli=devin\nspawnable=yes\ndetect=DEVIN_SESSION\ntemplate=/etc/passwd\n");

    let run = types(&env, &["get", "codex", "cli"]);
    assert_eq!(run.stdout, "codex --flag\n");
    assert_eq!(types(&env, &["get", "codex", "model_arg"]).stdout, "\n", "nothing merged from the bundled copy");
    assert_eq!(types(&env, &["get", "codex", "session_env"]).stdout, "CODEX_THREAD_ID\n", "any key is read");
    assert_eq!(types(&env, &["get", "devin", "cli"]).stdout, "devin\n");

    let rows = types(&env, &["list", "--json"]).json();
    assert_eq!(rows.len(), 11);
    let codex = rows.iter().find(|r| r["name"] == "codex").unwrap();
    assert_eq!(codex["source"], "agmsg");
    assert_eq!(codex["dir"], types_dir.join("codex").to_str().unwrap());
    assert_eq!(codex["shadows"][0]["source"], "bundled");

    let d = one_json(&types(&env, &["describe", "codex", "--json"]));
    assert_eq!(d["manifest"], types_dir.join("codex/type.conf").to_str().unwrap());
    assert_eq!(d["template"]["path"], types_dir.join("codex/template.md").to_str().unwrap());
    let overrides: Vec<&str> = d["plug"]["overrides"].as_array().unwrap().iter().map(|o| o["function"].as_str().unwrap()).collect();
    assert_eq!(overrides, ["on_enable", "runtime_status"]);
    assert_eq!(d["plug"]["code"], serde_json::json!(["codex-bridge.js"]));
    assert!(d["keys"].as_array().unwrap().iter().any(|k| k["key"] == "session_env" && k["known"] == false));
    // A template outside the type dir is refused, as agmsg refuses it.
    let d = one_json(&types(&env, &["describe", "devin", "--json"]));
    assert!(d["template"]["error"].as_str().unwrap().contains("invalid template"), "{d}");
    // The type is detected from its variable like any other.
    let run = env.cmd().args(["types", "detect"]).env("DEVIN_SESSION", "1").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "devin\n");

    // AGMSG_SKILL_DIR names another install; its basename is the command in the actas prompt.
    let skill = env.dir.path().join("custom/mymsg");
    write(&skill.join("scripts/drivers/types/gemini"), "type.conf", "name=gemini\ncli=gemini-beta\nspawnable=yes\ncmd_prefix=$\n");
    let env = env.env("AGMSG_SKILL_DIR", skill.to_str().unwrap());
    assert_eq!(types(&env, &["get", "gemini", "cli"]).stdout, "gemini-beta\n");
    assert_eq!(types(&env, &["get", "codex", "cli"]).stdout, "codex\n", "the default install is no longer read");
    let project = env.dir.path().to_str().unwrap().to_owned();
    let boot = one_json(&types(&env, &["boot-argv", "gemini", "t", "bob", "--project", &project]));
    assert_eq!(boot["argv"], serde_json::json!(["gemini-beta", "$mymsg actas bob"]));
}

#[test]
fn external_types_stay_invisible_until_trusted() {
    let env = Env::new();
    let plugins = env.dir.path().join(".agents/agmsg/plugins/types");
    write(&plugins.join("kiro"), "type.conf", "name=kiro\ncli=kiro\nspawnable=yes\n");
    write(&plugins.join("codex"), "type.conf", "name=codex\ncli=evil\n");
    let extra = env.dir.path().join("extra");
    write(&extra.join("types/other"), "type.conf", "name=other\n");
    let env = env.env("AGMSG_PLUGIN_DIRS", extra.to_str().unwrap());
    let run = types(&env, &["list", "--json"]);
    run.ok();
    assert_eq!(run.json().len(), 10);
    for name in ["kiro", "codex", "other"] {
        assert!(
            run.stderr.contains(&format!("external plugin 'types/{name}'")) && run.stderr.contains("(ignored)"),
            "{name}: {}",
            run.stderr
        );
    }
    assert_eq!(types(&env, &["get", "codex", "cli"]).stdout, "codex\n");
    assert_eq!(types(&env, &["get", "kiro", "cli"]).stdout, "\n");
}

/// `types detect --json` with these variables, the process tree cut off (`--pid 1`: pid 1 is never
/// examined), so the test's own ancestors cannot matter.
fn detect_env(vars: &[(&str, &str)]) -> Value {
    let env = Env::new();
    let mut cmd = env.cmd();
    cmd.args(["types", "detect", "--json", "--pid", "1"]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let run: Run = cmd.output().unwrap().into();
    one_json(&run)
}

#[test]
fn detection_from_the_environment() {
    for (vars, expected, rule) in [
        (&[("CLAUDE_CODE_SESSION_ID", "s")][..], "claude-code", "session_variable"),
        (&[("CODEX_THREAD_ID", "t")], "codex", "session_variable"),
        (&[("CODEX_SANDBOX", "seatbelt")], "codex", "session_variable"),
        (&[("GEMINI_CLI", "1")], "gemini", "session_variable"),
        (&[("GROK_SESSION_ID", "g")], "grok-build", "session_variable"),
        // agmsg 1.2.1 says gemini: GEMINI_API_KEY sorts first.
        (&[("GEMINI_API_KEY", "k"), ("GROK_SESSION_ID", "g")], "grok-build", "session_variable"),
        (&[("GEMINI_API_KEY", "k")], "gemini", "credential"),
        (&[("GEMINI_API_KEY", "")], "claude-code", "fallback"),
        (&[], "claude-code", "fallback"),
        // No session variables are read for detect=explicit types.
        (&[("explicit", "1")], "claude-code", "fallback"),
        // Two session variables and no process to settle it: agmsg's sorted order.
        (&[("CODEX_THREAD_ID", "t"), ("CLAUDE_CODE_SESSION_ID", "s")], "claude-code", "session_variable"),
    ] {
        let d = detect_env(vars);
        assert_eq!((d["type"].as_str().unwrap(), d["rule"].as_str().unwrap()), (expected, rule), "{vars:?}: {d}");
    }
    let d = detect_env(&[("GEMINI_API_KEY", "k"), ("GROK_SESSION_ID", "g")]);
    assert_eq!(d["variable"], "GROK_SESSION_ID");
    assert!(d["passed_over"][0].as_str().unwrap().contains("GEMINI_API_KEY"), "{d}");
    assert!(d["explanation"].as_str().unwrap().starts_with("rule 1"), "{d}");

    let env = Env::new();
    let run: Run = env
        .cmd()
        .args(["types", "detect", "--explain", "--pid", "1"])
        .env("GROK_SESSION_ID", "g")
        .env("GEMINI_API_KEY", "k")
        .output()
        .unwrap()
        .into();
    run.ok();
    let lines = run.lines();
    assert_eq!(lines[0], "grok-build");
    assert!(lines[1].starts_with("rule 1 (session variable): GROK_SESSION_ID"), "{run:?}");
    assert!(lines[2].starts_with("passed over: GEMINI_API_KEY"), "{run:?}");
}

/// Run `start` again while it fails with ETXTBSY: a file just written may still be open for writing
/// in a child another test thread forked and has not yet exec'd.
fn retry_busy<T>(mut start: impl FnMut() -> std::io::Result<T>) -> T {
    for _ in 0..100 {
        match start() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) => std::thread::sleep(std::time::Duration::from_millis(20)),
            other => return other.unwrap(),
        }
    }
    panic!("the copied program stayed busy");
}

/// Linux's "Text file busy".
const ETXTBSY: i32 = 26;

/// A copy of `/bin/sh` named `name` in `dir` (the process's name is its file's name).
fn shell_named(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::copy("/bin/sh", &path).unwrap();
    path
}

#[test]
fn detection_from_the_process_tree() {
    let env = Env::new();
    let bins = tempfile::tempdir().unwrap();
    let grok = shell_named(bins.path(), "grok");
    let codex = shell_named(bins.path(), "codex-x86_64");
    let bin = common::BIN;
    // `; true` keeps the shell alive as the parent (no exec of the last command).
    let run_under = |shell: &Path, script: &str, vars: &[(&str, &str)]| -> Value {
        let mut cmd = env.program(shell);
        cmd.args(["-c", script, "sh", bin]);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        one_json(&retry_busy(|| cmd.output()).into())
    };

    // The caller itself is named grok.
    let d = run_under(&grok, "\"$1\" types detect --json; true", &[]);
    assert_eq!((d["type"].as_str().unwrap(), d["rule"].as_str().unwrap()), ("grok-build", "process"), "{d}");
    assert_eq!(
        (d["ancestor"]["name"].as_str().unwrap(), d["ancestor"]["depth"].as_u64().unwrap(), d["ancestor"]["pattern"].as_str().unwrap()),
        ("grok", 0, "grok")
    );

    // Two levels up, through a plain shell; and the process beats a shared credential.
    let d = run_under(&codex, "/bin/sh -c '\"$1\" types detect --json; true' sh \"$1\"; true", &[("GEMINI_API_KEY", "k")]);
    assert_eq!((d["type"].as_str().unwrap(), d["rule"].as_str().unwrap()), ("codex", "process"), "{d}");
    assert_eq!(d["ancestor"]["depth"], 1);
    assert_eq!(d["ancestor"]["pattern"], "codex-*");
    assert!(d["passed_over"][0].as_str().unwrap().contains("GEMINI_API_KEY"), "{d}");

    // A session variable inherited from another runtime loses to the nearest runtime process.
    let d = run_under(&codex, "\"$1\" types detect --json; true", &[("CLAUDE_CODE_SESSION_ID", "s"), ("CODEX_THREAD_ID", "t")]);
    assert_eq!((d["type"].as_str().unwrap(), d["variable"].as_str().unwrap()), ("codex", "CODEX_THREAD_ID"), "{d}");
    assert_eq!(d["nearest"]["name"], "codex-x86_64");

    // --pid starts the walk elsewhere: a long-running process named grok.
    let sleeper = bins.path().join("grok-sleep");
    std::fs::copy("/bin/sleep", &sleeper).unwrap();
    let mut child = retry_busy(|| std::process::Command::new(&sleeper).arg("30").spawn());
    // spawn can return before the kernel renames the new program's process: wait until it has.
    let comm = format!("/proc/{}/comm", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read_to_string(&comm).unwrap_or_default().trim_end() != "grok-sleep" && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let run = env.run(&["types", "detect", "--explain", "--pid", &child.id().to_string()]);
    let _ = child.kill();
    let _ = child.wait();
    run.ok();
    assert_eq!(run.lines()[0], "grok-build", "{run:?}");
    assert!(run.lines()[1].contains("ancestor grok-sleep") && run.lines()[1].contains("\"grok-*\""), "{run:?}");
}

#[test]
fn boot_argv_for_every_type() {
    let env = Env::new();
    let project = env.dir.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let p = project.to_str().unwrap();
    let boot = |args: &[&str]| -> Run {
        let mut all = vec!["boot-argv"];
        all.extend_from_slice(args);
        all.extend(["--project", p]);
        types(&env, &all)
    };
    // Reference §5 / boot-command.sh: cli [resume] [model] [options] [name_arg <team>-<agent>] [prompt_arg] prompt.
    let plain: &[(&str, &[&str])] = &[
        ("claude-code", &["claude", "-n", "t-bob", "/agmsg actas bob"]),
        ("codex", &["codex", "$agmsg actas bob"]),
        ("gemini", &["gemini", "$agmsg actas bob"]),
        ("antigravity", &["agy", "--prompt-interactive", "$agmsg actas bob"]),
        ("copilot", &["copilot", "--interactive", "/agmsg actas bob"]),
        ("cursor", &["cursor-agent", "/agmsg actas bob"]),
        ("grok-build", &["grok", "/agmsg actas bob"]),
        ("opencode", &["opencode", "--prompt", "$agmsg actas bob"]),
    ];
    for (name, argv) in plain {
        let b = one_json(&boot(&[name, "t", "bob"]));
        assert_eq!(b["argv"], serde_json::json!(argv), "{name}");
        assert_eq!(b["launcher"], "cli");
        assert_eq!(b["cwd"], p);
        assert_eq!(b["env_set"]["AGMSG_SPAWNED"], "1");
        let monitor = REFERENCE.iter().find(|(n, _)| n == name).unwrap().1.iter().find(|(k, _)| *k == "monitor").unwrap().1;
        assert_eq!(b["wait_ready"], monitor != "no", "{name}");
    }
    let with_all: &[(&str, &[&str])] = &[
        ("claude-code", &["claude", "--resume", "u-1", "--model", "M", "--opt", "-n", "t-bob", "/agmsg actas bob\nstart here"]),
        ("codex", &["codex", "resume", "u-1", "-m", "M", "--opt", "$agmsg actas bob\nstart here"]),
        ("gemini", &["gemini", "--model", "M", "--opt", "$agmsg actas bob\nstart here"]),
        ("antigravity", &["agy", "--model", "M", "--opt", "--prompt-interactive", "$agmsg actas bob\nstart here"]),
        ("copilot", &["copilot", "--model", "M", "--opt", "--interactive", "/agmsg actas bob\nstart here"]),
        ("cursor", &["cursor-agent", "--model", "M", "--opt", "/agmsg actas bob\nstart here"]),
        ("grok-build", &["grok", "--model", "M", "--opt", "/agmsg actas bob\nstart here"]),
        ("opencode", &["opencode", "--model", "M", "--opt", "--prompt", "$agmsg actas bob\nstart here"]),
    ];
    for (name, argv) in with_all {
        let b =
            one_json(&boot(&[name, "t", "bob", "--model", "M", "--boot-prompt", "start here", "--resume", "u-1", "--spawn-arg", "--opt"]));
        assert_eq!(b["argv"], serde_json::json!(argv), "{name}");
    }
    let b = one_json(&boot(&["claude-code", "t", "bob"]));
    assert_eq!(b["env_unset"], serde_json::json!(["CLAUDE_CODE_SESSION_ID"]));
    assert_eq!(b["session_name"], "t-bob");

    // Refused: not spawnable, unknown, a bad name, a missing project.
    for (args, why) in [
        (&["hermes", "t", "bob"][..], "not spawnable"),
        (&["agmsg-app", "t", "bob"], "not spawnable"),
        (&["nope", "t", "bob"], "unknown agent type"),
        (&["codex", "t:x", "bob"], "invalid team name"),
    ] {
        let run = boot(args);
        assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{args:?}");
        assert!(run.stderr.contains(why), "{args:?}: {run:?}");
    }
    let run = types(&env, &["boot-argv", "codex", "t", "bob", "--project", "/no/such/dir"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("not a directory"));

    // --model for a type without model_arg, and a node launcher, from agmsg's installed types.
    let types_dir = env.dir.path().join(".agents/skills/agmsg/scripts/drivers/types");
    write(&types_dir.join("nomodel"), "type.conf", "name=nomodel\ncli=nm\nspawnable=yes\n");
    write(&types_dir.join("kiro"), "type.conf", "name=kiro\nspawn=kiro-launch.mjs\ncmd_prefix=$\nmonitor=no\n");
    let run = boot(&["nomodel", "t", "bob", "--model", "x"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("does not accept --model"), "{run:?}");
    let b = one_json(&boot(&["kiro", "t", "bob", "--boot-prompt", "go", "--spawn-arg", "--transport=x"]));
    let launcher = types_dir.join("kiro/kiro-launch.mjs");
    assert_eq!(b["launcher"], "node");
    assert_eq!(
        b["argv"],
        serde_json::json!([
            "node",
            launcher.to_str().unwrap(),
            "--name",
            "bob",
            "--team",
            "t",
            "--project",
            p,
            "--transport=x",
            "--initial-input",
            "$agmsg actas bob\ngo"
        ])
    );
    assert_eq!(b["wait_ready"], false);
    let env = env.env("AGMSG_NODE_BIN", "/opt/node22/bin/node");
    let run = env.run(&["types", "boot-argv", "kiro", "t", "bob", "--project", p]);
    assert_eq!(one_json(&run)["argv"][0], "/opt/node22/bin/node");
}

#[test]
fn manifest_text_is_shown_never_sent_to_the_terminal() {
    let env = Env::new();
    let types_dir = env.dir.path().join(".agents/skills/agmsg/scripts/drivers/types");
    write(&types_dir.join("evil"), "type.conf", "name=evil\ncli=x\x1b]0;pwned\x07\x1b[2J\nspawnable=yes\n");
    let run = types(&env, &["get", "evil", "cli"]);
    run.ok();
    assert_eq!(run.stdout, "x\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\n");
    for args in [&["describe", "evil"][..], &["list"]] {
        let run = types(&env, args);
        run.ok();
        assert!(!run.stdout.contains('\x1b'), "{args:?}: {run:?}");
    }
    // A malformed manifest: skipped with a warning; describe says it is unknown.
    write(&types_dir.join("binary"), "type.conf", "name=binary\ncli=\u{0}\n");
    let run = types(&env, &["describe", "binary"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("NUL") && run.stderr.contains("unknown agent type"), "{run:?}");
}

/// `types list` shows the delivery modes `delivery set` accepts, read by one rule: a type whose
/// `delivery_modes=` is empty accepts agmsg's default four, and a word that is no mode is neither listed
/// nor accepted. (`types list` once printed the key's raw words: nothing for the first, `sometimes` for
/// the second.)
#[test]
fn list_shows_exactly_the_modes_delivery_set_accepts() {
    let env = Env::new();
    let skill = env.dir.path().join("skill");
    for (name, modes) in [("emptymodes", ""), ("oddmodes", "turn sometimes off")] {
        let dir = skill.join("scripts/drivers/types").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type.conf"), format!("name={name}\nhooks_file=.{name}/hooks.json\ndelivery_modes={modes}\n")).unwrap();
    }
    let env = env.env("AGMSG_SKILL_DIR", skill.to_str().unwrap());
    let rows = types(&env, &["list", "--json"]).json();
    for (name, expected) in [("emptymodes", "monitor turn both off"), ("oddmodes", "turn off")] {
        let row = rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name} listed: {rows:?}"));
        let listed: Vec<&str> = row["delivery_modes"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        assert_eq!(listed.join(" "), expected, "{name}");
        let modes = env.run(&["delivery", "modes", name, "--json"]);
        modes.ok();
        assert_eq!(modes.stdout.trim(), Value::from(listed.clone()).to_string(), "{name}: delivery modes");
        for mode in ["monitor", "turn", "both", "off", "sometimes"] {
            let project = env.dir.path().join(format!("p-{name}-{mode}"));
            std::fs::create_dir(&project).unwrap();
            let set = env.run(&["delivery", "set", mode, name, project.to_str().unwrap()]);
            assert_eq!(set.code == 0, listed.contains(&mode), "{name} {mode}: listed iff accepted: {set:?}");
        }
    }
}
