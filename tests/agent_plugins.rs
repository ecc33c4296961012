//! External agent types through the plugin workflow (issue 17 §1): a third-party type directory
//! (`type.conf`, its template, optionally a plug component) is invisible until trusted, with the
//! warning that names the command that trusts it; `plugin install` puts it in
//! `$AGMSG_HOME/plugins/types/<name>/` and trusts it; then it is used by name (`types list | get |
//! describe | detect | boot-argv`, `delivery set | status`). Changing any of its files makes it
//! untrusted again; among trusted candidates the later base wins; a hostile directory (a link out, a
//! climbing template) is refused with a clear error and nothing is read outside it.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Env, Run};
use serde_json::Value;

const SKILL: &str = "/opt/skills/agmsg";

fn write(dir: &Path, file: &str, text: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(file), text).unwrap();
}

/// A third-party type's directory, as its author ships it.
fn kiro_package(at: &Path, cli: &str) -> PathBuf {
    let dir = at.join("kiro");
    write(&dir, "type.conf", &format!("name=kiro\ncli={cli}\nspawnable=yes\ntemplate=template.md\ndetect=KIRO_SESSION_ID\nhooks_file=.kiro/hooks.json\n"));
    write(&dir, "template.md", "Use __SKILL_NAME__ as kiro.\n");
    dir
}

fn env() -> Env {
    Env::new().env("AGMSG_SKILL_DIR", SKILL)
}

fn run(env: &Env, args: &[&str]) -> Run {
    env.run(args)
}

fn installed(env: &Env, name: &str) -> PathBuf {
    env.dir.path().join(".agents/agmsg/plugins/types").join(name)
}

fn type_names(env: &Env) -> Vec<String> {
    let list = run(env, &["types", "list", "--json"]);
    list.ok();
    list.json().iter().map(|row| row["name"].as_str().unwrap().to_owned()).collect()
}

fn plugin_row(env: &Env, reference: &str) -> Value {
    let list = run(env, &["plugin", "list", "--json"]);
    list.ok();
    list.json().into_iter().find(|r| r["driver"] == reference).unwrap_or_else(|| panic!("{reference} in {list:#?}"))
}

#[test]
fn an_untrusted_type_is_invisible_then_installed_and_used_by_name() {
    let env = env();
    // Dropped into $AGMSG_HOME/plugins by hand: found, not trusted, invisible.
    let dropped = kiro_package(&env.dir.path().join(".agents/agmsg/plugins/types"), "kiro-cli --fast");
    let list = run(&env, &["types", "list", "--json"]);
    list.ok();
    assert!(!type_names(&env).contains(&"kiro".to_owned()));
    assert!(list.stderr.contains(&format!("external plugin 'types/kiro' found at {} but not trusted (ignored)", dropped.display())), "{list:#?}");
    assert!(list.stderr.contains("Opt in if you put it there intentionally: agmsg-host plugin trust types/kiro"), "{list:#?}");
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).stdout, "\n", "agmsg_type_get's default for an unknown type");
    // A command about the type says why it is unknown once, in its error, not also as a warning.
    for args in [&["types", "describe", "kiro"][..], &["types", "boot-argv", "kiro", "t", "a", "--project", "."], &["spawn", "kiro", "t", "a", "--project", "."]] {
        let refused = run(&env, args);
        assert_eq!(refused.code, 1, "{args:?}: {refused:#?}");
        assert_eq!(refused.stderr.matches("agmsg-host plugin trust types/kiro").count(), 1, "{args:?}: {refused:#?}");
    }
    assert_eq!(plugin_row(&env, "types/kiro")["state"], "UNTRUSTED");
    let project = env.dir.path().join("proj");
    fs::create_dir(&project).unwrap();
    let p = project.to_str().unwrap();
    let refused = run(&env, &["delivery", "set", "turn", "kiro", p]);
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("unknown agent type \"kiro\""), "{refused:#?}");
    assert!(!project.join(".kiro").exists());

    // plugin inspect shows what it is and what it would get.
    let inspect = run(&env, &["plugin", "inspect", "types/kiro"]);
    inspect.ok();
    for line in [
        "types/kiro (an agent type) from",
        "no plug component: agmsg's delivery defaults throughout",
        "A type declares no capabilities; its plug component, if it ships one, runs with none",
        "  cli=kiro-cli --fast\n",
        "Template: template.md (28 bytes)",
        "Installed: UNTRUSTED: not trusted (trust it with: agmsg-host plugin trust types/kiro)",
    ] {
        assert!(inspect.stdout.contains(line), "{line}: {inspect:#?}");
    }

    // Installed from the author's directory (replacing the dropped copy), and trusted.
    fs::remove_dir_all(&dropped).unwrap();
    let pkg = kiro_package(&env.dir.path().join("pkg"), "kiro-cli --fast");
    let no_consent = run(&env, &["plugin", "install", pkg.to_str().unwrap()]);
    assert_eq!(no_consent.code, 1, "no terminal and no --yes: {no_consent:#?}");
    assert!(no_consent.stderr.contains("--yes"), "{no_consent:#?}");
    assert!(!installed(&env, "kiro").exists());
    let install = run(&env, &["plugin", "install", pkg.to_str().unwrap(), "--yes"]);
    install.ok();
    assert_eq!(install.stdout, format!("installed types/kiro in {}\ntrusted; it runs with: none\n", installed(&env, "kiro").display()));
    assert!(install.stderr.contains("Spawned, it runs `kiro-cli --fast` with your rights (not sandboxed)."), "the consent says what it launches: {install:#?}");
    assert_eq!(fs::read_to_string(installed(&env, "kiro").join("template.md")).unwrap(), "Use __SKILL_NAME__ as kiro.\n");
    assert_eq!(plugin_row(&env, "types/kiro")["state"], "trusted");

    // Used by name.
    let list = run(&env, &["types", "list", "--json"]);
    list.ok();
    assert!(list.stderr.is_empty(), "{list:#?}");
    let row = list.json().into_iter().find(|r| r["name"] == "kiro").unwrap();
    assert_eq!(row["source"], "plugin");
    assert_eq!(row["dir"], installed(&env, "kiro").to_str().unwrap());
    assert_eq!(row["spawnable"], true);
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).ok().stdout, "kiro-cli --fast\n");
    let describe = run(&env, &["types", "describe", "kiro"]);
    describe.ok();
    assert!(describe.stdout.contains(&format!("source     plugin {}\n", installed(&env, "kiro").display())), "{describe:#?}");
    assert!(describe.stdout.contains(&format!("template   {}/template.md (28 bytes)\n", installed(&env, "kiro").display())), "{describe:#?}");
    let boot = run(&env, &["types", "boot-argv", "kiro", "t", "bob", "--project", p]);
    let boot: Value = serde_json::from_str(boot.ok().stdout.trim()).unwrap();
    assert_eq!(boot["argv"], serde_json::json!(["kiro-cli", "--fast", "/agmsg actas bob"]));
    assert_eq!(boot["cwd"], p);
    let mut detect = env.cmd();
    detect.args(["types", "detect", "--json", "--pid", "1"]).env("KIRO_SESSION_ID", "s1");
    let detect: Run = detect.output().unwrap().into();
    let detect: Value = serde_json::from_str(detect.ok().stdout.trim()).unwrap();
    assert_eq!((detect["type"].as_str(), detect["rule"].as_str()), (Some("kiro"), Some("session_variable")), "{detect}");

    // delivery: agmsg's default engine from its manifest keys (JSON hooks in its hooks_file).
    let set = run(&env, &["delivery", "set", "turn", "kiro", p]);
    set.ok();
    assert_eq!(set.lines()[0], format!("Delivery mode set to 'turn' for {p} (kiro)"));
    let check = format!("'{SKILL}/scripts/check-inbox.sh' 'kiro' '{p}'");
    let golden = format!(r#"{{"hooks":{{"Stop":[{{"matcher":"","hooks":[{{"type":"command","command":{}}}]}}]}}}}"#, serde_json::to_string(&check).unwrap());
    assert_eq!(fs::read_to_string(project.join(".kiro/hooks.json")).unwrap(), golden);
    assert_eq!(run(&env, &["delivery", "status", "kiro", p]).ok().lines()[0], "mode: turn");
    run(&env, &["delivery", "set", "off", "kiro", p]).ok();
    assert_eq!(fs::read_to_string(project.join(".kiro/hooks.json")).unwrap(), "{}");

    // Untrusted: invisible again, with the warning.
    assert_eq!(run(&env, &["plugin", "untrust", "types/kiro"]).ok().stdout, "untrusted types/kiro; it is ignored from now on\n");
    let list = run(&env, &["types", "list"]);
    list.ok();
    assert!(!type_names(&env).contains(&"kiro".to_owned()));
    assert!(list.stderr.contains("agmsg-host plugin trust types/kiro"), "{list:#?}");
    // And back once trusted again.
    run(&env, &["plugin", "trust", "types/kiro", "--yes"]).ok();
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).ok().stdout, "kiro-cli --fast\n");
}

#[test]
fn changing_any_file_makes_a_type_untrusted_again() {
    let env = env();
    let pkg = kiro_package(&env.dir.path().join("pkg"), "kiro-cli");
    run(&env, &["plugin", "install", pkg.to_str().unwrap(), "--yes"]).ok();
    let dir = installed(&env, "kiro");
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).ok().stdout, "kiro-cli\n");

    // type.conf edited: untrusted, said so.
    fs::write(dir.join("type.conf"), "name=kiro\ncli=evil\ntemplate=template.md\n").unwrap();
    let list = run(&env, &["types", "list"]);
    assert!(!type_names(&env).contains(&"kiro".to_owned()));
    assert!(list.stderr.contains("but its type.conf changed since it was trusted (ignored)"), "{list:#?}");
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).stdout, "\n");
    let row = plugin_row(&env, "types/kiro");
    assert_eq!(row["state"], "UNTRUSTED");
    assert_eq!(row["problem"], "its type.conf changed since it was trusted");
    run(&env, &["plugin", "trust", "types/kiro", "--yes"]).ok();
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).ok().stdout, "evil\n");

    // The template, or a new file beside it: untrusted too.
    fs::write(dir.join("template.md"), "changed\n").unwrap();
    let list = run(&env, &["types", "list"]);
    assert!(list.stderr.contains("but its files (template, plug, other code) changed since it was trusted (ignored)"), "{list:#?}");
    run(&env, &["plugin", "trust", "types/kiro", "--yes"]).ok();
    assert!(type_names(&env).contains(&"kiro".to_owned()));
    fs::write(dir.join("launch.mjs"), "// new code\n").unwrap();
    assert!(!type_names(&env).contains(&"kiro".to_owned()));
    fs::remove_file(dir.join("launch.mjs")).unwrap();
    assert!(type_names(&env).contains(&"kiro".to_owned()), "as trusted once the file is gone");

    // Removed: gone, trust and all.
    run(&env, &["plugin", "remove", "types/kiro"]).ok();
    assert!(!dir.exists());
    assert!(!type_names(&env).contains(&"kiro".to_owned()));
}

#[test]
fn among_trusted_candidates_the_later_wins_and_shadowing_is_said() {
    let env0 = env();
    let (a, b) = (env0.dir.path().join("a"), env0.dir.path().join("b"));
    let (a_kiro, b_kiro) = (kiro_package(&a.join("types"), "kiro-a"), kiro_package(&b.join("types"), "kiro-b"));
    write(&b.join("types/codex"), "type.conf", "name=codex\ncli=codex-fork\ndetect=explicit\n");
    let dirs = std::env::join_paths([&a, &b]).unwrap();
    let env = env0.env("AGMSG_PLUGIN_DIRS", dirs.to_str().unwrap());

    // Two candidates: trust needs --path.
    run(&env, &["plugin", "trust", "types/kiro", "--path", a_kiro.to_str().unwrap(), "--yes"]).ok();
    let list = run(&env, &["types", "list"]);
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).ok().stdout, "kiro-a\n", "the only trusted one");
    assert!(list.stderr.contains(&format!("agmsg-host plugin trust types/kiro --path {}", b_kiro.display())), "{list:#?}");
    run(&env, &["plugin", "trust", "types/kiro", "--path", b_kiro.to_str().unwrap(), "--yes"]).ok();
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).ok().stdout, "kiro-b\n", "the later base wins");
    let describe = run(&env, &["types", "describe", "kiro"]);
    assert!(describe.ok().stdout.contains(&format!("shadows    plugin {}\n", a_kiro.display())), "{describe:#?}");

    // An external type shadows a bundled one only once trusted.
    assert_eq!(run(&env, &["types", "get", "codex", "cli"]).ok().stdout, "codex\n");
    run(&env, &["plugin", "trust", "types/codex", "--yes"]).ok();
    assert_eq!(run(&env, &["types", "get", "codex", "cli"]).ok().stdout, "codex-fork\n");
    let describe = run(&env, &["types", "describe", "codex", "--json"]);
    let describe: Value = serde_json::from_str(describe.ok().stdout.trim()).unwrap();
    assert_eq!(describe["source"], "plugin");
    assert_eq!(describe["shadows"], serde_json::json!([{ "source": "bundled", "dir": null }]));
}

#[test]
fn a_hostile_type_directory_is_refused_and_nothing_outside_is_read() {
    let env = env();
    let secret = env.dir.path().join("secret.txt");
    fs::write(&secret, "SECRET\n").unwrap();

    // A template that is a link to a file outside.
    let linky = env.dir.path().join("pkg/linky");
    write(&linky, "type.conf", "name=linky\ntemplate=template.md\n");
    std::os::unix::fs::symlink(&secret, linky.join("template.md")).unwrap();
    let install = run(&env, &["plugin", "install", linky.to_str().unwrap(), "--yes"]);
    assert_eq!(install.code, 1, "{install:#?}");
    assert!(install.stderr.contains("template.md is a symbolic link (refused: a plugin's files must be inside its directory)"), "{install:#?}");
    assert!(!installed(&env, "linky").exists());

    // A template that climbs out.
    let climb = env.dir.path().join("pkg/climb");
    write(&climb, "type.conf", "name=climb\ntemplate=../../secret.txt\n");
    let install = run(&env, &["plugin", "install", climb.to_str().unwrap(), "--yes"]);
    assert_eq!(install.code, 1, "{install:#?}");
    assert!(install.stderr.contains("invalid template \"../../secret.txt\": must be relative, without '..'"), "{install:#?}");
    assert!(!installed(&env, "climb").exists());

    // Dropped into the plugin directory by hand: the linked template, and a type directory that is
    // itself a link out of its base. Neither can be trusted, neither is visible, nothing prints the secret.
    let types = env.dir.path().join(".agents/agmsg/plugins/types");
    fs::create_dir_all(&types).unwrap();
    fs::rename(&linky, types.join("linky")).unwrap();
    let outside = env.dir.path().join("outside/real");
    write(&outside, "type.conf", "name=real\ntemplate=template.md\n");
    write(&outside, "template.md", "outside\n");
    std::os::unix::fs::symlink(&outside, types.join("real")).unwrap();
    for name in ["linky", "real"] {
        let trust = run(&env, &["plugin", "trust", &format!("types/{name}"), "--yes"]);
        assert_eq!(trust.code, 1, "{name}: {trust:#?}");
        assert!(trust.stderr.contains("refusing to trust types/") && trust.stderr.contains("symbolic link"), "{name}: {trust:#?}");
    }
    let list = run(&env, &["types", "list"]);
    list.ok();
    assert!(!list.stdout.contains("linky") && !list.stdout.contains("real"), "{list:#?}");
    assert!(list.stderr.contains("external plugin 'types/linky' found at") && list.stderr.contains("cannot run (ignored)"), "{list:#?}");
    let inspect = run(&env, &["plugin", "inspect", "types/linky"]);
    assert_eq!(inspect.code, 1);
    assert!(inspect.stderr.contains("symbolic link"), "{inspect:#?}");
    for out in [&list.stdout, &list.stderr, &inspect.stdout, &inspect.stderr] {
        assert!(!out.contains("SECRET") && !out.contains("outside\n"), "{out}");
    }
}

#[test]
fn a_type_with_a_plug_component_runs_it_sandboxed() {
    let env = env().env("AGMSG_DRIVER_TIMEOUT_MS", "1500").env("AGMSG_DRIVER_MEMORY_MB", "64");
    let pkg = kiro_package(&env.dir.path().join("pkg"), "kiro-cli");
    fs::copy(common::fixture("hostile-plug"), pkg.join("plug.wasm")).unwrap();
    let manifest = "name = \"kiro\"\naxis = \"types\"\nversion = \"0.1.0\"\napi = \"1.0.0\"\ncomponent = \"plug.wasm\"\n";
    fs::write(pkg.join("agmsg-driver.toml"), format!("{manifest}[capabilities]\nenv = [\"HOME\"]\n")).unwrap();
    // A type's plug gets no capabilities: one that asks is refused before anything is written.
    let install = run(&env, &["plugin", "install", pkg.to_str().unwrap(), "--yes"]);
    assert_eq!(install.code, 1, "{install:#?}");
    assert!(install.stderr.contains("an agent type's plug component runs with no capabilities, but it asks for env:HOME"), "{install:#?}");
    assert!(!installed(&env, "kiro").exists());

    fs::write(pkg.join("agmsg-driver.toml"), manifest).unwrap();
    run(&env, &["plugin", "install", pkg.to_str().unwrap(), "--yes"]).ok();
    let inspect = run(&env, &["plugin", "inspect", "types/kiro"]);
    inspect.ok();
    assert!(inspect.stdout.contains("plug component plug.wasm 0.1.0 (built against agmsg:agent@1.0.0)"), "{inspect:#?}");
    assert!(inspect.stdout.contains("; it runs with: none\n") && inspect.stdout.contains("Verdict: loads on this host (with no capabilities)"), "{inspect:#?}");

    // Its plug answers apply (the fixture's `agree`: the host's own turn form, pretty-printed, which the
    // host writes in its own bytes) ...
    let project = env.dir.path().join("agree");
    fs::create_dir(&project).unwrap();
    let p = project.to_str().unwrap();
    run(&env, &["delivery", "set", "turn", "kiro", p]).ok();
    let command = format!("'{SKILL}/scripts/check-inbox.sh' 'kiro' '{p}'");
    let own = format!(r#"{{"hooks":{{"Stop":[{{"matcher":"","hooks":[{{"type":"command","command":{}}}]}}]}}}}"#, serde_json::to_string(&command).unwrap());
    assert_eq!(fs::read_to_string(project.join(".kiro/hooks.json")).unwrap(), own);
    // ... and when it misbehaves it fails naming the plug, with the project as it was.
    let trap = env.dir.path().join("trap");
    fs::create_dir(&trap).unwrap();
    let run_trap = run(&env, &["delivery", "set", "turn", "kiro", trap.to_str().unwrap()]);
    assert_eq!(run_trap.code, 1);
    assert!(run_trap.stderr.contains("'kiro'") && run_trap.stderr.contains("hostile plug: trap"), "{run_trap:#?}");
    assert!(!trap.join(".kiro/hooks.json").exists());
    // The component is pinned with the type: replacing it untrusts the type.
    fs::write(installed(&env, "kiro").join("plug.wasm"), b"\0asm not really").unwrap();
    assert!(!type_names(&env).contains(&"kiro".to_owned()));
}
