//! The optional read-back ops: what one pane carries (label, agent key, terminal id, processes), which
//! panes carry a label, and whether herdr sees the expected agent in a pane. Every answer about a pane is
//! read from a reply about that pane; anything unreadable is "could not observe", never a negative.

use agmsg_guest_sdk::terminal::{Answer, TermError};
use serde_json::Value;

use crate::answers::{self, at, rendered, text};
use crate::id::{self, HerdrId};
use crate::run::{herdr, herdr_ok, json_of};
use crate::session;

/// `herdr <args>`, answered and JSON, or unreachable.
fn ask(args: &[&str]) -> Result<Value, TermError> {
    let out = herdr_ok(args, |why| TermError::unreachable(format!("herdr {} {}: {why}", args[0], args[1])))?;
    json_of(&out).ok_or_else(|| TermError::unreachable(format!("herdr {} {}: empty or not JSON", args[0], args[1])))
}

fn breaks_record(field: &str) -> bool {
    field.contains(['\t', '\n', '\r'])
}

/// `<activity>\t<label>\t<key>\t<title>` from `pane get` and `agent list`. The key is decided absent
/// when the list holds the pane without a name, and unknown when the list does not hold the pane.
pub fn team_observe(id: &HerdrId<'_>) -> Result<String, TermError> {
    let pane = ask(&["pane", "get", id.bare])?;
    let agents = ask(&["agent", "list"])?;
    let field = |key: &str, missing: &str| rendered(at(&pane, &["result", "pane", key])).unwrap_or_else(|| missing.to_owned());
    let activity = field("agent_status", "unknown:activity_missing");
    let label = field("label", "unknown:pane_label_missing");
    let title = field("terminal_title", "unknown:terminal_title_missing");
    let entry = at(&agents, &["result", "agents"])
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|e| e.get("pane_id").and_then(Value::as_str) == Some(id.bare)));
    let key = match entry {
        None => "unknown:pane_not_in_agent_list".to_owned(),
        Some(entry) => rendered(entry.get("name")).filter(|n| !n.is_empty()).unwrap_or_else(|| "absent:agent_key_unset".to_owned()),
    };
    if [&activity, &label, &key, &title].iter().any(|f| breaks_record(f)) {
        return Err(TermError::unreachable("herdr: a field would break the TAB-separated record"));
    }
    Ok(format!("{activity}\t{label}\t{key}\t{title}"))
}

/// Ready only when herdr itself recognizes an agent of the `expected` kind in the pane, in one of its
/// interactive states (`idle`, `done`, `working`).
pub fn team_input_ready(id: &HerdrId<'_>, expected: &str) -> Answer {
    let Ok(out) = herdr(&["agent", "get", id.bare]) else { return Answer::Unknown };
    if !out.success() {
        return if out.stdout_text().contains("agent_not_found") { Answer::No } else { Answer::Unknown };
    }
    let Some(reply) = json_of(&out) else { return Answer::Unknown };
    let (kind, status) = (text(&reply, &["result", "agent", "agent"]), text(&reply, &["result", "agent", "agent_status"]));
    match (kind.filter(|k| !k.is_empty()), status.filter(|s| !s.is_empty())) {
        (Some(kind), Some(status)) if kind == expected && matches!(status, "idle" | "done" | "working") => Answer::Yes,
        (Some(_), Some(_)) => Answer::No,
        _ => Answer::Unknown,
    }
}

/// Every pane of this instance (`pane list`) whose label is exactly `label`, as qualified ids; a row
/// that is not a pane id of the grammar is no answer and is left out.
pub fn find_by_label(socket: &str, label: &str) -> Result<Vec<String>, TermError> {
    let out = herdr_ok(&["pane", "list"], |why| TermError::unreachable(format!("herdr pane list: {why}")))?;
    if out.truncated {
        return Err(TermError::unreachable("herdr: the pane listing was cut by the host's output cap"));
    }
    let listing = json_of(&out).ok_or_else(|| TermError::unreachable("herdr pane list: empty or not JSON"))?;
    let panes = at(&listing, &["result", "panes"]).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    Ok(panes
        .iter()
        .filter(|p| p.get("label").and_then(Value::as_str) == Some(label))
        .filter_map(|p| p.get("pane_id").and_then(Value::as_str))
        .filter(|p| id::bare_ok(p))
        .map(|p| id::qualify(socket, p))
        .collect())
}

/// The label one pane carries (`pane get`); empty when it carries none (agmsg's exit 1, which this op's
/// result type cannot carry).
pub fn label_of(id: &HerdrId<'_>) -> Result<String, TermError> {
    let pane = ask(&["pane", "get", id.bare])?;
    let label = rendered(at(&pane, &["result", "pane", "label"])).unwrap_or_default();
    // A name never holds a control character, so such a label can match no member; refuse to print it.
    if label.chars().any(char::is_control) {
        return Err(TermError::unreachable("herdr: the pane's label holds control characters"));
    }
    Ok(label)
}

/// `<instance>\t<terminal_id>`: the socket the id carries (else the ambient one) and herdr's own
/// terminal id, which changes across a herdr restart. A preflight check before a self-write.
pub fn fence(raw: &str) -> Result<String, TermError> {
    let parsed = id::parse(raw);
    let instance = match parsed.and_then(|p| p.socket).map(str::to_owned).or_else(session::ambient_socket) {
        None => "unknown:no_socket_in_env".to_owned(),
        Some(sock) if sock.chars().any(char::is_control) => "unknown:socket_path_malformed".to_owned(),
        Some(sock) => sock,
    };
    let unknown = |reason: &str| TermError::unreachable(format!("{instance}\tunknown:{reason}"));
    let Some(parsed) = parsed else { return Err(unknown("invalid_pane_id")) };
    if !agmsg_guest_sdk::process::available("herdr") {
        return Err(unknown("terminal_unreachable"));
    }
    let _route = crate::run::reach(&parsed);
    let pane = ask(&["pane", "get", parsed.bare]).map_err(|_| unknown("pane_query_failed"))?;
    let terminal = text(&pane, &["result", "pane", "terminal_id"]).unwrap_or_default();
    if terminal.is_empty() {
        return Err(unknown("terminal_id_missing"));
    }
    if terminal.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(unknown("terminal_id_malformed"));
    }
    if instance.starts_with("unknown:") {
        return Err(TermError::unreachable(format!("{instance}\t{terminal}")));
    }
    Ok(format!("{instance}\t{terminal}"))
}

/// One record, `<id>\t<pid>...`: the shell, the foreground process group and each foreground process,
/// each once. The reply must be about this pane, and one unreadable element fails the whole observation
/// (a partial set would read as complete).
pub fn pane_process(raw: &str, id: &HerdrId<'_>) -> Result<String, TermError> {
    let info = ask(&["pane", "process-info", "--pane", id.bare])?;
    let unreadable = |what: &str| TermError::unreachable(format!("herdr pane process-info: {what}"));
    let facts = at(&info, &["result", "process_info"]).ok_or_else(|| unreadable("no process_info"))?;
    if facts.get("pane_id").and_then(Value::as_str) != Some(id.bare) {
        return Err(unreadable("the reply is about another pane, or none"));
    }
    let mut pids: Vec<u64> = Vec::new();
    let mut add = |pid: Option<u64>| -> Result<(), TermError> {
        let pid = pid.ok_or_else(|| unreadable("a pid that is not a positive integer"))?;
        if !pids.contains(&pid) {
            pids.push(pid);
        }
        Ok(())
    };
    add(answers::pid(facts.get("shell_pid")))?;
    add(answers::pid(facts.get("foreground_process_group_id")))?;
    let foreground = facts.get("foreground_processes").and_then(Value::as_array);
    let foreground = foreground.ok_or_else(|| unreadable("no foreground_processes array"))?;
    for process in foreground {
        add(answers::pid(process.get("pid")))?;
    }
    Ok(pids.iter().fold(raw.to_owned(), |record, pid| format!("{record}\t{pid}")))
}
