//! The storage shim: the bash storage driver agmsg's core sources (`<agmsg>/scripts/drivers/storage/
//! <name>.sh`), forwarding every `storage_*` function to `agmsg-host storage --driver <name>`.
//! Written by `agmsg-host shim storage` and `shim install`.
//!
//! agmsg loads a storage driver by sourcing `storage/<name>.sh` and calling `storage_<op>` functions;
//! the shim is such a file, so agmsg selects the sandboxed component like any driver, by the file's
//! name (`AGMSG_STORAGE_DRIVER=<name>`, agmsg's config). Each function passes its arguments on
//! unchanged (both argv shapes), keeps agmsg-host's stdout framing and exit code as its own, and sends a
//! message body through stdin, never argv, so a body of any size and content arrives byte for byte. The
//! store is the one agmsg itself opens: the shim asks agmsg's own facade (`agmsg_db_path <team>`,
//! `agmsg_storage_dir`) when the sourcing shell defines it.
//!
//! The shim names its driver as the user did: a name stays a name (never the plugin component's path),
//! so every call resolves it and checks its trust exactly as `agmsg-host --driver <name>` does, and a
//! plugin untrusted or changed since is refused through the shim with the same words and exit code. A
//! component file named by its path is named by that path (made absolute). agmsg-host itself is named
//! by the path the user ran it by ([`crate::shim::invoked_binary`]); when it cannot run there, every
//! function fails with runtime_error (13) and a line saying what to do, and sourcing the file fails
//! too (13), so agmsg's scripts stop at their driver load instead of reading "no messages".

use std::path::Path;

use super::StorageError;
use super::world::Offers;
use crate::axis_module::Reference;
use crate::error::{ExitClass, HostError};
use crate::shell::quote;

/// Load `driver` (a name or a component path) and see which optional interfaces it exports (its
/// generated [`Offers`], which decide the optional functions a shim defines: agmsg's callers test
/// `command -v storage_record_receipts` (and the like) and skip the op when it is absent, so a function
/// defined for a driver without the op would fail them instead). No op is called; an empty private directory stands in for the store. A bundled driver is loaded as it is
/// embedded (a driver with host settings needs none of them to say what it exports).
pub fn offers(driver: &str) -> Result<Offers, StorageError> {
    let source = match super::source::resolve(driver) {
        Ok(source) => source,
        Err(e) => super::source::bundled_driver(driver).ok_or(e)?,
    };
    let runtime = crate::runtime::Runtime::from_env().map_err(StorageError::runtime)?;
    let empty = tempfile::Builder::new()
        .prefix("agmsg-host-probe-")
        .tempdir()
        .map_err(|e| StorageError::runtime(format!("cannot create a directory: {e}")))?;
    let dir = crate::runtime::sandbox::StoreDir::open(empty.path())
        .map_err(|e| StorageError::runtime(format!("cannot open {}: {e}", empty.path().display())))?;
    Ok(super::Storage::open(&runtime, &source, dir)?.offers())
}

/// A storage shim ready to write: its text and the name agmsg selects it by.
#[derive(Debug)]
pub struct StorageShim {
    /// agmsg's selector: the file's name without `.sh` (`AGMSG_STORAGE_DRIVER=<selector>`).
    pub selector: String,
    pub text: String,
}

/// The shim for the driver `reference` (a name or a component path), run by the agmsg-host at `bin`.
/// The driver is resolved now (a typo or an untrusted plugin fails here, as it would in agmsg). agmsg
/// selects a storage driver by its file's name, so the selector is `output`'s name without `.sh` when
/// it is written to a file, else `name`, else `host-<driver>`; a `name` that is not agmsg's driver name
/// (or that differs from `output`'s) is a usage error.
pub fn storage_shim_for(reference: &str, name: Option<&str>, output: Option<&Path>, bin: &str) -> Result<StorageShim, HostError> {
    let runtime_error = |e: StorageError| HostError::new(ExitClass::RUNTIME, e.to_string());
    let source = super::source::resolve(reference).map_err(runtime_error)?;
    let driver = match Reference::of(reference) {
        Reference::Name(name) => name.to_owned(),
        Reference::File(path) | Reference::Dir(path) => {
            crate::axis_module::absolute(path).map_err(|e| HostError::new(ExitClass::RUNTIME, e.message))?
        }
    };
    let from_file = output
        .and_then(|o| o.file_name())
        .and_then(|f| f.to_str())
        .and_then(|f| f.strip_suffix(".sh"))
        .filter(|s| agmsg_contract::is_driver_name(s));
    let selector = match (name, from_file) {
        (Some(name), Some(file)) if name != file => {
            return Err(HostError::usage(format!(
                "--name {name:?} differs from the file's name: agmsg selects a storage driver by its file's name ({file}.sh is driver '{file}')"
            )));
        }
        (Some(name), _) => name.to_owned(),
        (None, Some(file)) => file.to_owned(),
        (None, None) => format!("host-{}", source.name),
    };
    if !agmsg_contract::is_driver_name(&selector) {
        // A malformed argument, as clap's own argument errors: usage (2), nothing written.
        return Err(HostError::usage(format!("--name must match [a-zA-Z0-9_-]+ (agmsg's driver names), not {selector:?}")));
    }
    let ops = offers(&driver).map_err(runtime_error)?;
    Ok(StorageShim { text: storage_shim_with(&selector, bin, &driver, ops), selector })
}

/// `agmsg-host shim storage`'s shim: for the driver `driver_flag` names, else the active one, run by
/// this agmsg-host as the user ran it (see [`storage_shim_for`]). Every failure past the arguments is
/// the storage runtime_error the driver would report to agmsg.
pub fn requested(driver_flag: Option<String>, name: Option<&str>, output: Option<&Path>) -> Result<StorageShim, HostError> {
    let driver = super::location::storage_driver(driver_flag).map_err(|e| HostError::new(ExitClass::RUNTIME, e.to_string()))?;
    let bin = crate::shim::invoked_binary().map_err(|e| HostError::new(ExitClass::RUNTIME, e.message))?;
    storage_shim_for(&driver, name, output, &bin)
}

/// Write `shim` to `output` atomically (agmsg may be sourcing the old file right now); not written is
/// the storage runtime_error.
pub fn write(shim: &StorageShim, output: &Path) -> Result<(), HostError> {
    let failed = |e: std::io::Error| HostError::new(ExitClass::RUNTIME, format!("cannot write {}: {e}", output.display()));
    crate::atomic_file::write_atomically(output, failed, |w| std::io::Write::write_all(w, shim.text.as_bytes()).map_err(failed))
}

/// Where agmsg finds the shim written to `output` as storage driver `selector`, for the line printed
/// after writing it.
pub fn hint(output: &Path, selector: &str) -> String {
    let file_ok = output.file_name().and_then(|f| f.to_str()) == Some(&format!("{selector}.sh"));
    let dir = output.parent().unwrap_or(Path::new(""));
    let in_storage = dir.file_name() == Some("storage".as_ref());
    let base = dir.parent().unwrap_or(Path::new(""));
    let select = format!("select it with AGMSG_STORAGE_DRIVER={selector} or agmsg's config \"storage\": \"{selector}\"");
    if !file_ok || !in_storage {
        format!(
            "agmsg loads a storage driver only as <agmsg>/scripts/drivers/storage/{selector}.sh (or `agmsg-host shim install <agmsg>` writes it there); then {select}"
        )
    } else if base.file_name() == Some("drivers".as_ref()) {
        format!("agmsg loads it as storage driver '{selector}': {select}")
    } else {
        format!(
            "agmsg loads a file outside its scripts/drivers/ only once trusted in its db/trusted-plugins (a line `storage/{selector}<TAB>{}`); in <agmsg>/scripts/drivers/storage/ it needs none. Then {select}",
            std::path::absolute(output).unwrap_or_else(|_| output.to_owned()).display()
        )
    }
}

/// The storage drivers `shim install` writes a shim for, by name: every one `storage list` shows as
/// selectable (the bundled drivers and each trusted plugin, a plugin shadowing a bundled driver named
/// once). A plugin that is only untrusted gets none: agmsg would not find it, as agmsg-host would not.
pub fn install_names() -> Result<Vec<String>, HostError> {
    let entries = crate::catalog::entries(crate::axis::Axis::Storage, &[])
        .map_err(|e| HostError::refused(format!("cannot list the storage drivers: {e}")))?;
    let mut names: Vec<String> = Vec::new();
    for entry in entries.into_iter().filter(|e| e.origin.runs()) {
        if !names.contains(&entry.name) {
            names.push(entry.name);
        }
    }
    Ok(names)
}

/// `shim install`'s storage shims: `scripts/drivers/storage/<name>.sh` for each of [`install_names`],
/// forwarding by name, with the optional functions its driver offers.
pub fn install_files(bin: &str) -> Result<Vec<crate::axis_module::ShimFile>, HostError> {
    Ok(install_names()?
        .into_iter()
        .map(|name| crate::axis_module::ShimFile {
            path: format!("scripts/drivers/storage/{name}.sh"),
            text: Ok(storage_shim(&name, bin, &name)),
            warnings: Vec::new(),
            only_in_existing_dir: None,
        })
        .collect())
}

/// The file agmsg's `agmsg_storage_load` would source for storage driver `name` in the agmsg install
/// `skill`, by agmsg's own rule: `storage/<name>.sh` in `<skill>/scripts/drivers` (built in, always
/// loaded), `<skill>/plugins` and each `AGMSG_PLUGIN_DIRS` directory (external: only with the exact
/// line `storage/<name><TAB><file>` in `<skill>/db/trusted-plugins`), the first that may load, in
/// that order, as agmsg's loop takes it; `None` when agmsg finds none.
pub fn agmsg_would_load(skill: &Path, name: &str) -> Option<std::path::PathBuf> {
    let trusted = std::fs::read_to_string(skill.join("db/trusted-plugins")).unwrap_or_default();
    let mut bases = vec![(true, skill.join("scripts/drivers")), (false, skill.join("plugins"))];
    if let Some(dirs) = std::env::var_os("AGMSG_PLUGIN_DIRS") {
        bases.extend(std::env::split_paths(&dirs).filter(|d| !d.as_os_str().is_empty()).map(|d| (false, d)));
    }
    bases
        .into_iter()
        .map(|(builtin, base)| (builtin, base.join("storage").join(format!("{name}.sh"))))
        .find(|(builtin, file)| {
            file.is_file()
                && (*builtin || trusted.lines().any(|l| l.strip_prefix(&format!("storage/{name}\t")).is_some_and(|p| Path::new(p) == file)))
        })
        .map(|(_, file)| file)
}

/// Refused (runtime_error) when agmsg is installed (`AGMSG_SKILL_DIR`, else `~/.agents/skills/agmsg`)
/// and would not find storage driver `name` (see [`agmsg_would_load`]): agmsg reads the same config,
/// and every agmsg command would then fail with `no trusted storage driver`. Saying what makes it work.
pub fn check_agmsg_loads(name: &str) -> Result<(), StorageError> {
    let Some(skill) = crate::agent::registry::skill_dir() else { return Ok(()) };
    if !skill.join("scripts/lib/storage.sh").is_file() || agmsg_would_load(&skill, name).is_some() {
        return Ok(());
    }
    let skill = skill.display().to_string();
    let skill = crate::display::line(&skill);
    Err(StorageError::runtime(format!(
        "agmsg, installed in {skill}, reads the same config and has no storage driver '{name}' (it loads {skill}/scripts/drivers/storage/{name}.sh): run `agmsg-host shim install {skill}` first, which writes one for every storage driver agmsg-host runs; nothing changed"
    )))
}

/// The shim's text: `bin` runs `driver` (a driver name, or a component's absolute path), with the
/// optional ops the driver exports (found by loading it; a driver that cannot be loaded gets none, and
/// fails its first op with the reason).
pub fn storage_shim(name: &str, bin: &str, driver: &str) -> String {
    storage_shim_with(name, bin, driver, offers(driver).unwrap_or_default())
}

/// [`storage_shim`] with the optional ops given. Its own names carry `_agmsg_host_storage`: one shell
/// may also source a type's `_delivery.sh`, whose helpers are `_agmsg_host_*`, and a later definition
/// of a shared name would send storage ops elsewhere.
pub fn storage_shim_with(name: &str, bin: &str, driver: &str, offers: Offers) -> String {
    let mut text = format!(
        "# agmsg storage driver '{name}': every storage_* op runs in agmsg-host's sandboxed '{driver_shown}'\n\
         # component. Generated by agmsg-host {version} (`agmsg-host shim storage`). agmsg loads it as\n\
         # <agmsg>/scripts/drivers/storage/{name}.sh; select it with AGMSG_STORAGE_DRIVER={name}. Every call\n\
         # resolves the driver and checks its trust as `agmsg-host --driver` does. The store is the one\n\
         # agmsg's facade resolves (agmsg_db_path <team>, agmsg_storage_dir) when they are defined, else\n\
         # AGMSG_STORAGE_PATH, else agmsg-host's own resolution. Safe under `set -euo pipefail`; defines\n\
         # only storage_* and _agmsg_host_storage_* names.\n\n\
         _agmsg_host_storage_bin={bin}\n\
         _agmsg_host_storage_driver={driver_q}\n\
         # This file, as sourced: named, with what to do, when agmsg-host cannot run.\n\
         _agmsg_host_storage_file=\"${{BASH_SOURCE[0]:-}}\"\n\n",
        version = env!("CARGO_PKG_VERSION"),
        bin = quote(bin),
        driver_q = quote(driver),
        // A comment ends at a line break: one in the path would start a line of code.
        driver_shown = crate::display::line(driver),
    );
    text.push_str(SHIM_FUNCTIONS);
    for interface in offers.names() {
        text.push_str(optional_functions(interface).unwrap_or_default());
    }
    text.push_str(SHIM_SOURCED);
    text
}

/// The functions a shim defines for an optional interface the driver offers (by its name in
/// [`Offers::NAMES`]), in agmsg's names; none for an interface agmsg calls no function of (`live`, `purge`).
fn optional_functions(interface: &str) -> Option<&'static str> {
    Some(match interface {
        "receipts" => SHIM_RECEIPTS,
        "rename" => SHIM_RENAME,
        "sync" => SHIM_SYNC,
        "resync" => SHIM_RESYNC,
        "read_state" => SHIM_READ_STATE,
        _ => return None,
    })
}

/// Last in every shim: sourced while agmsg-host cannot run, it says so and the sourcing fails with 13,
/// so agmsg's scripts (under `set -e`) stop at their driver load instead of answering from no store.
/// The functions are defined all the same, and each fails likewise when called.
const SHIM_SOURCED: &str = r#"
# Sourced while agmsg-host cannot run: said now, and the load fails (13).
if ! _agmsg_host_storage_runnable; then
    _agmsg_host_storage_gone "" || return 13 2>/dev/null || true
fi
"#;

/// Defined only for a driver that exports `receipts` (see [`optional_functions`]).
const SHIM_RECEIPTS: &str = r#"
# Optional ops (agmsg:storage 1.2.0 receipts): this driver offers them.
storage_record_receipts() { _agmsg_host_storage "${1-}" record-receipts "$@"; }
storage_receipt_status() { _agmsg_host_storage "${1-}" receipt-status "$@"; }
"#;

/// Defined only for a driver that exports `rename`. A team rename runs on the new team's store.
const SHIM_RENAME: &str = r#"
# Optional ops (agmsg:storage 1.2.0 rename): this driver offers them.
storage_rename_agent() { _agmsg_host_storage "${1-}" rename-agent "$@"; }
storage_rename_team() { _agmsg_host_storage "${2-}" rename-team "$@"; }
"#;

/// Defined only for a driver that exports `sync`: agmsg's sync adapter (`storage-sync-driver.sh`) tests
/// `command -v storage_sync_*` and answers 14 itself where one is missing. Records pass through stdin
/// and stdout; the store is the binding's local team's ($1).
const SHIM_SYNC: &str = r#"
# Optional ops (agmsg:storage 1.2.0 sync, agmsg's Stage-1 remote sync): this driver offers them.
storage_sync_prepare_push() { _agmsg_host_storage "${1-}" sync-prepare-push "$@"; }
storage_sync_reconcile_push() { _agmsg_host_storage "${1-}" sync-reconcile-push "$@"; }
storage_sync_apply_pull() { _agmsg_host_storage "${1-}" sync-apply-pull "$@"; }
storage_sync_reprocess() { _agmsg_host_storage "${1-}" sync-reprocess "$@"; }
"#;

/// Defined only for a driver that exports `resync` (capability `stage1-resync`), as [`SHIM_SYNC`].
const SHIM_RESYNC: &str = r#"
# Optional ops (agmsg:storage 1.2.0 resync, retention-gap resynchronization): this driver offers them.
storage_sync_resync_status() { _agmsg_host_storage "${1-}" sync-resync-status "$@"; }
storage_sync_resync() { _agmsg_host_storage "${1-}" sync-resync "$@"; }
"#;

/// Defined only for a driver that exports `read-state` (capability `stage2-read-state`), as
/// [`SHIM_SYNC`]; block and unblock are the ops agmsg's engine calls beside prepare and apply.
const SHIM_READ_STATE: &str = r#"
# Optional ops (agmsg:storage 1.2.0 read-state, Stage-2 read-state sync): this driver offers them.
storage_sync_prepare_read_state() { _agmsg_host_storage "${1-}" sync-prepare-read-state "$@"; }
storage_sync_apply_read_state() { _agmsg_host_storage "${1-}" sync-apply-read-state "$@"; }
storage_sync_block_read_state() { _agmsg_host_storage "${1-}" sync-block-read-state "$@"; }
storage_sync_unblock_read_state() { _agmsg_host_storage "${1-}" sync-unblock-read-state "$@"; }
"#;

/// The functions, the same in every shim (the header sets `_agmsg_host_storage_bin`, `_driver` and `_file`).
///
/// The store is the one agmsg opens itself. Sourced by agmsg, its facade (`scripts/lib/storage.sh`)
/// defines `agmsg_db_path <team>` (the team's `messages.db`, its partition applied: `<dir>/messages.db`
/// or `<dir>/teams/<team>/messages.db`) and `agmsg_storage_dir` (the store root); the shim asks them,
/// at every call, and passes the directory of the team's database, marked with `AGMSG_STORE_IS_PARTITION=1`
/// so agmsg-host does not apply the partition a second time. Without the facade: `AGMSG_STORAGE_PATH`,
/// else agmsg-host's own resolution (partitions included, as agmsg does). A team agmsg cannot resolve
/// fails the op (status 13, `runtime_error` last on stdout for a control op): never another store.
const SHIM_FUNCTIONS: &str = r#"# The store of team $1 (empty: an op without a team), for op $2: sets _agmsg_host_storage_store (empty:
# agmsg-host resolves it) and _agmsg_host_storage_exact (1: the directory is already the team's own store).
_agmsg_host_storage_locate() {
    local _agmsg_host_storage_team="$1" _agmsg_host_storage_op="$2" _agmsg_host_storage_path
    _agmsg_host_storage_store=
    _agmsg_host_storage_exact=
    # 1> and not >: agmsg's own tests sweep its scripts/ for the name before a `>`, a `|`, a `)` or the
    # line's end, which is how a call without a team looks (this line only asks whether it is defined).
    if [ -n "$_agmsg_host_storage_team" ] && declare -F agmsg_db_path 1>/dev/null; then
        if _agmsg_host_storage_path=$(agmsg_db_path "$_agmsg_host_storage_team") && [ -n "$_agmsg_host_storage_path" ]; then
            case "$_agmsg_host_storage_path" in
                */*) _agmsg_host_storage_store="${_agmsg_host_storage_path%/*}" ;;
                *) _agmsg_host_storage_store=. ;;
            esac
            _agmsg_host_storage_store="${_agmsg_host_storage_store:-/}"
            _agmsg_host_storage_exact=1
            return 0
        fi
    elif declare -F agmsg_storage_dir >/dev/null; then
        if _agmsg_host_storage_store=$(agmsg_storage_dir) && [ -n "$_agmsg_host_storage_store" ]; then
            return 0
        fi
    else
        _agmsg_host_storage_store="${AGMSG_STORAGE_PATH:-}"
        return 0
    fi
    echo "agmsg-host shim: agmsg could not resolve the store${_agmsg_host_storage_team:+ of team '$_agmsg_host_storage_team'}" >&2
    _agmsg_host_storage_failed "$_agmsg_host_storage_op"
}

# Op $1 failed at run time: runtime_error (13), the status word last on stdout for a control op (a
# record op prints none).
_agmsg_host_storage_failed() {
    case "$1" in
        check | init | mark-read-batch | read-cursor-consume | compact | record-receipts | rename-agent | rename-team) echo runtime_error ;;
    esac
    return 13
}

# Whether agmsg-host is a program at the path this file names.
_agmsg_host_storage_runnable() {
    [ -x "$_agmsg_host_storage_bin" ] && [ ! -d "$_agmsg_host_storage_bin" ]
}

# agmsg-host cannot run (gone from that path, or not a program there): one line on stderr that names
# it and says what to do, then op $1 (empty: none) fails as _agmsg_host_storage_failed says.
_agmsg_host_storage_gone() {
    local _agmsg_host_storage_fix
    case "$_agmsg_host_storage_file" in
        */scripts/drivers/storage/*) _agmsg_host_storage_fix="re-run \`agmsg-host shim install ${_agmsg_host_storage_file%/scripts/drivers/storage/*}\` with the agmsg-host you have now" ;;
        ?*) _agmsg_host_storage_fix="write $_agmsg_host_storage_file again with \`agmsg-host --driver $_agmsg_host_storage_driver shim storage --output <file>\`" ;;
        *) _agmsg_host_storage_fix="re-run \`agmsg-host shim install <agmsg's directory>\` with the agmsg-host you have now" ;;
    esac
    echo "agmsg-host: cannot run $_agmsg_host_storage_bin, which agmsg's storage driver '$_agmsg_host_storage_driver' runs in (moved or removed?): put agmsg-host back there, or $_agmsg_host_storage_fix" >&2
    _agmsg_host_storage_failed "${1-}"
}

# Run op $1 [args...] in the store _agmsg_host_storage_locate chose. agmsg-host itself never exits 126
# or 127: those are the shell's "cannot run it".
_agmsg_host_storage_exec() {
    _agmsg_host_storage_runnable || { _agmsg_host_storage_gone "$1"; return; }
    local _agmsg_host_storage_s=0
    if [ -n "$_agmsg_host_storage_store" ]; then
        AGMSG_STORE_IS_PARTITION="$_agmsg_host_storage_exact" \
            "$_agmsg_host_storage_bin" storage --driver "$_agmsg_host_storage_driver" --store "$_agmsg_host_storage_store" "$@" || _agmsg_host_storage_s=$?
    else
        AGMSG_STORE_IS_PARTITION= "$_agmsg_host_storage_bin" storage --driver "$_agmsg_host_storage_driver" "$@" || _agmsg_host_storage_s=$?
    fi
    case "$_agmsg_host_storage_s" in
        126 | 127) _agmsg_host_storage_gone "$1" ;;
        *) return "$_agmsg_host_storage_s" ;;
    esac
}

# _agmsg_host_storage <team> <op> [args...]: agmsg's argv for <op>, whose store is <team>'s.
_agmsg_host_storage() {
    _agmsg_host_storage_locate "$1" "$2" || return
    shift
    _agmsg_host_storage_exec "$@"
}

storage_check() { _agmsg_host_storage "" check "$@"; }
storage_describe() { _agmsg_host_storage "${1-}" describe "$@"; }
storage_init() { _agmsg_host_storage "${1-}" init "$@"; }
# agmsg reads every failure of store_exists as "no store yet" (so: no messages), and its own drivers'
# `[ -f <file> ]` cannot fail otherwise. When agmsg-host cannot answer at all (it cannot run, or it
# refused the driver: untrusted, changed since trusted), the calling shell ends here with that status,
# the reason on stderr, rather than going on as an empty inbox. A store agmsg cannot resolve answers
# as agmsg's own drivers do.
storage_store_exists() {
    _agmsg_host_storage_locate "${1-}" store-exists || return
    local _agmsg_host_storage_s=0
    _agmsg_host_storage_exec store-exists "$@" || _agmsg_host_storage_s=$?
    case "$_agmsg_host_storage_s" in
        0 | 1) return "$_agmsg_host_storage_s" ;;
        *) exit "$_agmsg_host_storage_s" ;;
    esac
}

# The body (the last argument) goes through stdin, never argv: any size, byte for byte. The store is
# found first, in this shell, so a failure there ends the op before the body is written.
storage_send() {
    if [ "$#" -lt 4 ]; then
        _agmsg_host_storage "${1-}" send "$@"
        return
    fi
    _agmsg_host_storage_locate "$1" send || return
    local _agmsg_host_storage_body="${!#}"
    printf '%s' "$_agmsg_host_storage_body" | _agmsg_host_storage_exec send --body-stdin "${@:1:$(($# - 1))}"
}

storage_list_unread() { _agmsg_host_storage "${1-}" list-unread "$@"; }
storage_mark_read_batch() { _agmsg_host_storage "${1-}" mark-read-batch "$@"; }
storage_read_cursor_get() { _agmsg_host_storage "${1-}" read-cursor-get "$@"; }
storage_read_cursor_consume() { _agmsg_host_storage "${1-}" read-cursor-consume "$@"; }
# A watch names its team in its <team>:<agent> pairs (one team per call; agmsg-host checks the rest).
storage_watch_tip() { _agmsg_host_storage "$(_agmsg_host_storage_pair_team "${1-}")" watch-tip "$@"; }
storage_watch_after() { _agmsg_host_storage "$(_agmsg_host_storage_pair_team "${2-}")" watch-after "$@"; }
storage_history() { _agmsg_host_storage "${1-}" history "$@"; }
# export/import take the team first only in agmsg's current shape (<team> <file>).
storage_export() { _agmsg_host_storage "$(_agmsg_host_storage_team_of_two "$@")" export "$@"; }
storage_import() { _agmsg_host_storage "$(_agmsg_host_storage_team_of_two "$@")" import "$@"; }
storage_compact() { _agmsg_host_storage "${1-}" compact "$@"; }

# The team of a <team>:<agent> pair (split at the first ':', as agmsg does); empty if it is not one.
_agmsg_host_storage_pair_team() {
    case "$1" in
        ?*:*) printf '%s' "${1%%:*}" ;;
    esac
}

_agmsg_host_storage_team_of_two() {
    if [ "$#" -ge 2 ]; then printf '%s' "$1"; fi
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn source(shim: &str, script: &str) -> std::process::Output {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shim.sh"), shim).unwrap();
        std::process::Command::new("bash").current_dir(dir.path()).arg("-c").arg(format!("source ./shim.sh; {script}")).output().unwrap()
    }

    /// Every interface the shim has functions for is one the world lists.
    #[test]
    fn the_optional_functions_are_keyed_by_the_worlds_interfaces() {
        for interface in ["receipts", "rename", "sync", "resync", "read_state"] {
            assert!(Offers::NAMES.contains(&interface) && optional_functions(interface).is_some(), "{interface}");
        }
    }

    #[test]
    fn quotes_for_bash() {
        assert_eq!(quote("/opt/it's here/agmsg-host"), r"'/opt/it'\''s here/agmsg-host'");
        let shim = storage_shim_with("host-sqlite", "/bin/true", "sqlite", Offers::default());
        assert!(shim.contains("_agmsg_host_storage_driver='sqlite'") && shim.contains("storage_compact()"));
        // A line break in the component's path (named in the header comment too) runs nothing when
        // agmsg sources the file.
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let shim = storage_shim_with("host-x", "/bin/true", &format!("/tmp/a\ntouch {}\n#.wasm", marker.display()), Offers::default());
        let sourced = source(&shim, "true");
        assert!(sourced.status.success(), "{sourced:?}");
        assert!(!marker.exists(), "the path's second line ran");
    }

    /// agmsg-host gone from the path the shim names: sourcing fails (13) saying so, and every function,
    /// record op or control op, answers runtime_error (13) with the same line, a control op with its
    /// status word; never an empty success.
    #[test]
    fn without_agmsg_host_every_function_fails_saying_what_to_do() {
        let shim = storage_shim_with(
            "my-store",
            "/nonexistent/bin/agmsg-host",
            "my-store",
            Offers { receipts: true, rename: true, sync: true, resync: true, read_state: true, ..Offers::default() },
        );
        let out = source(&shim, "echo sourced");
        assert_eq!(out.status.code(), Some(0), "without set -e the script goes on: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("agmsg-host: cannot run /nonexistent/bin/agmsg-host")
                && stderr.contains("agmsg-host --driver my-store shim storage"),
            "{stderr}"
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg("set -e; f=$(mktemp); cat > \"$f\"; source \"$f\"; echo loaded")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(shim.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(13), &b""[..]), "under set -e the load stops the script: {out:?}");
        let functions: Vec<String> = String::from_utf8(source(&shim, "declare -F").stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("declare -f "))
            .filter(|f| f.starts_with("storage_"))
            .map(str::to_owned)
            .collect();
        assert!(functions.len() > 20, "{functions:?}");
        for f in functions {
            let out = source(&shim, &format!("{f} t a b c 2>err; echo \"rc=$?\"; cat err >&2"));
            let stdout = String::from_utf8_lossy(&out.stdout);
            if f == "storage_store_exists" {
                // "No store" is agmsg's reading of any other failure: the caller's shell ends instead.
                assert_eq!((out.status.code(), stdout.as_ref()), (Some(13), ""), "{f}: {out:?}");
                continue;
            }
            assert!(stdout.ends_with("rc=13\n"), "{f}: {stdout}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run /nonexistent/bin/agmsg-host"), "{f}: {out:?}");
            let control = [
                "storage_check",
                "storage_init",
                "storage_mark_read_batch",
                "storage_read_cursor_consume",
                "storage_compact",
                "storage_record_receipts",
                "storage_rename_agent",
                "storage_rename_team",
            ];
            assert_eq!(stdout.starts_with("runtime_error\n"), control.contains(&f.as_str()), "{f}: {stdout}");
        }
    }
}
