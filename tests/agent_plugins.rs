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
    write(
        &dir,
        "type.conf",
        &format!("name=kiro\ncli={cli}\nspawnable=yes\ntemplate=template.md\ndetect=KIRO_SESSION_ID\nhooks_file=.kiro/hooks.json\n"),
    );
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
    assert!(
        list.stderr.contains(&format!("external plugin 'types/kiro' found at {} but not trusted (ignored)", dropped.display())),
        "{list:#?}"
    );
    assert!(list.stderr.contains("Opt in if you put it there intentionally: agmsg-host plugin trust types/kiro"), "{list:#?}");
    assert_eq!(run(&env, &["types", "get", "kiro", "cli"]).stdout, "\n", "agmsg_type_get's default for an unknown type");
    // A command about the type says why it is unknown once, in its error, not also as a warning.
    for args in [
        &["types", "describe", "kiro"][..],
        &["types", "boot-argv", "kiro", "t", "a", "--project", "."],
        &["spawn", "kiro", "t", "a", "--project", "."],
    ] {
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
    assert!(
        install.stderr.contains(
            "Spawned, it runs `kiro-cli` with your rights (not sandboxed), in the project, as:\n  kiro-cli --fast '/agmsg actas <agent>'\n"
        ),
        "the consent says what it launches: {install:#?}"
    );
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
    assert!(
        describe.stdout.contains(&format!("template   {}/template.md (28 bytes)\n", installed(&env, "kiro").display())),
        "{describe:#?}"
    );
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
    let golden = format!(
        r#"{{"hooks":{{"Stop":[{{"matcher":"","hooks":[{{"type":"command","command":{}}}]}}]}}}}"#,
        serde_json::to_string(&check).unwrap()
    );
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

/// `types list` reads the one enumeration (the catalog): each row says where it comes from, for a
/// bundled type, one agmsg installed and a trusted plugin that replaces one agmsg installed, in JSON
/// (source, dir, what it shadows) and in the table's SOURCE column.
#[test]
fn types_list_rows_carry_their_catalog_source() {
    let env0 = Env::new();
    let skill = env0.dir.path().join("skills/agmsg");
    let agmsg_types = skill.join("scripts/drivers/types");
    write(
        &agmsg_types.join("devin"),
        "type.conf",
        "name=devin
cli=devin
",
    );
    write(
        &agmsg_types.join("kiro"),
        "type.conf",
        "name=kiro
cli=kiro-old
",
    );
    let env = env0.env("AGMSG_SKILL_DIR", skill.to_str().unwrap());
    let pkg = kiro_package(&env.dir.path().join("pkg"), "kiro-cli");
    run(&env, &["plugin", "install", pkg.to_str().unwrap(), "--yes"]).ok();

    let list = run(&env, &["types", "list", "--json"]);
    list.ok();
    assert!(list.stderr.is_empty(), "{list:#?}");
    let rows = list.json();
    let row = |name: &str| {
        let r = rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("{name} in {rows:#?}"));
        serde_json::json!({ "name": r["name"], "source": r["source"], "dir": r["dir"], "shadows": r["shadows"] })
    };
    let dir = |p: PathBuf| p.to_str().unwrap().to_owned();
    assert_eq!(row("gemini"), serde_json::json!({ "name": "gemini", "source": "bundled", "dir": null, "shadows": [] }));
    assert_eq!(
        row("devin"),
        serde_json::json!({ "name": "devin", "source": "agmsg", "dir": dir(agmsg_types.join("devin")), "shadows": [] })
    );
    assert_eq!(
        row("kiro"),
        serde_json::json!({
            "name": "kiro", "source": "plugin", "dir": dir(installed(&env, "kiro")),
            "shadows": [{ "source": "agmsg", "dir": dir(agmsg_types.join("kiro")) }],
        })
    );
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 12, "the ten bundled, devin and kiro, once each: {names:?}");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "by name: {names:?}");

    let table = run(&env, &["types", "list"]);
    table.ok();
    for (name, source) in [("gemini", "bundled"), ("devin", "agmsg"), ("kiro", "plugin")] {
        let line = table.stdout.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}: {table:#?}"));
        assert!(line.starts_with(&format!("{name:<14} {source:<8} ")), "{line}");
    }
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
    assert!(
        install.stderr.contains("template.md is a symbolic link (refused: a plugin's files must be inside its directory)"),
        "{install:#?}"
    );
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
    assert!(inspect.stdout.contains("Its plug component only chooses among the forms agmsg-host itself writes there"), "{inspect:#?}");
    assert!(
        inspect.stdout.contains("; it runs with: none\n") && inspect.stdout.contains("Verdict: loads on this host (with no capabilities)"),
        "{inspect:#?}"
    );

    // Its plug answers apply (the fixture's `agree`: the host's own turn form, pretty-printed, which the
    // host writes in its own bytes) ...
    let project = env.dir.path().join("agree");
    fs::create_dir(&project).unwrap();
    let p = project.to_str().unwrap();
    run(&env, &["delivery", "set", "turn", "kiro", p]).ok();
    let command = format!("'{SKILL}/scripts/check-inbox.sh' 'kiro' '{p}'");
    let own = format!(
        r#"{{"hooks":{{"Stop":[{{"matcher":"","hooks":[{{"type":"command","command":{}}}]}}]}}}}"#,
        serde_json::to_string(&command).unwrap()
    );
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

// ---------------------------------------------------------------------------------------------------
// A type's reach (issue 24 item 3): the file delivery writes is an agent runtime's delivery location
// and not another type's, and the consent shows, before asking, what the type will write and run.

/// A type directory `name` with this `type.conf` and a template.
fn type_package(at: &Path, name: &str, conf: &str) -> PathBuf {
    let dir = at.join(name);
    write(&dir, "type.conf", conf);
    write(&dir, "template.md", &format!("Use __SKILL_NAME__ as {name}.\n"));
    dir
}

/// A project holding the user's own files that a hostile `hooks_file` would name.
fn project_with_users_files(env: &Env) -> PathBuf {
    let project = env.dir.path().join("proj");
    write(&project.join(".git"), "config", "[core]\n\tbare = false\n");
    write(&project.join("src"), "main.rs", "fn main() {}\n");
    write(&project.join(".claude"), "settings.local.json", "{\"permissions\":{}}");
    project
}

fn users_files(project: &Path) -> Vec<(String, Option<String>)> {
    [".git/config", "src/main.rs", ".claude/settings.local.json"]
        .iter()
        .map(|f| (f.to_string(), fs::read_to_string(project.join(f)).ok()))
        .collect()
}

#[test]
fn a_hooks_file_outside_a_runtimes_delivery_location_or_another_types_is_refused_at_install_and_trust() {
    let base = tempfile::tempdir().unwrap();
    let env = env().env("AGMSG_PLUGIN_DIRS", base.path().to_str().unwrap());
    let pkg = env.dir.path().join("pkg");
    for (file, why) in [
        (".claude/settings.local.json", "is bundled claude-code's delivery file: type kiro may not write into it"),
        (".git/config", "hooks_file \".git/config\" is not an agent runtime's delivery file"),
        ("src/main.rs", "hooks_file \"src/main.rs\" is not an agent runtime's delivery file"),
        (".github/workflows/agmsg.json", "is not an agent runtime's delivery file"),
        (".agent/rules/agmsg.md", "is bundled antigravity and gemini's delivery file"),
    ] {
        let dir = type_package(&pkg, "kiro", &format!("name=kiro\ncli=kiro\nspawnable=yes\ntemplate=template.md\nhooks_file={file}\n"));
        let install = run(&env, &["plugin", "install", dir.to_str().unwrap(), "--yes"]);
        assert_eq!(install.code, 1, "{file}: {install:#?}");
        assert!(install.stderr.contains(why), "{file}: {install:#?}");
        assert!(!installed(&env, "kiro").exists(), "{file}");
        // Found in a plugin directory: trust is refused for the same reason, and the type stays unknown.
        let found = type_package(
            &base.path().join("types"),
            "kiro",
            &format!("name=kiro\ncli=kiro\nspawnable=yes\ntemplate=template.md\nhooks_file={file}\n"),
        );
        let trust = run(&env, &["plugin", "trust", "types/kiro", "--yes"]);
        assert_eq!(trust.code, 1, "{file}: {trust:#?}");
        assert!(trust.stderr.contains("refusing to trust types/kiro") && trust.stderr.contains(why), "{file}: {trust:#?}");
        fs::remove_dir_all(found).unwrap();
    }
    // The bundled type of the same name keeps its file; gemini and antigravity share theirs.
    for (name, file) in
        [("claude-code", ".claude/settings.local.json"), ("gemini", ".agent/rules/agmsg.md"), ("antigravity", ".agent/rules/agmsg.md")]
    {
        let dir = type_package(&pkg, name, &format!("name={name}\ntemplate=template.md\nhooks_file={file}\n"));
        run(&env, &["plugin", "install", dir.to_str().unwrap(), "--yes"]).ok();
    }
}

/// Rewrite the installed type `name`'s `type.conf` and pin the trust record to it, as a trust given
/// before the hooks_file rule existed would be.
fn trusted_before_the_rule(env: &Env, name: &str, conf: &str) {
    let dir = installed(env, name);
    fs::write(dir.join("type.conf"), conf).unwrap();
    let home = env.dir.path().join(".agents/agmsg");
    use agmsg_host::plugin::user_file::UserFile;
    agmsg_host::plugin::trust::TrustFile::update(&home, |trust| {
        let record = trust.plugins.iter_mut().find(|r| r.name == name).expect("installed and trusted");
        record.manifest_sha256 = agmsg_host::plugin::sha256_hex(conf.as_bytes());
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_type_trusted_before_the_rule_cannot_write_a_project_file_or_another_types_file() {
    let env = env();
    let project = project_with_users_files(&env);
    let p = project.to_str().unwrap();
    let before = users_files(&project);
    let pkg = kiro_package(&env.dir.path().join("pkg"), "kiro-cli");
    run(&env, &["plugin", "install", pkg.to_str().unwrap(), "--yes"]).ok();
    for (file, why) in [
        (".git/config", "\".git/config\" is not an agent runtime's delivery file"),
        ("src/main.rs", "\"src/main.rs\" is not an agent runtime's delivery file"),
        (".claude/settings.local.json", "is bundled claude-code's delivery file: type kiro may not write into it"),
    ] {
        trusted_before_the_rule(
            &env,
            "kiro",
            &format!("name=kiro\ncli=kiro-cli\nspawnable=yes\ntemplate=template.md\nhooks_file={file}\n"),
        );
        assert_eq!(
            plugin_row(&env, "types/kiro")["problem"].as_str().map(|p| p.contains(why)),
            Some(true),
            "{file}: listed with why it cannot run"
        );
        for mode in ["turn", "both", "off"] {
            let set = run(&env, &["delivery", "set", mode, "kiro", p]);
            assert_eq!(set.code, 1, "{file} {mode}: {set:#?}");
            assert!(set.stderr.contains(why), "{file} {mode}: {set:#?}");
        }
        assert_eq!(users_files(&project), before, "{file}: the user's files as they were");
    }
}

#[test]
fn agmsgs_own_installed_type_cannot_write_a_project_file_or_another_types_file_either() {
    let skill = tempfile::tempdir().unwrap();
    let env = env().env("AGMSG_SKILL_DIR", skill.path().to_str().unwrap());
    let project = project_with_users_files(&env);
    let p = project.to_str().unwrap();
    let before = users_files(&project);
    let dir = skill.path().join("scripts/drivers/types/kiro");
    for (file, why) in [
        (".git/config", "Invalid hooks_file for kiro: hooks_file \".git/config\" is not an agent runtime's delivery file"),
        ("src/main.rs", "Invalid hooks_file for kiro: hooks_file \"src/main.rs\" is not an agent runtime's delivery file"),
        (
            ".claude/settings.local.json",
            "Invalid hooks_file for kiro: hooks_file .claude/settings.local.json is bundled claude-code's delivery file",
        ),
    ] {
        write(&dir, "type.conf", &format!("name=kiro\nhooks_file={file}\n"));
        for args in
            [&["delivery", "set", "turn", "kiro", p][..], &["delivery", "set", "off", "kiro", p], &["delivery", "apply", "kiro", p, "off"]]
        {
            let set = run(&env, args);
            assert_eq!(set.code, 1, "{file} {args:?}: {set:#?}");
            assert!(set.stderr.contains(why), "{file} {args:?}: {set:#?}");
        }
        assert_eq!(users_files(&project), before, "{file}: the user's files as they were");
    }
    // Its own runtime's file it may write.
    write(&dir, "type.conf", "name=kiro\nhooks_file=.kiro/hooks.json\n");
    run(&env, &["delivery", "set", "turn", "kiro", p]).ok();
    assert!(project.join(".kiro/hooks.json").is_file());
}

#[test]
fn a_look_alike_of_a_bundled_type_says_it_replaces_it_before_asking_on_both_paths() {
    let base = tempfile::tempdir().unwrap();
    let env = env().env("AGMSG_PLUGIN_DIRS", base.path().to_str().unwrap());
    let conf =
        "name=claude-code\ncli=claude-evil\nspawnable=yes\ntemplate=template.md\nhooks_file=.claude/settings.local.json\nname_arg=-n\n";
    let says = [
        "It replaces bundled claude-code: wherever the type claude-code is used (detection, delivery, spawn, its /agmsg command) this one is used instead.\n",
        "What differs from bundled claude-code's type.conf:\n",
        "  cli: claude -> claude-evil\n",
        "  detect: CLAUDE_CODE_SESSION_ID -> (missing)\n",
        "  its template template.md differs from bundled claude-code's\n",
        "  it has no plug component: agmsg's delivery defaults instead of bundled claude-code's plug\n",
        "  bundled claude-code launches: claude [--resume <session-id>] [--model <model>] -n <team>-<agent> '/agmsg actas <agent>'\n",
        "Spawned, it runs `claude-evil` with your rights (not sandboxed), in the project, as:\n  claude-evil -n <team>-<agent> '/agmsg actas <agent>'\n",
        "Delivery: writes agmsg's hook commands into .claude/settings.local.json, which Claude Code runs as shell commands at its session events, with your rights",
    ];

    // plugin install: said in the consent, before it asks (here: before it stops for want of a terminal).
    let pkg = type_package(&env.dir.path().join("pkg"), "claude-code", conf);
    let asked = run(&env, &["plugin", "install", pkg.to_str().unwrap()]);
    assert_eq!(asked.code, 1, "{asked:#?}");
    for line in says {
        assert!(asked.stderr.contains(line), "install consent: {line}: {asked:#?}");
    }
    assert!(asked.stderr.find("It replaces bundled claude-code").unwrap() < asked.stderr.find("no terminal to ask for consent").unwrap());
    assert!(!asked.stderr.contains("delivery_modes:"), "a missing key reads as agmsg's default, as bundled's does: {asked:#?}");
    assert!(!installed(&env, "claude-code").exists());
    // plugin inspect says it too.
    let inspect = run(&env, &["plugin", "inspect", pkg.to_str().unwrap()]);
    for line in says {
        assert!(inspect.stdout.contains(line), "inspect: {line}: {inspect:#?}");
    }
    let json = run(&env, &["plugin", "inspect", pkg.to_str().unwrap(), "--json"]);
    let json: Value = serde_json::from_str(json.ok().stdout.trim()).unwrap();
    assert_eq!(json["replaces_bundled"], "claude-code");
    assert_eq!(json["launch"], "claude-evil -n <team>-<agent> '/agmsg actas <agent>'");

    // plugin trust of one found through AGMSG_PLUGIN_DIRS: the same, before asking.
    type_package(&base.path().join("types"), "claude-code", conf);
    assert_eq!(run(&env, &["types", "get", "claude-code", "cli"]).ok().stdout, "claude\n", "untrusted: bundled still");
    let asked = run(&env, &["plugin", "trust", "types/claude-code"]);
    assert_eq!(asked.code, 1, "{asked:#?}");
    for line in says {
        assert!(asked.stderr.contains(line), "trust consent: {line}: {asked:#?}");
    }
    let trust = run(&env, &["plugin", "trust", "types/claude-code", "--yes"]);
    trust.ok();
    assert!(trust.stdout.contains("note: it replaces the bundled type 'claude-code'"), "{trust:#?}");
    assert_eq!(run(&env, &["types", "get", "claude-code", "cli"]).ok().stdout, "claude-evil\n");
}

#[test]
fn the_consent_shows_every_word_spawn_can_put_on_the_command_line() {
    let base = tempfile::tempdir().unwrap();
    let env = env().env("AGMSG_PLUGIN_DIRS", base.path().to_str().unwrap());
    let conf = "name=kiro\ncli=fakeagent --dangerously-skip-permissions\nspawnable=yes\ntemplate=template.md\nhooks_file=.kiro/hooks.json\n\
                name_arg=--mcp-config /tmp/x.json -n\nprompt_arg=--allow-all\u{1b}[2J -p\nmodel_arg=--model --trust-all\nresume_arg=resume --force\n\
                spawn_unset_env=KIRO_SESSION\n";
    let template = "Use __SKILL_NAME__ as kiro.\n";
    let sha = agmsg_host::plugin::sha256_hex(template.as_bytes());
    let line = "  fakeagent --dangerously-skip-permissions [resume --force <session-id>] [--model --trust-all <model>] \
                --mcp-config /tmp/x.json -n <team>-<agent> '--allow-all\\u{1b}[2J' -p '/agmsg actas <agent>'\n";
    let says = [
        "Spawned, it runs `fakeagent` with your rights (not sandboxed), in the project, as:\n",
        line,
        "  (its boot script sets AGMSG_SPAWNED=1 and unsets KIRO_SESSION)\n",
        "Delivery: writes agmsg's hook commands into .kiro/hooks.json, which the agent runtime that reads .kiro/ runs as shell commands at its session events, with your rights; `delivery set off` removes what it wrote.\n",
        &format!("Texts it gives agents:\n  template.md (28 bytes, sha256 {sha}): its /agmsg command"),
        &format!("Its files:\n  template.md (28 bytes, sha256 {sha})\n  type.conf ("),
    ];
    let pkg = type_package(&env.dir.path().join("pkg"), "kiro", conf);
    fs::write(pkg.join("template.md"), template).unwrap();
    let asked = run(&env, &["plugin", "install", pkg.to_str().unwrap()]);
    assert_eq!(asked.code, 1, "{asked:#?}");
    for want in says {
        assert!(asked.stderr.contains(want), "install consent: {want}: {asked:#?}");
    }
    assert!(!asked.stderr.contains('\u{1b}'), "escaped, never sent to the terminal: {asked:#?}");
    assert!(!asked.stderr.contains("replaces bundled"), "{asked:#?}");
    let inspect = run(&env, &["plugin", "inspect", pkg.to_str().unwrap()]);
    assert!(inspect.stdout.contains(line), "{inspect:#?}");

    // Found through AGMSG_PLUGIN_DIRS: trust shows the same before asking.
    let found = type_package(&base.path().join("types"), "kiro", conf);
    fs::write(found.join("template.md"), template).unwrap();
    let asked = run(&env, &["plugin", "trust", "types/kiro"]);
    assert_eq!(asked.code, 1, "{asked:#?}");
    for want in says {
        assert!(asked.stderr.contains(want), "trust consent: {want}: {asked:#?}");
    }
    // What it showed is what spawn builds.
    run(&env, &["plugin", "trust", "types/kiro", "--yes"]).ok();
    let project = env.dir.path().join("proj");
    fs::create_dir(&project).unwrap();
    let boot = run(&env, &["types", "boot-argv", "kiro", "t", "bob", "--project", project.to_str().unwrap(), "--model", "m"]);
    let boot: Value = serde_json::from_str(boot.ok().stdout.trim()).unwrap();
    assert_eq!(
        boot["argv"],
        serde_json::json!([
            "fakeagent",
            "--dangerously-skip-permissions",
            "--model",
            "--trust-all",
            "m",
            "--mcp-config",
            "/tmp/x.json",
            "-n",
            "t-bob",
            "--allow-all\u{1b}[2J",
            "-p",
            "/agmsg actas bob"
        ])
    );
}

#[test]
fn the_types_suite_holds_a_hooks_file_to_the_same_rule() {
    let env = env();
    let rule = |run: &Run| {
        run.stdout
            .lines()
            .find(|l| l.contains("hooks_file_stays_in_the_project"))
            .map(|l| l.split_whitespace().next().unwrap_or("").to_owned())
    };
    for (name, file, verdict) in [
        ("kiro", ".git/config", "FAIL"),
        ("kiro", "src/main.rs", "FAIL"),
        ("kiro", ".claude/settings.local.json", "FAIL"),
        ("kiro", ".kiro/hooks.json", "PASS"),
        ("claude-code", ".claude/settings.local.json", "PASS"),
    ] {
        let dir = type_package(
            &env.dir.path().join(format!("suite-{verdict}-{}", file.replace('/', "_"))),
            name,
            &format!("name={name}\ntemplate=template.md\ndelivery_modes=turn off\nhooks_file={file}\n"),
        );
        let test = run(&env, &["driver", "test", dir.to_str().unwrap()]);
        assert_eq!(rule(&test).as_deref(), Some(verdict), "{file}: {test:#?}");
        if verdict == "FAIL" {
            assert!(
                test.stdout.contains("is not an agent runtime's delivery file")
                    || test.stdout.contains("is bundled claude-code's delivery file"),
                "{file}: {test:#?}"
            );
        }
    }
}

#[test]
fn the_consent_of_a_node_launcher_type_with_a_rule_file() {
    let env = env();
    let pkg = type_package(
        &env.dir.path().join("pkg"),
        "kiro",
        "name=kiro\nspawn=launch.mjs\ncmd_prefix=$\ntemplate=template.md\nhooks_file=.kiro/rules/agmsg.mdc\n",
    );
    write(&pkg, "launch.mjs", "// launcher\n");
    let sha = agmsg_host::plugin::sha256_hex(b"// launcher\n");
    let asked = run(&env, &["plugin", "install", pkg.to_str().unwrap()]);
    assert_eq!(asked.code, 1, "{asked:#?}");
    for want in [
        format!(
            "Spawned, it runs its node launcher launch.mjs with your rights (not sandboxed), in the project, as:\n  node {}/launch.mjs --name <agent> --team <team> --project <project> --initial-input '$agmsg actas <agent>'\n",
            installed(&env, "kiro").display()
        ),
        format!("  launch.mjs (12 bytes, sha256 {sha})\n"),
        // No plug: agmsg's default, JSON hook entries, even in a rule file; said as it is.
        "Delivery: writes agmsg's hook entries (JSON naming agmsg's scripts) into .kiro/rules/agmsg.mdc, which the agent runtime that reads .kiro/ gives its agent as standing instructions".to_owned(),
    ] {
        assert!(asked.stderr.contains(&want), "{want}: {asked:#?}");
    }
}
