//! agmsg-host against agmsg's own engine and checks (issue 27 item 2).
//!
//! Delivery parity, both ways: agmsg 1.2.1's real `scripts/delivery.sh` (extracted at run time from
//! agmsg's repository, `AGMSG_REFERENCE_REPO`, a git directory; never committed here) and `agmsg-host
//! delivery` take turns on one project for every bundled type and every mode it accepts. Whatever one
//! sets, the other's status reads as the same mode; the file either writes is byte for byte what the
//! other writes; and each removes the other's entries and keeps the user's. Skipped, saying why, when
//! agmsg's repository is not on this machine (CI has none), unless `AGMSG_REQUIRE_REFERENCE=1`.
//!
//! The shims `shim install` puts into agmsg's `scripts/` pass the sweep agmsg's own test suite runs
//! over every shipped script (no store resolved without a team); no repository needed.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Env, Run};

/// Who writes a step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Writer {
    Agmsg,
    Host,
}

struct Parity {
    env: Env,
    skill: PathBuf,
}

impl Parity {
    /// agmsg's `delivery.sh <args>` (its own drivers: nothing of agmsg-host's is installed).
    fn agmsg(&self, args: &[&str]) -> Run {
        self.env.program("bash").arg(self.skill.join("scripts/delivery.sh")).args(args).output().unwrap().into()
    }

    /// `agmsg-host delivery <args>`, told agmsg's directory.
    fn host(&self, args: &[&str]) -> Run {
        self.env.cmd().env("AGMSG_SKILL_DIR", &self.skill).arg("delivery").args(args).output().unwrap().into()
    }

    fn set(&self, who: Writer, mode: &str, t: &str, p: &str) -> Run {
        match who {
            Writer::Agmsg => self.agmsg(&["set", mode, t, p]),
            Writer::Host => self.host(&["set", mode, t, p]),
        }
    }

    /// The mode word of the first line (`mode: X`, agmsg's may say why it is off after it).
    fn mode(&self, who: Writer, t: &str, p: &str) -> String {
        let run = match who {
            Writer::Agmsg => self.agmsg(&["status", t, p]),
            Writer::Host => self.host(&["status", t, p]),
        };
        assert_eq!(run.code, 0, "{who:?} status {t}: {run:#?}");
        let first = run.lines().first().copied().unwrap_or_default().to_owned();
        first.strip_prefix("mode: ").and_then(|m| m.split(' ').next()).unwrap_or_else(|| panic!("{who:?} status {t}: {run:#?}")).to_owned()
    }
}

/// Types whose plug in agmsg 1.2.1 writes the project into its command as `'<project>'`, unescaped: a
/// project with a `'` in its path gets a command that breaks (for copilot's JSON hook, one that runs the
/// rest of the path as shell code). agmsg-host quotes it as `agmsg_shq` does, so there the files differ
/// (a deliberate difference); both still read either file as the same mode.
const NAIVE_QUOTING: [&str; 5] = ["cursor", "copilot", "gemini", "antigravity", "grok-build"];

/// A user's settings file with an entry of its own in an event agmsg owns entries in.
const USER_JSON: &str = "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n  \"hooks\": {\"Stop\": [{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]}]}\n}\n";

/// agmsg's types that deliver (every one but agmsg-app).
const DELIVERY_TYPES: [&str; 9] =
    ["claude-code", "codex", "cursor", "copilot", "gemini", "antigravity", "opencode", "grok-build", "hermes"];

/// Every mode of type `t` in turn, set by agmsg and by agmsg-host in projects below `root`: how many
/// steps were checked.
fn walk_type(parity: &Parity, root: &Path, types: &Path, t: &str) -> usize {
    let mut checked = 0;
    let conf = fs::read_to_string(types.join(t).join("type.conf")).unwrap_or_else(|e| panic!("agmsg's type {t}: {e}"));
    let value = |key: &str| conf.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('=')).unwrap_or_default().to_owned();
    let modes: Vec<String> = value("delivery_modes").split_whitespace().map(str::to_owned).collect();
    let rel = value("hooks_file");
    assert!(!modes.is_empty(), "{t}: no delivery_modes");
    // Every mode, then back again, so each mode follows another one (and off follows them all).
    let mut walk = modes.clone();
    walk.extend(modes.iter().rev().skip(1).cloned());
    walk.push("off".into());
    // A path agmsg and agmsg-host quote alike, and one with a quote in it.
    for (project, name) in [(0, "project"), (1, "o'brien")] {
        // Three projects: one only agmsg writes, one only agmsg-host writes, one they take turns on. Each
        // is moved to the one project path for its turn, so that the files compare byte for byte.
        let p = root.join(format!("{t} {name}"));
        let p = p.to_str().unwrap();
        let kept = |copy: &str| root.join(format!(".{t}-{project}-{copy}"));
        for copy in ["agmsg", "host", "turns"] {
            fs::create_dir(kept(copy)).unwrap();
            if rel.ends_with(".json") {
                fs::create_dir_all(kept(copy).join(&rel).parent().unwrap()).unwrap();
                fs::write(kept(copy).join(&rel), USER_JSON).unwrap();
            }
        }
        let show = |f: &Option<Vec<u8>>| f.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
        for (i, mode) in walk.iter().enumerate() {
            let step = format!("{t} in {name:?}, step {i} ({mode})");
            let turn = if i % 2 == 0 { Writer::Host } else { Writer::Agmsg };
            let mut files = Vec::new();
            for (copy, who) in [("agmsg", Writer::Agmsg), ("host", Writer::Host), ("turns", turn)] {
                fs::rename(kept(copy), p).unwrap();
                let run = parity.set(who, mode, t, p);
                assert_eq!(run.code, 0, "{step}: {who:?} set in {copy}: {run:#?}");
                // Each reads the file as the mode that was set.
                assert_eq!(parity.mode(Writer::Host, t, p), *mode, "{step}: agmsg-host's status of {copy}");
                assert_eq!(parity.mode(Writer::Agmsg, t, p), *mode, "{step}: agmsg's status of {copy}");
                files.push(if rel.is_empty() { None } else { fs::read(Path::new(p).join(&rel)).ok() });
                fs::rename(p, kept(copy)).unwrap();
            }
            let (fa, fh, ft) = (&files[0], &files[1], &files[2]);
            let naive = name.contains('\'') && NAIVE_QUOTING.contains(&t);
            assert!(fa == fh || naive, "{step}: agmsg wrote {:?}, agmsg-host wrote {:?}", show(fa), show(fh));
            assert!(ft == fa || naive, "{step}: {turn:?} set it after the other: {:?}, agmsg alone {:?}", show(ft), show(fa));
            // The JSON hooks types edit a settings file the user shares (copilot's file is agmsg's alone).
            if let Some(text) = fa.as_ref().filter(|_| ["claude-code", "codex"].contains(&t)) {
                assert!(String::from_utf8_lossy(text).contains("echo mine"), "{step}: the user's entry is kept: {:?}", show(fa));
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn agmsgs_delivery_sh_and_agmsg_host_read_and_write_each_others_files() {
    let env = Env::new();
    let Some(skill) = common::reference::scripts(&env, &["bash", "sqlite3"]) else { return };
    let parity = Parity { env, skill };
    let types = parity.skill.join("scripts/drivers/types");
    let root = parity.env.dir.path().join("projects");
    fs::create_dir(&root).unwrap();
    // The types are independent (each its own projects): walked side by side, one thread each, since
    // agmsg's scripts are most of this test's time (about 40 s one after another).
    let checked: usize = std::thread::scope(|s| {
        let walks: Vec<_> = DELIVERY_TYPES.iter().map(|t| s.spawn(|| walk_type(&parity, &root, &types, t))).collect();
        walks.into_iter().map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).sum()
    });
    assert!(checked >= 60, "every type and mode walked ({checked} steps)");
    // agmsg-app (the desktop app's identity: no hooks_file, no plug) is no delivery type to agmsg: it
    // refuses it. agmsg-host answers off and writes nothing (a deliberate difference: off is the one mode
    // the type declares, and saying so breaks nothing that reads it).
    let p = root.join("agmsg-app project");
    fs::create_dir(&p).unwrap();
    let p = p.to_str().unwrap();
    for args in [&["set", "off", "agmsg-app", p][..], &["status", "agmsg-app", p]] {
        let refused = parity.agmsg(args);
        assert!(refused.code != 0 && refused.stderr.contains("Unknown agent type: agmsg-app"), "agmsg's {args:?}: {refused:#?}");
        parity.host(args).ok();
    }
    assert_eq!(parity.mode(Writer::Host, "agmsg-app", p), "off");
    assert_eq!(fs::read_dir(p).unwrap().count(), 0, "nothing written for agmsg-app");
}

/// agmsg's test_storage.bats sweeps every file below scripts/ for `agmsg_db_path` or `storage_init`
/// followed (after spaces) by `)`, `|`, `>` or the end of the line, outside comment lines: a call that
/// resolves a store without naming the team. The shims live in agmsg's scripts/ once installed, so they
/// must not look like one (the storage shim's `declare -F agmsg_db_path >/dev/null` did).
#[test]
fn installed_shims_pass_agmsgs_sweep_for_a_store_without_a_team() {
    let env = Env::new();
    let bare = |line: &str| {
        ["agmsg_db_path", "storage_init"].iter().any(|name| {
            line.match_indices(name).any(|(at, _)| {
                let after = line[at + name.len()..].trim_start_matches(' ');
                after.is_empty() || after.starts_with([')', '|', '>'])
            })
        }) && !line.trim_start().starts_with('#')
            && !line.contains("storage_init()")
    };
    let mut texts = Vec::new();
    for name in ["sqlite", "jsonl"] {
        let run = env.run(&["shim", "storage", "--name", name, "--driver", name]);
        run.ok();
        texts.push((format!("storage {name}"), run.stdout));
    }
    for t in ["claude-code", "codex", "cursor", "copilot", "gemini", "antigravity", "opencode", "grok-build", "hermes"] {
        let run = env.run(&["shim", "types", t]);
        run.ok();
        texts.push((format!("types {t}"), run.stdout));
    }
    for (what, text) in &texts {
        assert!(text.contains("_agmsg_host"), "{what}: not a shim: {text}");
        let offenders: Vec<&str> = text.lines().filter(|l| bare(l)).collect();
        assert!(offenders.is_empty(), "{what}: agmsg's sweep would flag {offenders:#?}");
    }
    // The check itself flags what agmsg's sweep flags.
    assert!(bare("    if declare -F agmsg_db_path >/dev/null; then") && bare("x=$(agmsg_db_path)") && bare("  storage_init"));
    assert!(!bare("agmsg_db_path \"$team\"") && !bare("# agmsg_db_path >") && !bare("declare -F agmsg_db_path 1>/dev/null"));
}
