//! Reading herdr's JSON answers, with the same rules agmsg's driver applies through sqlite's JSON1.
//!
//! The destructive answers are earned: "this session is not among the agents" and "this pane is gone"
//! are claims about a WHOLE list, so they are made only when every entry of it was decidable. Anything
//! this driver cannot read is "could not answer", never a negative.

use serde_json::{Map, Value};

use crate::id;

/// The value at `path` (object keys), if every step exists.
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// A string at `path`.
pub fn text<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

/// A value as sqlite's `json_extract` renders it as text: `None` for a missing key or JSON null.
pub fn rendered(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A JSON integer that is a canonical positive pid (`^[1-9][0-9]*$` once rendered).
pub fn pid(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64).filter(|p| *p > 0)
}

/// The agent listing of `herdr agent list`: the first of agmsg's candidate paths that holds an array
/// (`$.result.agents` is the measured one; the others are defensive).
fn agents(list: &Value) -> Option<&Vec<Value>> {
    const PATHS: [&[&str]; 4] = [&["result", "agents"], &[], &["agents"], &["result"]];
    PATHS.into_iter().find_map(|path| at(list, path)?.as_array())
}

fn pane_ok(entry: &Map<String, Value>) -> bool {
    entry.get("pane_id").and_then(Value::as_str).is_some_and(id::bare_ok)
}

/// The fixed identity anchor every real herdr pane entry carries (keys present, whatever their value).
fn anchor_ok(entry: &Map<String, Value>) -> bool {
    ["agent", "terminal_id", "tab_id", "workspace_id"].iter().all(|key| entry.contains_key(*key))
}

/// No field is object- or array-valued: a session moved to a renamed structured key cannot hide here.
fn struct_free(entry: &Map<String, Value>) -> bool {
    entry.values().all(|v| !v.is_object() && !v.is_array())
}

/// What `agent list` says about a session id.
#[derive(Debug, PartialEq, Eq)]
pub enum SessionLookup {
    /// The session's pane (a grammar-checked bare id).
    Found(String),
    /// The list was read in full and the session is not in it.
    NotAmong,
    /// Unreadable, or the session's entry has no usable pane id, or some entry was undecidable.
    CouldNotAnswer,
}

/// agmsg's `_herdr_pane_for_session`: an entry is decidable when it carries an `agent_session` object
/// with a text `.value`, or is positively a session-less pane (no `agent_session` key, a valid pane id,
/// the identity anchor, and no structured field).
pub fn pane_for_session(list: &Value, session_id: &str) -> SessionLookup {
    let Some(entries) = agents(list) else { return SessionLookup::CouldNotAnswer };
    let (mut decidable, mut found, mut unusable) = (0usize, None, false);
    for entry in entries {
        let Value::Object(entry) = entry else { continue };
        match entry.get("agent_session") {
            Some(Value::Object(session)) => {
                let Some(value) = session.get("value").and_then(Value::as_str) else { continue };
                decidable += 1;
                if value == session_id {
                    if pane_ok(entry) {
                        found.get_or_insert_with(|| entry["pane_id"].as_str().unwrap_or_default().to_owned());
                    } else {
                        unusable = true;
                    }
                }
            }
            None if pane_ok(entry) && anchor_ok(entry) && struct_free(entry) => decidable += 1,
            _ => {}
        }
    }
    match found {
        Some(pane) => SessionLookup::Found(pane),
        None if unusable => SessionLookup::CouldNotAnswer,
        None if decidable == entries.len() => SessionLookup::NotAmong,
        None => SessionLookup::CouldNotAnswer,
    }
}

/// What `agent list` says about one bare pane id.
#[derive(Debug, PartialEq, Eq)]
pub enum Presence {
    Listed,
    /// The list was read in full (every entry a well-formed, anchored pane) and the id is not in it.
    NotListed,
    Undecidable,
}

/// agmsg's `terminal_pane_state` reading: a match is permissive (any entry with that `pane_id`), the
/// absence strict (every entry decidable).
pub fn presence(list: &Value, bare: &str) -> Presence {
    let Some(entries) = agents(list) else { return Presence::Undecidable };
    let objects = entries.iter().filter_map(Value::as_object);
    if objects.clone().any(|e| e.get("pane_id").and_then(Value::as_str) == Some(bare)) {
        return Presence::Listed;
    }
    if objects.filter(|e| pane_ok(e) && anchor_ok(e)).count() == entries.len() { Presence::NotListed } else { Presence::Undecidable }
}

/// The new pane of a `pane split` / `tab create` answer: the first candidate path holding a pane id of
/// the grammar (a wrong-shaped id fails closed rather than being recorded).
pub fn new_pane(created: &Value) -> Option<String> {
    const PATHS: [&[&str]; 4] = [&["result", "pane"], &["result", "root_pane"], &["pane"], &["root_pane"]];
    PATHS.into_iter().find_map(|path| text(created, &[path, &["pane_id"]].concat()).filter(|p| id::bare_ok(p))).map(str::to_owned)
}

/// `pane process-info`'s `(shell_pid, foreground_process_group_id)`, when both are positive integers.
pub fn shell_and_foreground(info: &Value) -> Option<(u64, u64)> {
    let facts = at(info, &["result", "process_info"])?;
    Some((pid(facts.get("shell_pid"))?, pid(facts.get("foreground_process_group_id"))?))
}

/// The layout of a `pane layout --pane P` answer.
pub struct Layout<'a> {
    panes: Vec<&'a Value>,
    splits: Vec<&'a Value>,
    pub tab: Option<&'a str>,
}

impl<'a> Layout<'a> {
    pub fn of(answer: &'a Value) -> Layout<'a> {
        let list = |key| at(answer, &["result", "layout", key]).and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        Layout { panes: list("panes"), splits: list("splits"), tab: text(answer, &["result", "layout", "tab_id"]) }
    }

    fn rows(&self, bare: &str) -> Vec<&'a Value> {
        self.panes.iter().copied().filter(|p| p.get("pane_id").and_then(Value::as_str) == Some(bare)).collect()
    }

    /// The layout lists `bare` exactly once.
    pub fn has(&self, bare: &str) -> bool {
        self.rows(bare).len() == 1
    }
}

/// Where `arrange` stands, read from the target's layout (agmsg's `_herdr_arrange_state`).
#[derive(Debug, PartialEq, Eq)]
pub enum ArrangeState {
    /// The target is not listed exactly once, or the source more than once.
    Unknown,
    /// The source is not in the target's tab (it may be in another one).
    SourceMissing,
    /// More than one smallest split holds the pair in the requested relation.
    Ambiguous,
    Unchanged,
    Different,
}

struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn rect(value: &Value) -> Option<Rect> {
    let n = |key: &str| at(value, &["rect", key]).and_then(Value::as_f64);
    Some(Rect { x: n("x")?, y: n("y")?, w: n("width")?, h: n("height")? })
}

fn contains(outer: &Rect, inner: &Rect) -> bool {
    inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.w <= outer.x + outer.w && inner.y + inner.h <= outer.y + outer.h
}

/// `direction` is herdr's `down` (place below) or `right` (place right). A split is a candidate when it
/// has that direction, holds both panes, and the source sits directly below (or right of) the target
/// with the same extent; the smallest such split is the pair's nearest common one. An unreadable rectangle
/// matches nothing, as a NULL does in agmsg's SQL.
pub fn arrange_state(layout: &Layout<'_>, source: &str, target: &str, direction: &str) -> ArrangeState {
    let (sources, targets) = (layout.rows(source), layout.rows(target));
    if targets.len() != 1 || sources.len() > 1 {
        return ArrangeState::Unknown;
    }
    let Some(src) = sources.first() else { return ArrangeState::SourceMissing };
    let areas: Vec<f64> = match (rect(src), rect(targets[0])) {
        (Some(s), Some(t)) => layout
            .splits
            .iter()
            .filter(|split| split.get("direction").and_then(Value::as_str) == Some(direction))
            .filter_map(|split| rect(split))
            .filter(|outer| contains(outer, &s) && contains(outer, &t))
            .filter(|_| match direction {
                "down" => s.y == t.y + t.h && s.x == t.x && s.w == t.w,
                _ => s.x == t.x + t.w && s.y == t.y && s.h == t.h,
            })
            .map(|outer| outer.w * outer.h)
            .collect(),
        _ => Vec::new(),
    };
    let Some(min) = areas.iter().copied().reduce(f64::min) else { return ArrangeState::Different };
    if areas.iter().filter(|a| **a == min).count() > 1 { ArrangeState::Ambiguous } else { ArrangeState::Unchanged }
}

/// A `pane move` answer reported `changed` (JSON true, or 1 as sqlite renders it).
pub fn moved(answer: &Value) -> bool {
    let changed = at(answer, &["result", "move_result", "changed"]);
    matches!(changed, Some(Value::Bool(true))) || changed.and_then(Value::as_i64) == Some(1)
}

/// A `pane swap` answer's `changed`: `Some(true/false)`, or `None` when it is neither.
pub fn swapped(answer: &Value) -> Option<bool> {
    match at(answer, &["result", "swap_result", "changed"])? {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_i64() {
            Some(1) => Some(true),
            Some(0) => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// herdr's own claim that `bare` does not exist: its error reply, on stdout, with `error.code` exactly
/// `pane_not_found` and `error.pane` absent or naming this pane.
pub fn says_pane_not_found(stdout: &[u8], bare: &str) -> bool {
    let Ok(reply) = serde_json::from_slice::<Value>(stdout) else { return false };
    text(&reply, &["error", "code"]) == Some("pane_not_found") && text(&reply, &["error", "pane"]).is_none_or(|p| p.is_empty() || p == bare)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bare_pane(id: &str) -> Value {
        json!({"pane_id": id, "agent": "codex", "terminal_id": "t1", "tab_id": "w1:t1", "workspace_id": "w1", "agent_status": "done"})
    }

    #[test]
    fn session_lookup_earns_not_among() {
        let mut with_session = bare_pane("w1:p2");
        with_session["agent_session"] = json!({"value": "sess-1"});
        let list = json!({"result": {"agents": [bare_pane("w1:p1"), with_session]}});
        assert_eq!(pane_for_session(&list, "sess-1"), SessionLookup::Found("w1:p2".into()));
        assert_eq!(pane_for_session(&list, "other"), SessionLookup::NotAmong);
        // A session hidden under a renamed structured key makes the whole list undecidable.
        let mut hidden = bare_pane("w1:p3");
        hidden["future_session"] = json!({"value": "other"});
        let list = json!({"result": {"agents": [bare_pane("w1:p1"), hidden]}});
        assert_eq!(pane_for_session(&list, "other"), SessionLookup::CouldNotAnswer);
        // The session's entry with an unusable pane id cannot be addressed.
        let list = json!({"result": {"agents": [{"pane_id": "bad", "agent_session": {"value": "s"}}]}});
        assert_eq!(pane_for_session(&list, "s"), SessionLookup::CouldNotAnswer);
        assert_eq!(pane_for_session(&json!({"result": {}}), "s"), SessionLookup::CouldNotAnswer);
        assert_eq!(pane_for_session(&json!({"result": {"agents": []}}), "s"), SessionLookup::NotAmong);
    }

    #[test]
    fn presence_is_permissive_to_keep_and_strict_to_delete() {
        let list = json!({"result": {"agents": [bare_pane("w1:p1"), {"pane_id": "w1:p2"}]}});
        assert_eq!(presence(&list, "w1:p2"), Presence::Listed);
        assert_eq!(presence(&list, "w1:p9"), Presence::Undecidable);
        let list = json!({"result": {"agents": [bare_pane("w1:p1")]}});
        assert_eq!(presence(&list, "w1:p9"), Presence::NotListed);
        assert_eq!(presence(&json!({"result": "x"}), "w1:p9"), Presence::Undecidable);
        assert_eq!(presence(&json!([]), "w1:p9"), Presence::NotListed);
    }

    #[test]
    fn arrange_state_reads_geometry() {
        let layout = json!({"result": {"layout": {"tab_id": "w1:t1",
            "panes": [
                {"pane_id": "w1:p1", "rect": {"x": 0, "y": 0, "width": 80, "height": 12}},
                {"pane_id": "w1:p2", "rect": {"x": 0, "y": 12, "width": 80, "height": 12}}
            ],
            "splits": [{"direction": "down", "rect": {"x": 0, "y": 0, "width": 80, "height": 24}}]}}});
        let layout = Layout::of(&layout);
        assert_eq!(arrange_state(&layout, "w1:p2", "w1:p1", "down"), ArrangeState::Unchanged);
        assert_eq!(arrange_state(&layout, "w1:p1", "w1:p2", "down"), ArrangeState::Different);
        assert_eq!(arrange_state(&layout, "w1:p2", "w1:p1", "right"), ArrangeState::Different);
        assert_eq!(arrange_state(&layout, "w1:p9", "w1:p1", "down"), ArrangeState::SourceMissing);
        assert_eq!(arrange_state(&layout, "w1:p1", "w1:p9", "down"), ArrangeState::Unknown);
        assert_eq!(layout.tab, Some("w1:t1"));
    }
}
