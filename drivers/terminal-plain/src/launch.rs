//! Opening an OS terminal window that runs the boot command, the way agmsg's plain driver picks one.
//!
//! In agmsg's order: an `AGMSG_TERMINAL` template with a `{cmd}` slot wins anywhere; then macOS `open`;
//! then, on a desktop session (`DISPLAY` / `WAYLAND_DISPLAY`), the first installed Linux emulator.
//!
//! agmsg branches on `uname -s`; this component cannot run `uname` and its own OS is `wasi`, so the
//! platform is read from what the session shows: macOS only when `TERM_PROGRAM` names Terminal.app or
//! iTerm2 and `open` is installed (on Linux `open` may be `openvt`, so `open` alone proves nothing).
//! Windows' `wt` (agmsg's Git Bash branch) has no such sign here and is not tried.
//!
//! The launcher's output is only logged: the placement id is `-`, whatever a template prints. A
//! launcher that stays in the foreground until its window closes (a bare `xterm -e`) runs into the host's
//! time limit and is killed with its window; a template should background it.

use std::env::{self, VarError};

use agmsg_guest_sdk::log;
use agmsg_guest_sdk::process;
use agmsg_guest_sdk::terminal::TermError;

use crate::quote;

/// Linux emulators in agmsg's order; the first one installed is used.
const EMULATORS: [&str; 5] = ["x-terminal-emulator", "gnome-terminal", "konsole", "xfce4-terminal", "xterm"];

/// Open a window in `project` running `boot`.
pub fn open_window(project: &str, boot: &[String]) -> Result<(), TermError> {
    let template = template()?;
    if let Some(template) = template.as_deref().filter(|t| t.contains("{cmd}")) {
        let line = template.replace("{cmd}", &quote::shell_words(boot));
        return launch("bash", &["-c", &line]);
    }
    if let Some(app) = macos_app(template.as_deref()) {
        let mut args = vec!["-g", "-a", app];
        args.extend(boot.iter().map(String::as_str));
        return launch("open", &args);
    }
    if let Some(template) = template {
        return Err(TermError::unsupported(format!(
            "unsupported: AGMSG_TERMINAL must contain a {{cmd}} placeholder here (got: {template:?})"
        )));
    }
    if !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
        return Err(TermError::unsupported(
            "unsupported: headless (no tmux, no display) — run inside tmux/herdr or set a {cmd} AGMSG_TERMINAL",
        ));
    }
    let emulator = EMULATORS.into_iter().find(|e| process::available(e)).ok_or_else(|| {
        TermError::unsupported("unsupported: no terminal emulator found; set a {cmd} AGMSG_TERMINAL or run inside tmux/herdr")
    })?;
    let workdir = format!("--working-directory={project}");
    let mut args: Vec<&str> = match emulator {
        "gnome-terminal" => vec![workdir.as_str(), "--"],
        "konsole" => vec!["--workdir", project, "-e"],
        _ => vec!["-e"],
    };
    args.extend(boot.iter().map(String::as_str));
    launch(emulator, &args)
}

/// `AGMSG_TERMINAL`: a `{cmd}` template, or on macOS an app hint. Empty counts as unset.
fn template() -> Result<Option<String>, TermError> {
    match env::var("AGMSG_TERMINAL") {
        Ok(value) => Ok(Some(value).filter(|v| !v.is_empty())),
        Err(VarError::NotPresent) => Ok(None),
        Err(VarError::NotUnicode(_)) => Err(TermError::unsupported("unsupported: AGMSG_TERMINAL is not UTF-8")),
    }
}

fn set(name: &str) -> bool {
    env::var_os(name).is_some_and(|value| !value.is_empty())
}

/// The app `open -a` should use, when this is recognisably macOS: the template as an app hint, else
/// the terminal this session runs in.
fn macos_app(hint: Option<&str>) -> Option<&'static str> {
    let program = env::var("TERM_PROGRAM").ok()?;
    if !matches!(program.as_str(), "iTerm.app" | "Apple_Terminal") || !process::available("open") {
        return None;
    }
    let wanted = hint.unwrap_or(if program == "iTerm.app" { "iterm" } else { "Terminal" });
    Some(if matches!(wanted, "iterm" | "iterm2" | "iTerm" | "iTerm2") { "iTerm" } else { "Terminal" })
}

/// Run a launcher; its failure is agmsg's 13 (no window was opened, and there is no other path).
fn launch(program: &str, args: &[&str]) -> Result<(), TermError> {
    log::debug(&format!("plain spawn: launching with {program}"));
    let out = process::run(program, args).map_err(|e| TermError::from_process(program, e))?;
    for (stream, text) in [("stdout", out.stdout_text()), ("stderr", out.stderr_text())] {
        if !text.trim().is_empty() {
            log::debug(&format!("{program} {stream}: {}", text.trim_end()));
        }
    }
    if out.success() {
        Ok(())
    } else {
        let status = out.status.map_or_else(|| "a signal".to_owned(), |code| format!("rc={code}"));
        Err(TermError::unsupported(format!("{program} could not open a window ({status})")))
    }
}
