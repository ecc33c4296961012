//! The types axis's contract, rule by rule (issue 17 §5): an agent type's manifest as agmsg reads it
//! ([`MANIFEST_RULES`]), and a delivery plug's answers as the host applies them ([`PLUG_RULES`]).
//!
//! What is under test comes from the harness's variables ([`TYPE_VAR`], [`PLUG_VAR`]), set by
//! [`super::module`]: the type (`bundled:<name>`, `dir:<absolute type directory>`, or `new:<name>` for
//! a plug with no type of its own, which the rules make up with a JSON hooks file, agmsg's default
//! format) and the plug (a bundled plug's name or an absolute component path, given to `--driver`).
//! Manifest rules read the manifest as agmsg does and check it in place; plug rules drive this binary's
//! `delivery` commands in a fresh home, with the type installed in a fresh agmsg directory and a project
//! whose path needs quoting.

use std::path::{Path, PathBuf};

use agmsg_conformance::{Env, Harness, Rule, Run};

use super::delivery::component::check_line;
use super::delivery::target::check_hooks_file;
use super::manifest::{self, Manifest};

/// The type under test: `bundled:<name>`, `dir:<absolute directory>` or `new:<name>`.
pub const TYPE_VAR: &str = "AGMSG_SUITE_TYPE";
/// The plug under test, as `--driver` takes it (empty: none).
pub const PLUG_VAR: &str = "AGMSG_SUITE_PLUG";

fn var<'h>(harness: &'h Harness, name: &str) -> Option<&'h str> {
    harness.env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
}

/// The type under test, as the suite named it.
enum TypeRef {
    Bundled(String),
    Dir(PathBuf),
    New(String),
}

fn type_ref(harness: &Harness) -> TypeRef {
    let value = var(harness, TYPE_VAR).expect("the suite names the type under test");
    match value.split_once(':') {
        Some(("bundled", name)) => TypeRef::Bundled(name.to_owned()),
        Some(("dir", dir)) => TypeRef::Dir(PathBuf::from(dir)),
        Some(("new", name)) => TypeRef::New(name.to_owned()),
        _ => panic!("{TYPE_VAR}={value:?} names no type"),
    }
}

// ---------------------------------------------------------------------------------------------------
// The manifest.

/// A type's manifest as agmsg reads it, and where its files are.
struct TypeUnderTest {
    name: String,
    manifest: Manifest,
    /// Its directory; `None` for a bundled type (its files are built in).
    dir: Option<PathBuf>,
}

impl TypeUnderTest {
    fn of(harness: &Harness) -> TypeUnderTest {
        match type_ref(harness) {
            TypeRef::Bundled(name) => {
                let t = super::bundled::get(&name).unwrap_or_else(|| panic!("{name} is not a bundled type"));
                TypeUnderTest { manifest: Manifest::parse(t.conf.as_bytes(), t.name).expect("a bundled manifest is text"), name, dir: None }
            }
            TypeRef::Dir(dir) => {
                let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let manifest = type_conf(&dir).and_then(|bytes| Manifest::parse(&bytes, &dir.join("type.conf").display().to_string()));
                let manifest = manifest.unwrap_or_else(|e| panic!("agmsg cannot read the manifest: {e}"));
                TypeUnderTest { name, manifest, dir: Some(dir) }
            }
            TypeRef::New(name) => panic!("{name} has no manifest of its own"),
        }
    }

    /// A file the manifest names (relative, already checked), as text.
    fn file(&self, file: &str) -> Result<String, String> {
        match &self.dir {
            None => {
                let t = super::bundled::get(&self.name).expect("checked in of()");
                t.files
                    .iter()
                    .find(|(f, _)| *f == file)
                    .map(|(_, text)| (*text).to_owned())
                    .ok_or_else(|| format!("{file} is not a file of the type"))
            }
            Some(dir) => {
                // As the host reads a type on disk: below its directory, no link followed.
                let bytes = crate::plugin::tree::read_below(dir, file, crate::plugin::MAX_TEXT_BYTES).map_err(|e| e.message)?;
                String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", dir.join(file).display()))
            }
        }
    }
}

/// The `type.conf` of the type directory `dir`, read as the host reads it (not through a link).
pub(super) fn type_conf(dir: &Path) -> Result<Vec<u8>, crate::error::HostError> {
    crate::plugin::tree::read_below(dir, "type.conf", super::manifest::MAX_MANIFEST_BYTES)
}

/// Keys the host reads beyond agmsg 1.2.1's ([`manifest::KEYS`]): newer manifests' weak detection
/// variables (`agent::detect`).
const HOST_KEYS: &[&str] = &["detect_fallback"];

fn manifest_keys_are_agmsgs(harness: &Harness, _: &str) {
    let t = TypeUnderTest::of(harness);
    let mut problems = Vec::new();
    for (line, text) in t.manifest.stray_lines() {
        problems.push(format!("line {line} is not KEY=value (agmsg never reads it): {text:?}"));
    }
    for e in t.manifest.entries() {
        if manifest::key_info(e.key).is_none() && !HOST_KEYS.contains(&e.key) {
            problems.push(format!("line {}: agmsg reads no key '{}' (a typo?)", e.line, e.key));
        }
        if e.ignored {
            let first = t.manifest.entry(e.key).map_or(0, |f| f.line);
            problems.push(format!("line {}: sets {} again; agmsg reads only line {first}", e.line, e.key));
        }
    }
    match t.manifest.get("name") {
        Some(name) if name == t.name => {}
        Some(name) => problems.push(format!("name={name} but the type is {} (agmsg names a type by its directory)", t.name)),
        None => problems.push("no name= line".to_owned()),
    }
    for key in ["spawnable", "monitor", "hook_windows_wrap"] {
        if let Some(v) = t.manifest.get(key).filter(|v| !matches!(*v, "yes" | "no")) {
            problems.push(format!("{key}={v}: agmsg tests for yes (use yes or no)"));
        }
    }
    if let Some(v) = t.manifest.get("stop_output").filter(|v| !matches!(*v, "json" | "plain")) {
        problems.push(format!("stop_output={v}: agmsg knows json and plain"));
    }
    assert!(problems.is_empty(), "{}: {}", t.name, problems.join("; "));
}

fn template_paths_are_guarded(harness: &Harness, _: &str) {
    let t = TypeUnderTest::of(harness);
    let mut problems = Vec::new();
    let launches = !t.manifest.value("cli").is_empty() || t.manifest.value("spawnable") == "yes" || !t.manifest.value("spawn").is_empty();
    if t.manifest.value("template").is_empty() && launches {
        problems.push("no template=: a type agmsg can launch needs its /agmsg command template".to_owned());
    }
    for key in ["template", "spawn"] {
        let Some(file) = t.manifest.get(key) else { continue };
        if file.is_empty() {
            problems.push(format!("{key}= is empty"));
            continue;
        }
        if let Err(e) = manifest::check_relative(key, file) {
            problems.push(e.message);
            continue;
        }
        if key == "spawn" && !file.ends_with(".mjs") {
            problems.push(format!("spawn={file}: agmsg runs a .mjs node launcher"));
        }
        if let Err(e) = t.file(file) {
            problems.push(format!("{key}={file}: {e}"));
        }
    }
    assert!(problems.is_empty(), "{}: {}", t.name, problems.join("; "));
}

const MODES: [&str; 4] = ["monitor", "turn", "both", "off"];

fn delivery_modes_are_agmsgs(harness: &Harness, _: &str) {
    let t = TypeUnderTest::of(harness);
    let Some(value) = t.manifest.get("delivery_modes") else { return };
    let words = t.manifest.words("delivery_modes");
    assert!(
        !words.is_empty(),
        "{}: delivery_modes={value:?} is empty, which agmsg reads as every mode: list the modes or drop the line",
        t.name
    );
    for (i, w) in words.iter().enumerate() {
        assert!(MODES.contains(w), "{}: delivery_modes holds {w:?}; agmsg's modes are monitor, turn, both and off", t.name);
        assert!(!words[..i].contains(w), "{}: delivery_modes lists {w} twice", t.name);
    }
}

/// Process names every session has among its ancestors: a `detect_proc` glob matching one would take
/// every session for this type.
const EVERYONE: &[&str] = &["bash", "sh", "zsh", "fish", "login", "sshd", "init", "systemd", "tmux: server", "node", "python3"];

fn detection_keys_are_well_formed(harness: &Harness, _: &str) {
    let t = TypeUnderTest::of(harness);
    let mut problems = Vec::new();
    for key in ["detect", "detect_fallback"] {
        let words = t.manifest.words(key);
        if words.contains(&"explicit") {
            if words.len() > 1 {
                problems.push(format!("{key} mixes explicit with variables: {words:?}"));
            }
            continue;
        }
        for w in words.iter().filter(|w| !super::detect::is_variable_name(w)) {
            problems.push(format!("{key}: {w:?} is not a shell variable name"));
        }
    }
    let options = glob::MatchOptions { case_sensitive: true, require_literal_separator: false, require_literal_leading_dot: false };
    for pattern in t.manifest.words("detect_proc") {
        if pattern.contains('/') {
            problems.push(format!("detect_proc {pattern:?}: a process name has no '/'"));
            continue;
        }
        match glob::Pattern::new(pattern) {
            Err(e) => problems.push(format!("detect_proc {pattern:?} is not a glob ({e})")),
            Ok(glob) => {
                if let Some(name) = EVERYONE.iter().find(|n| glob.matches_with(n, options)) {
                    problems.push(format!("detect_proc {pattern:?} matches {name:?}, an ancestor of every session"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}: {}", t.name, problems.join("; "));
}

fn hooks_file_stays_in_the_project(harness: &Harness, _: &str) {
    let t = TypeUnderTest::of(harness);
    let automatic = {
        let words = t.manifest.words("delivery_modes");
        words.is_empty() || words.iter().any(|w| *w != "off")
    };
    match t.manifest.get("hooks_file") {
        None | Some("") => {
            assert!(!automatic, "{}: no hooks_file, but its delivery modes write one (delivery_modes=off for a manual type)", t.name)
        }
        Some(file) => {
            if let Err(e) = check_hooks_file(&t.name, file) {
                panic!("{e}: it must be relative to the project, plain path components, no '..'");
            }
            // The rule install, trust and delivery apply: a runtime's delivery location, not another type's file.
            if let Err(e) = manifest::check_hooks_file(&t.name, file) {
                panic!("{}: {e}", t.name);
            }
        }
    }
}

/// The manifest rules, in the order they are reported.
pub const MANIFEST_RULES: &[Rule] = &[
    Rule { name: "manifest_keys_are_agmsgs", check: manifest_keys_are_agmsgs },
    Rule { name: "template_paths_are_guarded", check: template_paths_are_guarded },
    Rule { name: "delivery_modes_are_agmsgs", check: delivery_modes_are_agmsgs },
    Rule { name: "detection_keys_are_well_formed", check: detection_keys_are_well_formed },
    Rule { name: "hooks_file_stays_in_the_project", check: hooks_file_stays_in_the_project },
];

// ---------------------------------------------------------------------------------------------------
// The plug.

/// A user's settings file as agmsg leaves it (minified): unknown keys in an odd order, and the user's
/// own hooks, one on an event agmsg uses.
const USER_JSON: &str = r#"{"zeta":{"b":1,"a":[1.50,"\u00e9\/"]},"hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"notify-send done"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[]}]},"alpha":true}"#;

/// The plug under test, installed for its type in a fresh home, and a project to deliver to.
struct PlugEnv {
    env: Env,
    plug: String,
    type_name: String,
    modes: Vec<String>,
    hooks_file: String,
    project: PathBuf,
}

impl PlugEnv {
    fn new(harness: &Harness) -> PlugEnv {
        let plug = var(harness, PLUG_VAR).expect("the suite names the plug under test").to_owned();
        let env = Env::new(harness);
        let skill = env.dir.path().join("skill");
        let types = skill.join("scripts/drivers/types");
        // The type: bundled ones are built in; one on disk is given as agmsg's own installed type
        // (its type.conf only: a shell plug beside it never runs); a plug alone gets a made-up type
        // (its file where any runtime's hooks may be: `.<runtime>/hooks.json`).
        let type_name = match type_ref(harness) {
            TypeRef::Bundled(name) => name,
            TypeRef::Dir(dir) => {
                let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                std::fs::create_dir_all(types.join(&name)).unwrap();
                std::fs::write(types.join(&name).join("type.conf"), type_conf(&dir).expect("the type's type.conf")).unwrap();
                name
            }
            TypeRef::New(name) => {
                std::fs::create_dir_all(types.join(&name)).unwrap();
                std::fs::write(types.join(&name).join("type.conf"), format!("name={name}\nhooks_file=.agmsg-suite/hooks.json\n")).unwrap();
                name
            }
        };
        let env = env.env("AGMSG_SKILL_DIR", skill.to_str().unwrap());
        let modes = env.run(&["delivery", "modes", &type_name]);
        assert_eq!(modes.code, 0, "the type's modes: {modes:?}");
        let modes = modes.stdout.split_whitespace().map(str::to_owned).collect();
        let hooks_file = env.run(&["types", "get", &type_name, "hooks_file"]).stdout.trim_end().to_owned();
        assert!(!hooks_file.is_empty(), "{type_name} has no hooks_file: a plug has no file to answer for");
        let project = env.dir.path().join("proj o'brien");
        std::fs::create_dir(&project).unwrap();
        PlugEnv { env, plug, type_name, modes, hooks_file, project }
    }

    fn p(&self) -> &str {
        self.project.to_str().unwrap()
    }

    /// `delivery <op> <args>` with the plug under test.
    fn delivery(&self, args: &[&str]) -> Run {
        let mut all = vec!["--driver", self.plug.as_str(), "delivery"];
        all.extend_from_slice(args);
        self.env.run(&all)
    }

    /// `delivery set <mode>`, which must succeed.
    fn set(&self, mode: &str) -> Run {
        let run = self.delivery(&["set", mode, &self.type_name, self.p()]);
        assert_eq!(run.code, 0, "delivery set {mode} fails: {run:?}");
        run
    }

    fn file(&self) -> PathBuf {
        self.project.join(&self.hooks_file)
    }

    fn read(&self) -> Option<Vec<u8>> {
        std::fs::read(self.file()).ok()
    }

    fn is_json(&self) -> bool {
        self.hooks_file.ends_with(".json")
    }

    /// The files a project starts from: none, and for a JSON file the user's own settings.
    fn starts(&self) -> Vec<Option<&'static str>> {
        if self.is_json() { vec![None, Some(USER_JSON), Some("{}")] } else { vec![None] }
    }

    /// `mode`, from `start`, for messages.
    fn case(&self, mode: &str, start: Option<&str>) -> String {
        match start {
            None => format!("{mode} (no {} before)", self.hooks_file),
            Some(USER_JSON) => format!("{mode} (the user's own {} before)", self.hooks_file),
            Some(text) => format!("{mode} ({} holding {text} before)", self.hooks_file),
        }
    }

    /// The project as a user has it: `start` as the delivery file (or none), and files of the user's
    /// beside it and at the root, which no delivery may touch.
    fn reset(&self, start: Option<&str>) {
        let _ = std::fs::remove_dir_all(&self.project);
        let dir = self.file().parent().unwrap().to_owned();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("users-own.md"), "the user's own rule\n").unwrap();
        std::fs::write(self.project.join("README.md"), "# a project\n").unwrap();
        if let Some(text) = start {
            std::fs::write(self.file(), text).unwrap();
        }
    }

    /// Every file of the project but the delivery file, with its bytes.
    fn others(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, skip: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
            entries.sort();
            for path in entries {
                if path.is_dir() {
                    walk(&path, skip, out);
                } else if path != skip {
                    out.push((path.clone(), std::fs::read(&path).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.project, &self.file(), &mut out);
        out
    }

    fn enabling_modes(&self) -> Vec<&str> {
        self.modes.iter().map(String::as_str).filter(|m| *m != "off").collect()
    }

    fn accepts(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }
}

fn apply_answers_within_the_rules(harness: &Harness, _: &str) {
    let pe = PlugEnv::new(harness);
    for mode in &pe.modes {
        for start in pe.starts() {
            pe.reset(start);
            pe.set(mode);
            let first = pe.read();
            if let (Some(bytes), true) = (&first, pe.is_json()) {
                serde_json::from_slice::<serde_json::Value>(bytes)
                    .unwrap_or_else(|e| panic!("{}: the file is not JSON ({e})", pe.case(mode, start)));
            }
            // The same mode again is the same file: an answer depends on the file, not on history.
            pe.set(mode);
            let again = pe.read();
            assert!(
                again == first,
                "{}: setting it again changed the file from {} to {}",
                pe.case(mode, start),
                show(&first),
                show(&again)
            );
        }
    }
}

fn status_reports_the_applied_mode(harness: &Harness, _: &str) {
    let pe = PlugEnv::new(harness);
    for mode in &pe.modes {
        for start in pe.starts() {
            pe.reset(start);
            pe.set(mode);
            let status = pe.delivery(&["status", &pe.type_name, pe.p()]);
            assert_eq!(status.code, 0, "status after {mode}: {status:?}");
            let said = status.lines().first().copied().unwrap_or_default().to_owned();
            // agmsg's JSON hooks status may say why it is off after the word: `off (no agmsg ...)`.
            let word = said.strip_prefix("mode: ").and_then(|w| w.split(' ').next());
            assert!(word == Some(mode.as_str()), "set {}, then status says {said:?}", pe.case(mode, start));
        }
    }
}

fn enable_then_disable_keeps_the_users_bytes(harness: &Harness, _: &str) {
    let pe = PlugEnv::new(harness);
    if !pe.accepts("off") {
        return;
    }
    for start in pe.starts() {
        // What off makes of this start, straight away: the baseline every round trip must come back to.
        pe.reset(start);
        pe.set("off");
        let baseline = pe.read();
        if let (Some(text), true) = (start, pe.is_json()) {
            assert!(
                baseline.as_deref() == Some(text.as_bytes()),
                "{}: a file without agmsg's entries became {}",
                pe.case("off", start),
                show(&baseline)
            );
        }
        for mode in pe.enabling_modes() {
            pe.reset(start);
            let others = pe.others();
            pe.set(mode);
            pe.set("off");
            assert!(pe.others() == others, "{} then off changed the user's other files", pe.case(mode, start));
            let after = pe.read();
            assert!(after == baseline, "{} then off left {}, not {}", pe.case(mode, start), show(&after), show(&baseline));
        }
    }
}

/// A delivery file's bytes, for a message.
fn show(bytes: &Option<Vec<u8>>) -> String {
    match bytes {
        None => "no file".to_owned(),
        Some(bytes) => format!("{:?}", crate::display::line(&String::from_utf8_lossy(bytes))),
    }
}

/// Every line of `run`'s stdout passes [`check_line`].
#[track_caller]
fn lines_well_formed(run: &Run, what: &str) {
    for line in run.stdout.split('\n') {
        if let Err(why) = check_line(line) {
            panic!("{what}: a line that {why}: {line:?}");
        }
    }
}

/// A side-effect op asked on its own: `Some(stdout)` when the type overrides it, `None` when it does
/// not (exit 3, nothing printed); anything else fails the rule.
fn side_effect(pe: &PlugEnv, args: &[&str]) -> Option<String> {
    let run = pe.delivery(args);
    match run.code {
        0 => {
            lines_well_formed(&run, &args.join(" "));
            Some(run.stdout)
        }
        3 => {
            assert!(run.stdout.is_empty(), "{args:?}: not overridden, yet it printed: {run:?}");
            None
        }
        _ => panic!("{args:?} answers (0) or is not overridden (3): {run:?}"),
    }
}

fn notices_and_directives_are_well_formed_lines(harness: &Harness, _: &str) {
    let pe = PlugEnv::new(harness);
    for mode in &pe.modes {
        for start in pe.starts() {
            pe.reset(start);
            let run = pe.set(mode);
            lines_well_formed(&run, &format!("set {mode}"));
        }
    }
    let p = pe.p().to_owned();
    for mode in pe.enabling_modes() {
        side_effect(&pe, &["on-enable", mode, &pe.type_name, &p]);
    }
    side_effect(&pe, &["on-disable", &pe.type_name, &p]);
    side_effect(&pe, &["stop-directive", &pe.type_name, &p]);
}

fn ops_not_overridden_fall_back(harness: &Harness, _: &str) {
    let pe = PlugEnv::new(harness);
    let p = pe.p().to_owned();
    pe.reset(None);
    for mode in pe.enabling_modes().into_iter().filter(|m| matches!(*m, "monitor" | "both")) {
        let set = pe.set(mode);
        match side_effect(&pe, &["on-enable", mode, &pe.type_name, &p]) {
            Some(own) => {
                let again = side_effect(&pe, &["on-enable", mode, &pe.type_name, &p]).expect("on-enable answered, then was not overridden");
                assert!(prints_answer(&set.stdout, &own, &again), "set {mode} prints what on-enable answers ({own:?}): {set:?}")
            }
            None => assert!(
                set.stdout.contains("Restart your agent (or start its watcher)"),
                "set {mode} without an on-enable prints the default: {set:?}"
            ),
        }
    }
    let directive = side_effect(&pe, &["stop-directive", &pe.type_name, &p]);
    if pe.accepts("turn") {
        let set = pe.set("turn");
        match &directive {
            Some(own) => assert!(set.stdout.contains(own.trim_end()), "set turn prints the stop directive it answers ({own:?}): {set:?}"),
            None => assert!(
                set.stdout.contains("agmsg-host stops no processes"),
                "set turn without a stop directive prints the default: {set:?}"
            ),
        }
    }
    if pe.accepts("off") {
        let set = pe.set("off");
        if let Some(own) = side_effect(&pe, &["on-disable", &pe.type_name, &p]) {
            assert!(set.stdout.contains(own.trim_end()), "set off prints what on-disable answers ({own:?}): {set:?}");
        }
    }
}

/// Whether `stdout` holds the answer `a` in place, line for line, where `b` is the same op's answer
/// asked again: a line that differs between the two (a fresh session id a plug makes when the
/// runtime's variable is unset) may be anything, every other line must be the answer's.
fn prints_answer(stdout: &str, a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    if a.len() != b.len() {
        return false;
    }
    let out: Vec<&str> = stdout.lines().collect();
    out.windows(a.len().max(1)).any(|w| a.is_empty() || w.iter().zip(a.iter().zip(&b)).all(|(o, (x, y))| x != y || o == x))
}

/// The plug rules, in the order they are reported.
pub const PLUG_RULES: &[Rule] = &[
    Rule { name: "apply_answers_within_the_rules", check: apply_answers_within_the_rules },
    Rule { name: "status_reports_the_applied_mode", check: status_reports_the_applied_mode },
    Rule { name: "enable_then_disable_keeps_the_users_bytes", check: enable_then_disable_keeps_the_users_bytes },
    Rule { name: "notices_and_directives_are_well_formed_lines", check: notices_and_directives_are_well_formed_lines },
    Rule { name: "ops_not_overridden_fall_back", check: ops_not_overridden_fall_back },
];

#[cfg(test)]
mod tests {
    use super::prints_answer;

    #[test]
    fn an_answer_is_printed_in_place_with_only_its_changing_lines_free() {
        let out = "Delivery mode set\nnotice\n  command: watch.sh id-1 /p\ndone\n";
        assert!(prints_answer(out, "notice\n  command: watch.sh id-2 /p\n", "notice\n  command: watch.sh id-3 /p\n"));
        assert!(prints_answer(out, "notice\n", "notice\n"));
        assert!(
            !prints_answer(out, "other notice\n  command: watch.sh id-2 /p\n", "other notice\n  command: watch.sh id-3 /p\n"),
            "a stable line must be there"
        );
        assert!(!prints_answer(out, "notice\n", "notice\nmore\n"), "answers of another shape");
        assert!(!prints_answer(out, "notice\nnot printed\n", "notice\nnot printed\n"));
    }
}
