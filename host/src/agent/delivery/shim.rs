//! The `_delivery.sh` that makes agmsg's bash delivery engine use agmsg-host for a type
//! (`agmsg-host shim types <type>`).
//!
//! agmsg's `scripts/delivery.sh` sources a type's `_delivery.sh` and calls the Template Method's
//! functions it defines. This file defines them as calls to `agmsg-host delivery`, with agmsg's argv:
//!
//! | agmsg calls | with | forwarded to |
//! |---|---|---|
//! | `agmsg_delivery_apply` | `<type> <project> <mode>` | `delivery apply` (the file only; exit 1 refused) |
//! | `agmsg_delivery_status` | `<type> <project>` | `delivery status` (`mode: X` and the detail lines) |
//! | `agmsg_delivery_on_enable` | `<mode> <type> <project>` | `delivery on-enable` |
//! | `agmsg_delivery_on_disable` | `<type> <project>` | `delivery on-disable` |
//! | `agmsg_delivery_stop_directive` | nothing | `delivery stop-directive <this type> <$PROJECT>` |
//!
//! so the type's answer is agmsg-host's: its sandboxed plug component, else agmsg-host's own behaviour
//! for the type, byte for byte what `agmsg-host delivery set` writes. The last three are side effects
//! whose defaults touch processes (agmsg's `on_disable` stops watchers), which agmsg-host never does:
//! when the type does not override one, agmsg-host exits 3 and the file runs agmsg's own default, kept
//! under another name when the file is sourced. `agmsg_delivery_runtime_status` is left to agmsg.
//! `$SKILL_DIR` (delivery.sh's) is passed on as `AGMSG_SKILL_DIR`, so agmsg-host reads agmsg's own
//! types and writes commands naming agmsg's scripts.
//!
//! agmsg-host itself never runs a `_delivery.sh`; it reads one only to learn which functions a shell
//! plug overrides ([`crate::agent::plug::PlugInfo::scan`]). This file overrides nothing of its own, so
//! [`is_shim`] recognises it (exactly the text [`text`] writes for the program and type it names).

use super::Behaviour;
use crate::shell::quote;
use crate::agent::plug::Function;
use crate::agent::registry::AgentType;

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

/// Whether type `t` can take the shim as its `_delivery.sh`, and what it loses: `Err` when agmsg-host
/// cannot answer its apply and status (a shell plug overrides them and no plug component answers for
/// the type); else one warning per function the type's current plug (agmsg's, or a shell plug on disk)
/// overrides that agmsg-host does not reproduce: with the shim in its place, the type's plug component
/// answers it if it overrides it, else agmsg's default runs.
pub fn replaces(t: &AgentType) -> Result<Vec<String>, String> {
    let behaviour = Behaviour::of(t);
    let component = t.plug_component();
    if let (Err(e), None) = (&behaviour, &component) {
        return Err(format!("{e}; install a delivery plug component for it first (`agmsg-host plugin install`, axis types)"));
    }
    let reproduced = |f: Function| match f {
        Function::Apply | Function::Status => true,
        Function::StopDirective => behaviour == Ok(Behaviour::GrokBuild),
        Function::OnDisable => behaviour.as_ref().is_ok_and(|b| b.on_disable(t).is_some()),
        Function::OnEnable | Function::RuntimeStatus => false,
    };
    Ok(t.plug()
        .overrides
        .iter()
        .filter(|(f, _)| !reproduced(*f))
        .map(|(f, what)| {
            format!(
                "type {}: its plug's {}{} is not agmsg-host's; with this file in its place {}",
                t.name,
                f.shell_name(),
                what.as_ref().map(|w| format!(" ({w})")).unwrap_or_default(),
                if *f == Function::RuntimeStatus { "agmsg's default runs".to_owned() } else { format!("{} answers it, else agmsg's default runs", if component.is_some() { "its plug component" } else { "a plug component installed for it" }) }
            )
        })
        .collect())
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

# agmsg-host delivery <op> <args...>, told agmsg's directory.
_agmsg_host() {
    if [ -n "${SKILL_DIR:-}" ]; then
        AGMSG_SKILL_DIR="$SKILL_DIR" "$_agmsg_host_bin" delivery "$@"
    else
        "$_agmsg_host_bin" delivery "$@"
    fi
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
}
