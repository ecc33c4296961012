//! The terminal driver directory agmsg sources to use agmsg-host (`agmsg-host shim terminal <name>`):
//! `terminal.conf`, the driver's manifest as agmsg reads it (spec §6.1), and `ops.sh`, whose every
//! `terminal_*` function (spec §6.2: every required and optional op) runs `agmsg-host --driver <name>
//! terminal <op> -- <args>`.
//!
//! agmsg's terminal registry sources `ops.sh` and calls `terminal_<op>` with the op's argv; agmsg-host's
//! `terminal` command takes the same argv and prints the same stdout framing with the same exit codes
//! (§2.3), so each function is only that call: arguments passed on as `"$@"` (never re-read by a shell,
//! so a name with quotes, `$()`, backticks or line breaks arrives as it is), stdout, stderr and exit
//! status the op's own. `--` ends agmsg-host's options, so an argument that looks like one (`--help`, a
//! boot word, a text starting with `-`) is an argument. Every function names its agmsg-host and its
//! driver itself, quoted ([`crate::shell::quote`]), instead of reading a shell variable that another
//! sourced `ops.sh` (agmsg probes every candidate) could have set to its own. When agmsg-host cannot
//! run at that path (moved, removed), every function answers runtime_error (13) with a line on stderr
//! that names agmsg-host and says what to do (`crate::shim`).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::manifest::TerminalManifest;
use crate::axis_module::ShimFile;
use crate::error::HostError;
use crate::shell::quote;

/// Every `terminal_*` function agmsg's registry calls (spec §6.2), the required ones first, as
/// (shell function suffix, `agmsg-host terminal` op).
pub const OPS: &[(&str, &str)] = &[
    ("check", "check"),
    ("describe", "describe"),
    ("detect", "detect"),
    ("spawn", "spawn"),
    ("despawn", "despawn"),
    ("peek", "peek"),
    ("poke", "poke"),
    ("pane_state", "pane-state"),
    ("where", "where"),
    ("arrange", "arrange"),
    ("name", "name"),
    ("capability", "capability"),
    ("team_observe", "team-observe"),
    ("team_input_ready", "team-input-ready"),
    ("find_by_label", "find-by-label"),
    ("label_of", "label-of"),
    ("id_ok", "id-ok"),
    ("pane_process_observe", "pane-process-observe"),
    ("enumerate_panes", "enumerate-panes"),
    ("fence", "fence"),
    ("pane_focused", "pane-focused"),
    ("input_clear", "input-clear"),
    ("input_type", "input-type"),
    ("expected_label", "expected-label"),
    ("instance_for_ref", "instance-for-ref"),
    ("id_split", "id-split"),
];

/// `terminal.conf` for `manifest`: agmsg's four keys (spec §6.1), the values agmsg-host runs the driver
/// with. agmsg-host's own grant keys (`programs=`, `env=`) are left out: agmsg does not read them, and
/// the component runs with what agmsg-host's manifest or trust record grants, not with this file.
pub fn terminal_conf(manifest: &TerminalManifest) -> String {
    // The name is a driver name and the backend and capabilities printable one-line text (checked when
    // the manifest was read), so no value can start a line of its own.
    format!(
        "# agmsg terminal driver '{name}', written by `agmsg-host shim terminal {name}` (agmsg-host {version}).\n\
         # Read-only key=value data, never sourced. ops.sh beside it runs every terminal_* op in\n\
         # agmsg-host's sandboxed '{name}' component.\n\
         name={name}\n\
         priority={priority}\n\
         backend={backend}\n\
         capabilities={capabilities}\n",
        name = manifest.name,
        version = env!("CARGO_PKG_VERSION"),
        priority = manifest.priority,
        backend = manifest.backend,
        capabilities = manifest.capabilities.join(" "),
    )
}

/// The helper every function calls. When agmsg-host cannot run (gone from the path the function
/// names, or not a program there; it never exits 126 or 127 itself): one line on stderr that names it
/// and says what to do (the agmsg directory this file is in, when it is below one), and runtime_error
/// (13).
const HELPER: &str = r#"_agmsg_host_terminal() {
    local _agmsg_host_bin="$1" _agmsg_host_driver="$2" _agmsg_host_op="$3" _agmsg_host_s=0 _agmsg_host_dir="<agmsg's directory>"
    shift 3
    if [ -x "$_agmsg_host_bin" ] && [ ! -d "$_agmsg_host_bin" ]; then
        "$_agmsg_host_bin" --driver "$_agmsg_host_driver" terminal "$_agmsg_host_op" -- "$@" || _agmsg_host_s=$?
        case "$_agmsg_host_s" in
            126 | 127) ;;
            *) return "$_agmsg_host_s" ;;
        esac
    fi
    case "${BASH_SOURCE[0]:-}" in
        */scripts/drivers/terminals/*) _agmsg_host_dir="${BASH_SOURCE[0]%/scripts/drivers/terminals/*}" ;;
    esac
    echo "agmsg-host: cannot run $_agmsg_host_bin, which agmsg's terminal driver '$_agmsg_host_driver' runs in (moved or removed?): put agmsg-host back there, or re-run \`agmsg-host shim install $_agmsg_host_dir\` with the agmsg-host you have now" >&2
    return 13
}

"#;

/// `ops.sh` for terminal driver `driver`, run by the agmsg-host at `bin`.
pub fn ops_sh(driver: &str, bin: &str) -> String {
    // Comments end at a line break: the name is shown there as one line (driver names are plain anyway).
    let shown = crate::display::line(driver);
    let mut text = format!(
        "# agmsg terminal driver '{shown}' (ops.sh), written by `agmsg-host shim terminal {shown}` (agmsg-host {version}).\n\
         # agmsg sources it; every terminal_* function runs `agmsg-host --driver {shown} terminal <op>` with\n\
         # the same arguments, and its stdout, stderr and exit status are the op's. Defines only terminal_*\n\
         # and _agmsg_host_* names; safe under `set -euo pipefail`.\n\n\
         # agmsg-host <bin> --driver <driver> terminal <op> -- <args...>: `--` so that an argument that\n\
         # looks like an option arrives as an argument.\n{HELPER}",
        version = env!("CARGO_PKG_VERSION"),
    );
    let (bin, driver) = (quote(bin), quote(driver));
    for (function, op) in OPS {
        text.push_str(&format!("terminal_{function}() {{ _agmsg_host_terminal {bin} {driver} {op} \"$@\"; }}\n"));
    }
    text
}

/// A driver directory's two files, for a driver agmsg-host runs under `name` (ops.sh first: agmsg takes
/// a directory with terminal.conf for a driver); an unknown driver, or a name that is not one, is refused.
pub fn files(name: &str, bin: &str) -> Result<[(&'static str, String); 2], HostError> {
    // A name, not a driver directory's path: the name is also the directory agmsg finds it by.
    if !agmsg_contract::is_driver_name(name) {
        return Err(HostError::refused(format!("a terminal driver's name matches [a-zA-Z0-9_-]+, not {name:?}")));
    }
    let source = super::source::Candidates::new().resolve(name).map_err(HostError::refused)?;
    Ok([("ops.sh", ops_sh(name, bin)), ("terminal.conf", terminal_conf(&source.manifest))])
}

/// `agmsg-host shim terminal <name> [--output DIR]`: the driver directory `<output>/<name>/` (created if
/// missing; written into, so never through a link) with its [`files`], each written atomically; the
/// directory. Every failure is refused.
pub fn write_dir(name: &str, output: &Path, bin: &str) -> Result<PathBuf, HostError> {
    let files = files(name, bin)?;
    let dir = output.join(name);
    let refused = HostError::refused;
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(refused(format!("{} is a symlink (not followed)", dir.display()))),
        Ok(meta) if !meta.is_dir() => return Err(refused(format!("{} exists and is not a directory", dir.display()))),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir(&dir).map_err(|e| refused(format!("cannot create {}: {e}", dir.display())))?;
        }
        Err(e) => return Err(refused(format!("cannot read {}: {e}", dir.display()))),
    }
    for (file, text) in files {
        let path = dir.join(file);
        let failed = |e: std::io::Error| refused(format!("cannot write {}: {e}", path.display()));
        crate::atomic_file::write_atomically(&path, failed, |w| w.write_all(text.as_bytes()).map_err(failed))?;
    }
    Ok(dir)
}

/// `shim install`'s terminal shims: the driver directory `scripts/drivers/terminals/<name>/` of every
/// bundled terminal driver (spec §6.1).
pub fn install_files(bin: &str) -> Result<Vec<ShimFile>, HostError> {
    let mut out = Vec::new();
    for driver in crate::bundled::of(crate::axis::Axis::Terminal) {
        for (file, text) in files(driver.name, bin)? {
            let path = format!("scripts/drivers/terminals/{}/{file}", driver.name);
            out.push(ShimFile { path, text: Ok(text), warnings: Vec::new(), only_in_existing_dir: None });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn bash(cwd: &std::path::Path, script: &str, args: &[&str]) -> std::process::Output {
        Command::new("bash").current_dir(cwd).arg("-c").arg(script).arg("bash").args(args).output().unwrap()
    }

    /// Sourced, the file defines every op and runs nothing, whatever the pinned path holds; a function
    /// passes the path, the driver, the op and every argument on as they are.
    #[test]
    fn ops_sh_forwards_every_op_with_its_argv() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        // A "binary" that prints its argv, one per line, at a path a shell would read as commands
        // (run in `dir`, they would create `ran` there).
        let bin_dir = dir.path().join("it's $(touch ran) `touch ran`\nx");
        std::fs::create_dir(&bin_dir).unwrap();
        let bin = bin_dir.join("agmsg-host");
        std::fs::write(&bin, "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '<%s>\\n' \"$a\"; done\nexit 12\n").unwrap();
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let ops = dir.path().join("ops.sh");
        std::fs::write(&ops, ops_sh("tmux", bin.to_str().unwrap())).unwrap();

        let declared = bash(dir.path(), "set -euo pipefail; source \"$1\"; declare -F | awk '{print $3}'", &[ops.to_str().unwrap()]);
        assert!(declared.status.success(), "{declared:?}");
        let names = String::from_utf8(declared.stdout).unwrap();
        let mut want: Vec<String> = OPS.iter().map(|(f, _)| format!("terminal_{f}")).collect();
        want.push("_agmsg_host_terminal".into());
        want.sort();
        let mut got: Vec<&str> = names.lines().collect();
        got.sort();
        assert_eq!(got, want);

        let hostile = "a'b $(touch x) `id`\nline two";
        let out = bash(dir.path(), "source \"$1\"; shift; terminal_pane_state \"$@\"", &[ops.to_str().unwrap(), hostile, "--help"]);
        assert_eq!(out.status.code(), Some(12), "the op's exit status: {out:?}");
        let want = format!("<{}>\n<--driver>\n<tmux>\n<terminal>\n<pane-state>\n<-->\n<{hostile}>\n<--help>\n", bin.display());
        assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
        assert!(!marker.exists(), "something in the path ran");
    }

    /// agmsg-host gone from the path ops.sh names: every op answers runtime_error (13) with a line
    /// naming agmsg-host and the agmsg directory to re-run `shim install` on.
    #[test]
    fn without_agmsg_host_every_op_fails_saying_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let driver_dir = dir.path().join("skill/scripts/drivers/terminals/tmux");
        std::fs::create_dir_all(&driver_dir).unwrap();
        let ops = driver_dir.join("ops.sh");
        std::fs::write(&ops, ops_sh("tmux", "/nonexistent/agmsg-host")).unwrap();
        for (function, _) in OPS {
            let out = bash(dir.path(), &format!("source \"$1\"; terminal_{function} a b"), &[ops.to_str().unwrap()]);
            assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(13), &b""[..]), "{function}: {out:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let want = format!("agmsg-host shim install {}", dir.path().join("skill").display());
            assert!(stderr.contains("agmsg-host: cannot run /nonexistent/agmsg-host") && stderr.contains(&want), "{function}: {stderr}");
        }
    }

    #[test]
    fn terminal_conf_is_agmsgs_four_keys() {
        let manifest =
            TerminalManifest::parse("name=tmux\npriority=20\nbackend=tmux pane/window\ncapabilities=spawn peek\nprograms=tmux\nenv=TMUX\n")
                .unwrap();
        let conf = terminal_conf(&manifest);
        let read = TerminalManifest::parse(&conf).unwrap();
        assert_eq!((read.name.as_str(), read.priority, read.backend.as_str()), ("tmux", 20, "tmux pane/window"));
        assert_eq!(read.capabilities, ["spawn", "peek"]);
        assert!(read.programs.is_empty() && read.env.is_empty(), "no grant keys: {conf}");
    }
}
