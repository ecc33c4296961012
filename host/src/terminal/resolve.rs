//! Which terminal driver a session runs under (§6.3), and which driver owns a placement reference.
//!
//! Two resolvers with different rules. Placement (where should a new pane go?) needs presence only: the
//! first candidate, by priority, whose `detect` says present. Naming (which pane is this session's
//! own?) needs an id: every candidate is tried, the first real id wins, and a candidate that is present
//! but cannot name its pane makes resolution fail loudly rather than fall back to plain.

use super::driver::{Detection, TermFailKind, Terminal, TerminalError};
use super::source::{Candidates, TerminalSource};
use crate::runtime::Runtime;

/// The variable that forces a driver, for spawning and naming.
pub const OVERRIDE_VAR: &str = "AGMSG_TERMINAL_DRIVER";

/// The id plain's `detect` prints: present, with no addressable pane.
pub const ADDRESSLESS: &str = "-";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub driver: String,
    /// Empty when the driver is present but produced no id (placement only).
    pub id: String,
}

/// What the user forced with [`OVERRIDE_VAR`], that driver alone resolved by its name.
pub fn override_driver(candidates: &Candidates) -> Result<Option<TerminalSource>, TerminalError> {
    let Some(name) = std::env::var(OVERRIDE_VAR).ok().filter(|n| !n.is_empty()) else { return Ok(None) };
    // A name only: a path there would run a directory the variable happens to name.
    if !agmsg_contract::is_driver_name(&name) {
        return Err(TerminalError::new(TermFailKind::Unsupported, format!("unknown terminal driver '{name}' ({OVERRIDE_VAR})")));
    }
    candidates
        .resolve(&name)
        .map(Some)
        .map_err(|_| TerminalError::new(TermFailKind::Unsupported, format!("unknown terminal driver '{name}' ({OVERRIDE_VAR})")))
}

/// Ask one candidate; a driver that fails to answer counts as present but unresolved, so a broken
/// driver is reported, never silently skipped.
fn detect(runtime: &Runtime, candidate: &TerminalSource, session_id: &str) -> Detection {
    match Terminal::open(runtime, candidate).and_then(|mut d| d.detect(session_id)) {
        Ok(detection) => detection,
        Err(e) => Detection::Unresolved(format!("detection failed: {e}")),
    }
}

/// §6.3 placement: the first candidate present at all, with its id if it gave one.
pub fn resolve_placement(runtime: &Runtime, candidates: &Candidates, session_id: &str) -> Result<Option<Resolved>, TerminalError> {
    if let Some(forced) = override_driver(candidates)? {
        let id = match detect(runtime, &forced, session_id) {
            Detection::Resolved(id) => id,
            _ => String::new(),
        };
        return Ok(Some(Resolved { driver: forced.manifest.name.clone(), id }));
    }
    for candidate in candidates.all() {
        match detect(runtime, candidate, session_id) {
            Detection::Absent => continue,
            Detection::Unresolved(_) => return Ok(Some(Resolved { driver: candidate.manifest.name.clone(), id: String::new() })),
            Detection::Resolved(id) => return Ok(Some(Resolved { driver: candidate.manifest.name.clone(), id })),
        }
    }
    Ok(None)
}

/// §6.3 naming: the first candidate with a real id; a present-but-unresolved candidate fails the whole
/// resolution with every reason; plain's addressless `-` only when nothing else was present.
pub fn resolve_name(runtime: &Runtime, candidates: &Candidates, session_id: &str) -> Result<Option<Resolved>, TerminalError> {
    let cannot_name = |reasons: &[String]| {
        TerminalError::new(
            TermFailKind::Unreachable,
            format!("under a terminal but cannot identify this pane to name it — {}", reasons.join("; ")),
        )
    };
    if let Some(forced) = override_driver(candidates)? {
        return match detect(runtime, &forced, session_id) {
            Detection::Resolved(id) => Ok(Some(Resolved { driver: forced.manifest.name.clone(), id })),
            Detection::Unresolved(reason) => Err(cannot_name(&[format!("{}: {reason}", forced.manifest.name)])),
            Detection::Absent => Err(cannot_name(&[format!("{}: not detected ({OVERRIDE_VAR})", forced.manifest.name)])),
        };
    }
    let mut unresolved = Vec::new();
    let mut addressless = None;
    for candidate in candidates.all() {
        match detect(runtime, candidate, session_id) {
            Detection::Absent => {}
            Detection::Unresolved(reason) => unresolved.push(format!("{}: {reason}", candidate.manifest.name)),
            Detection::Resolved(id) if id == ADDRESSLESS || id.is_empty() => {
                addressless.get_or_insert_with(|| candidate.manifest.name.clone());
            }
            Detection::Resolved(id) => return Ok(Some(Resolved { driver: candidate.manifest.name.clone(), id })),
        }
    }
    if !unresolved.is_empty() {
        return Err(cannot_name(&unresolved));
    }
    Ok(addressless.map(|driver| Resolved { driver, id: ADDRESSLESS.to_owned() }))
}

/// Split a placement reference `<terminal>:<id>` whose scheme is a known driver; a legacy bare `%N` or
/// `@N` is tmux's. Anything else is a bare id (`None`).
pub fn split_reference<'a, S: AsRef<str>>(reference: &'a str, known: &[S]) -> Option<(&'a str, &'a str)> {
    if let Some((scheme, id)) = reference.split_once(':')
        && known.iter().any(|k| k.as_ref() == scheme)
    {
        return Some((scheme, id));
    }
    let legacy = |sigil: char| reference.strip_prefix(sigil).is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    (legacy('%') || legacy('@')).then_some(("tmux", reference))
}

/// The driver an op runs on, as agmsg picks it: `--driver`, else [`OVERRIDE_VAR`], else the scheme of the
/// op's id when it is a placement reference, else the terminal this session is placed in. Also the id's
/// scheme, when it had one. Only the driver chosen is read, unless detection has to try them all.
pub fn choose_driver(
    runtime: &Runtime,
    candidates: &Candidates,
    flag: Option<&str>,
    id: Option<&str>,
) -> Result<(TerminalSource, Option<String>), TerminalError> {
    if let Some(chosen) = chosen_driver(candidates, flag, id)? {
        return Ok(chosen);
    }
    let unsupported = |m: String| TerminalError::new(TermFailKind::Unsupported, m);
    match resolve_placement(runtime, candidates, "")? {
        Some(found) => Ok((candidates.resolve(&found.driver).map_err(unsupported)?, None)),
        None => {
            Err(unsupported(format!("no terminal detected: give --driver, {OVERRIDE_VAR}, or a placement reference such as tmux:<id>")))
        }
    }
}

/// [`choose_driver`] when the choice is named (`--driver`, [`OVERRIDE_VAR`], the id's scheme), with no
/// driver asked; `None` when it is left to detection.
pub fn chosen_driver(
    candidates: &Candidates,
    flag: Option<&str>,
    id: Option<&str>,
) -> Result<Option<(TerminalSource, Option<String>)>, TerminalError> {
    let unsupported = |m: String| TerminalError::new(TermFailKind::Unsupported, m);
    let known = candidates.names();
    let scheme = id.and_then(|id| split_reference(id, &known)).map(|(scheme, _)| scheme.to_owned());
    if let Some(name) = flag {
        return candidates.resolve(name).map(|s| Some((s, scheme))).map_err(unsupported);
    }
    if let Some(forced) = override_driver(candidates)? {
        return Ok(Some((forced, scheme)));
    }
    match scheme {
        Some(name) => Ok(Some((candidates.resolve(&name).map_err(unsupported)?, Some(name)))),
        None => Ok(None),
    }
}

/// The id to hand driver `driver` for `raw`: a placement reference of that driver becomes its bare id; one
/// of another driver is refused (unsupported); anything else is passed on as it is. `scheme` is what
/// [`choose_driver`] found in the op's id.
pub fn bare_id<S: AsRef<str>>(raw: &str, known: &[S], driver: &str, scheme: Option<&str>) -> Result<String, TerminalError> {
    match split_reference(raw, known) {
        Some((owner, id)) if owner == driver && scheme.is_some() => Ok(id.to_owned()),
        Some((owner, id)) if owner == driver && raw.starts_with(&format!("{owner}:")) => Ok(id.to_owned()),
        Some((owner, _)) if owner != driver && raw.starts_with(&format!("{owner}:")) => {
            Err(TerminalError::new(TermFailKind::Unsupported, format!("{raw:?} is a {owner} placement, not {driver}")))
        }
        _ => Ok(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::{bare_id, split_reference};

    #[test]
    fn ids_for_a_driver() {
        let known = ["tmux", "plain"];
        assert_eq!(bare_id("tmux:/tmp/s:%3", &known, "tmux", Some("tmux")).unwrap(), "/tmp/s:%3");
        assert_eq!(bare_id("tmux:%3", &known, "tmux", None).unwrap(), "%3");
        assert_eq!(bare_id("%3", &known, "tmux", None).unwrap(), "%3");
        assert!(bare_id("plain:-", &known, "tmux", None).is_err());
        assert_eq!(bare_id("/tmp/s:%3", &known, "tmux", None).unwrap(), "/tmp/s:%3");
    }

    #[test]
    fn placement_references() {
        let known = ["tmux", "plain", "herdr", "orca"];
        assert_eq!(split_reference("tmux:/tmp/s:%3", &known), Some(("tmux", "/tmp/s:%3")));
        assert_eq!(split_reference("plain:-", &known), Some(("plain", "-")));
        assert_eq!(split_reference("%12", &known), Some(("tmux", "%12")));
        assert_eq!(split_reference("@3", &known), Some(("tmux", "@3")));
        assert_eq!(split_reference("/tmp/s:%3", &known), None);
        assert_eq!(split_reference("%9;kill", &known), None);
        assert_eq!(split_reference("screen:1", &known), None);
    }
}
