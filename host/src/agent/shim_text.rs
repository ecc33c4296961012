//! The text of the `_delivery.sh` agmsg-host writes for a type (`agmsg-host shim types`), and its
//! recognition: what [`crate::agent::delivery::shim`] installs and what the plug scan
//! ([`crate::agent::plug::PlugInfo::scan`]) must not take for a shell plug. A leaf of the agent axis,
//! so the scan below the registry can ask it without reaching up into delivery.

use crate::shell::quote;

/// The text [`quote`] made of a value, if `quoted` is exactly that.
fn unquote(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('\'')?.strip_suffix('\'')?.replace(r"'\''", "'");
    (quote(&inner) == quoted).then_some(inner)
}

/// The `_delivery.sh` for type `agent_type`, running the agmsg-host at `bin`.
pub fn text(agent_type: &str, bin: &str) -> String {
    // A comment ends at a line break: the name is shown there as one line (type names are plain
    // anyway), and only the quoted assignment below carries it as it is.
    let shown = crate::display::line(agent_type);
    format!(
        "# agmsg delivery plug for type '{shown}', written by `agmsg-host shim types {shown}`.\n\
         # agmsg's delivery engine sources it as the type's _delivery.sh; each agmsg_delivery_* function\n\
         # forwards to agmsg-host (same argv, output and exit status), whose answer for the type (its\n\
         # sandboxed delivery plug component, else agmsg-host's own behaviour) writes the delivery file.\n\
         # Where the type overrides no on_enable, on_disable or stop_directive, agmsg's own default runs.\n\
         # Defines only agmsg_delivery_* and _agmsg_host_* names; safe under `set -euo pipefail`.\n\n\
         _agmsg_host_bin={}\n\
         _agmsg_host_type={}\n\n{FUNCTIONS}",
        quote(bin),
        quote(agent_type)
    )
}

/// Whether `file` is a `_delivery.sh` that [`text`] wrote (for the program and type it names).
pub fn is_shim(file: &str) -> bool {
    let value = |name: &str| file.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix('=')).and_then(unquote);
    match (value("_agmsg_host_type"), value("_agmsg_host_bin")) {
        (Some(agent_type), Some(bin)) => text(&agent_type, &bin) == file,
        _ => false,
    }
}

/// The functions, the same in every shim.
const FUNCTIONS: &str = r#"# agmsg's own default of a side-effect function (defined by delivery.sh before it sources this
# file), kept as _agmsg_host_default_<fn> before this file replaces it; sourced again, this file's own
# function is no default (it would call itself).
_agmsg_host_keep_default() {
    local _agmsg_host_body
    _agmsg_host_body=$(declare -f "agmsg_delivery_$1") || return 0
    case "$_agmsg_host_body" in *_agmsg_host_or_default*) return 0 ;; esac
    eval "_agmsg_host_default_$1 () ${_agmsg_host_body#*\)}"
}
_agmsg_host_keep_default on_enable
_agmsg_host_keep_default on_disable
_agmsg_host_keep_default stop_directive

# agmsg-host delivery <op> <args...>, told agmsg's directory. When agmsg-host cannot run (gone from
# the path above, or not a program there; it never exits 126 or 127 itself): one line on stderr that
# names it and says what to do, and runtime_error (13).
_agmsg_host() {
    local _agmsg_host_s=0
    if [ -x "$_agmsg_host_bin" ] && [ ! -d "$_agmsg_host_bin" ]; then
        if [ -n "${SKILL_DIR:-}" ]; then
            AGMSG_SKILL_DIR="$SKILL_DIR" "$_agmsg_host_bin" delivery "$@" || _agmsg_host_s=$?
        else
            "$_agmsg_host_bin" delivery "$@" || _agmsg_host_s=$?
        fi
        case "$_agmsg_host_s" in
            126 | 127) ;;
            *) return "$_agmsg_host_s" ;;
        esac
    fi
    local _agmsg_host_dir="<agmsg's directory>"
    [ -z "${SKILL_DIR:-}" ] || _agmsg_host_dir="$SKILL_DIR"
    echo "agmsg-host: cannot run $_agmsg_host_bin, which agmsg's delivery for type '$_agmsg_host_type' runs in (moved or removed?): put agmsg-host back there, or re-run \`agmsg-host shim install $_agmsg_host_dir\` with the agmsg-host you have now" >&2
    return 13
}

# After side-effect op <fn> exited <status>: 3 (the type does not override it) runs agmsg's default
# with agmsg's arguments; anything else is the op's own status.
_agmsg_host_or_default() {
    local _agmsg_host_fn="$1" _agmsg_host_status="$2"
    shift 2
    [ "$_agmsg_host_status" -eq 3 ] || return "$_agmsg_host_status"
    if declare -F "_agmsg_host_default_$_agmsg_host_fn" >/dev/null; then
        "_agmsg_host_default_$_agmsg_host_fn" "$@"
    fi
}

# <type> <project> <mode>
agmsg_delivery_apply() { _agmsg_host apply "$@"; }
# <type> <project>
agmsg_delivery_status() { _agmsg_host status "$@"; }

# <mode> <type> <project>
agmsg_delivery_on_enable() {
    local _agmsg_host_s=0
    _agmsg_host on-enable "$@" || _agmsg_host_s=$?
    _agmsg_host_or_default on_enable "$_agmsg_host_s" "$@"
}

# <type> <project>
agmsg_delivery_on_disable() {
    local _agmsg_host_s=0
    _agmsg_host on-disable "$@" || _agmsg_host_s=$?
    _agmsg_host_or_default on_disable "$_agmsg_host_s" "$@"
}

# No arguments: the type is this file's, the project delivery.sh's set is working on ($PROJECT).
agmsg_delivery_stop_directive() {
    local _agmsg_host_s=0
    _agmsg_host stop-directive "$_agmsg_host_type" "${PROJECT:-$PWD}" || _agmsg_host_s=$?
    _agmsg_host_or_default stop_directive "$_agmsg_host_s" "$@"
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_exactly_its_own_text() {
        let shim = text("my-type", "/opt/it's here/agmsg-host");
        assert!(shim.contains(r"_agmsg_host_bin='/opt/it'\''s here/agmsg-host'"));
        assert!(is_shim(&shim));
        assert!(!is_shim(&shim.replace("_agmsg_host apply", "rm -rf ~; _agmsg_host apply")), "any change makes it a shell plug");
        assert!(!is_shim(&format!("{shim}agmsg_delivery_apply() {{ :; }}\n")));
        assert!(!is_shim("agmsg_delivery_apply() { :; }\n"));
        assert_eq!(unquote(r"'a'\''b'").as_deref(), Some("a'b"));
        assert_eq!(unquote("'a'b'"), None);

        // Sourced by bash, a line break in the type's name runs nothing.
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let file = dir.path().join("_delivery.sh");
        std::fs::write(&file, text(&format!("t\ntouch {}\n#", marker.display()), "/bin/false")).unwrap();
        let sourced = std::process::Command::new("bash").arg("-c").arg("source \"$1\"").arg("bash").arg(&file).status().unwrap();
        assert!(sourced.success());
        assert!(!marker.exists(), "the type name's second line ran");
    }

    /// agmsg-host gone from the path the file names: every function agmsg calls answers runtime_error
    /// (13) with a line naming agmsg-host and what to do, a side-effect function included (13 is not
    /// "not overridden": agmsg's default does not run in its place).
    #[test]
    fn without_agmsg_host_every_function_fails_saying_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("_delivery.sh");
        std::fs::write(&file, text("codex", "/nonexistent/agmsg-host")).unwrap();
        for call in [
            "agmsg_delivery_apply codex /p turn",
            "agmsg_delivery_status codex /p",
            "agmsg_delivery_on_enable turn codex /p",
            "agmsg_delivery_on_disable codex /p",
            "agmsg_delivery_stop_directive",
        ] {
            let script = format!("agmsg_delivery_on_disable() {{ echo default ran; }}\nsource \"$1\"; SKILL_DIR=/x/skill {call}");
            let out = std::process::Command::new("bash").arg("-c").arg(script).arg("bash").arg(&file).output().unwrap();
            assert_eq!(out.status.code(), Some(13), "{call}: {out:?}");
            assert!(out.stdout.is_empty(), "{call}: {out:?}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("agmsg-host: cannot run /nonexistent/agmsg-host") && stderr.contains("agmsg-host shim install /x/skill"),
                "{call}: {stderr}"
            );
        }
    }
}
