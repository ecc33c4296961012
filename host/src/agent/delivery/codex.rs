//! What turning codex's delivery on or off tells the user. agmsg's codex plug does more than write
//! the hooks file: monitor delivery runs through agmsg's Codex bridge (a Node program its `codex()`
//! shell function, or its optional PATH shim, starts with each Codex session), and its plug says how
//! to set that up, and, when delivery goes off, stops the project's bridges. agmsg-host writes the
//! same hooks file but starts and stops no process: the user is told what to do in its place, in
//! agmsg-host's own words (issue 35 §3).

use super::{Context, Mode, shq};

/// Where agmsg keeps codex's monitor scripts, below its install.
fn codex_script(ctx: &Context, script: &str) -> String {
    format!("{}/scripts/drivers/types/codex/{script}", ctx.skill_dir)
}

/// agmsg's documentation of Codex monitor mode.
const MONITOR_DOC: &str = "https://github.com/fujibee/agmsg/blob/main/docs/codex-monitor-beta.md";

/// The Node agmsg's bridge would run (agmsg's rule: `AGMSG_NODE`, else `AGMSG_CODEX_NODE`, as given
/// even when missing, else `node` on `PATH`), and whether it is there.
fn node() -> (String, bool) {
    for var in ["AGMSG_NODE", "AGMSG_CODEX_NODE"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let v = v.to_string_lossy().into_owned();
            let found = if v.contains('/') { is_executable(std::path::Path::new(&v)) } else { on_path(&v) };
            return (v, found);
        }
    }
    ("node".to_owned(), on_path("node"))
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| is_executable(&dir.join(name))))
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The lines `delivery set monitor codex` adds after its confirmation.
pub fn on_enable(ctx: &Context, mode: Mode) -> Vec<String> {
    let shim = codex_script(ctx, "codex-shim.sh");
    let install = codex_script(ctx, "codex-shim-install.sh");
    let mut lines = vec![
        format!("Codex {mode} delivery is on for this project. It reaches a running Codex session through agmsg's Codex bridge,"),
        "  which agmsg-host does not run: Codex must be started through agmsg's launcher for the bridge to start.".to_owned(),
        "To do that, put this function in your interactive shell's profile and open a new shell:".to_owned(),
        format!("codex() {{ {} \"$@\"; }}", shq(&shim)),
        "  (it sends Codex through the bridge in projects whose delivery is monitor, and runs Codex as usual elsewhere);".to_owned(),
        format!("  or, instead of the function, agmsg's optional shim on PATH: {} install", shq(&install)),
    ];
    let (node, found) = node();
    if !found {
        lines.push(format!("WARNING: the bridge is a Node.js program, and Node ('{node}') is not found: monitor delivery cannot start"));
        lines.push("  until Node is installed (or AGMSG_NODE names it).".to_owned());
    }
    lines.push("Then quit Codex and start it again, and send it a first message: the bridge starts with the session's first".to_owned());
    lines.push("  turn. A Codex session already running is not monitored until it is restarted.".to_owned());
    lines.push(format!("Codex monitor mode, in agmsg's documentation: {MONITOR_DOC}"));
    lines
}

/// The lines `delivery set off codex` adds after its "no automatic delivery" line.
pub fn on_disable(ctx: &Context) -> Vec<String> {
    let install = codex_script(ctx, "codex-shim-install.sh");
    vec![
        "agmsg-host stops no Codex bridge: one still running for this project ends when its Codex session does".to_owned(),
        format!("  (agmsg's bridge files are in {}/run, codex-bridge.<team>.<agent>.pid).", ctx.skill_dir),
        "Your shell profile is not edited: when no project uses Codex monitor delivery any more, delete the codex()".to_owned(),
        format!("  function you added, or remove agmsg's optional PATH shim with: {} remove", shq(&install)),
        "  (and any ~/.agents/bin entry you put on PATH for it).".to_owned(),
    ]
}

/// A small file of agmsg's run directory, read without blocking, not through a link, and only if it
/// is a regular file.
fn read_small(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(path).ok()?;
    if !opened.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    opened.take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

/// One Codex bridge as agmsg's run directory records it: `codex-bridge.<who>.meta` (`key=value` lines:
/// `project=`, `type=`, `pid=`) and the pid in `codex-bridge.<who>.pid`. Any process that can write
/// the run directory writes them, so every field is read as data and `who` is shown as one inert line.
pub struct BridgeRecord<'a> {
    meta: &'a str,
    /// The pid file's number, if it holds a positive one.
    pid: Option<i32>,
}

impl<'a> BridgeRecord<'a> {
    /// The record from the meta file's text and the pid file's (`None`: unreadable).
    pub fn new(meta: &'a str, pid_file: Option<&str>) -> BridgeRecord<'a> {
        BridgeRecord { meta, pid: pid_file.and_then(|t| t.trim().parse::<i32>().ok()).filter(|pid| *pid > 0) }
    }

    /// A meta key's value: its first `key=` line.
    pub fn field(&self, key: &str) -> Option<&'a str> {
        self.meta.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
    }

    /// Whether it is a Codex bridge of `project` (both sides canonicalized by `canonical`).
    pub fn is_for(&self, project: &str, canonical: impl Fn(&str) -> String) -> bool {
        self.field("project").is_some_and(|p| canonical(p) == project) && self.field("type").is_none_or(|t| t == "codex")
    }

    /// Its line in `delivery status codex`, `alive` telling whether a pid is a live process.
    pub fn status_line(&self, who: &str, alive: impl Fn(i32) -> bool) -> String {
        let who = crate::display::line(who);
        match self.pid {
            Some(pid) if self.field("pid").is_some_and(|p| p != pid.to_string()) => {
                format!("Codex bridge {who}: its pid file and its metadata disagree (stale)")
            }
            Some(pid) if alive(pid) => format!("Codex bridge {who}: running (pid {pid})"),
            Some(pid) => format!("Codex bridge {who}: not running (stale pid file, pid {pid})"),
            None => format!("Codex bridge {who}: not running (its pid file holds no pid)"),
        }
    }
}

/// The lines `delivery status codex` adds: the Codex bridges agmsg's run directory records for this
/// project (agmsg's status reports each bridge; agmsg-host, which runs none, reads agmsg's records,
/// [`BridgeRecord`]), each alive or stale, or that there is none.
pub fn bridge_status(ctx: &Context) -> Vec<String> {
    let run = std::path::Path::new(&ctx.skill_dir).join("run");
    let canonical = |p: &str| std::fs::canonicalize(p).map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| p.to_owned());
    let project = canonical(&ctx.project);
    let mut names: Vec<String> =
        std::fs::read_dir(&run).map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect()).unwrap_or_default();
    names.sort();
    let mut lines = Vec::new();
    for name in names {
        let Some(who) = name.strip_prefix("codex-bridge.").and_then(|n| n.strip_suffix(".pid")) else { continue };
        let Some(meta) = read_small(&run.join(format!("codex-bridge.{who}.meta"))) else { continue };
        let record = BridgeRecord::new(&meta, read_small(&run.join(&name)).as_deref());
        if record.is_for(&project, canonical) {
            lines.push(record.status_line(who, |pid| crate::pid::alive(pid) && !crate::pid::zombie(pid)));
        }
    }
    if lines.is_empty() {
        lines.push("Codex bridge: none recorded for this project (agmsg-host runs none: agmsg's starts with a Codex session".to_owned());
        lines.push("  launched through its codex() function in a monitor-mode project).".to_owned());
    }
    lines
}
