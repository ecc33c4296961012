//! agmsg's Stage-2 read-state records (capability `stage2-read-state`), parsed strictly and printed in
//! agmsg's key order: `sync_read_context` (prepare), `sync_read_snapshot` and its frontier and exact
//! records (apply), `sync_read_block` / `sync_read_unblock`.
//!
//! Strict as the rest of sync: one object per line, no key twice at any depth, exactly the record's
//! keys. One exception, because agmsg's engine sends the server's member objects as they came: a
//! member may carry keys besides `member_id` and `name` (its `registrations`), which are not read.

use serde_json::Value;

use super::resync::decimal_le;
use super::{Record, answer_sequence, answer_wire, expect_kind, is_lower_uuid, js, object_line, quoted};

/// The most members, and local agents, a context holds (agmsg's bound).
pub const MEMBERS_MAX: usize = 1000;

/// The most frontier and exact records one read-state page may hold: agmsg's engine sends at most
/// 1,000 items a page; far more is refused rather than held in memory.
pub const PAGE_RECORDS_MAX: usize = 65_536;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub member_id: String,
    pub name: String,
}

/// agmsg's `sync_read_context`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadContext {
    pub min_available_seq: String,
    pub current_seq: String,
    pub members: Vec<Member>,
    pub local_agents: Vec<String>,
}

/// agmsg's `sync_read_frontier`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontier {
    pub member_id: String,
    pub server_seq: String,
}

/// agmsg's `sync_read_exact`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exact {
    pub member_id: String,
    pub wire_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockedReason {
    MemberNameMismatch,
    ReadStateLimitExceeded,
}

impl BlockedReason {
    pub fn word(self) -> &'static str {
        match self {
            BlockedReason::MemberNameMismatch => "member-name-mismatch",
            BlockedReason::ReadStateLimitExceeded => "read-state-limit-exceeded",
        }
    }
}

/// agmsg's `sync_read_blocked`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub member_id: String,
    pub reason: BlockedReason,
}

/// What prepare answers: agmsg prints the frontiers, then the exact reads, then the blocked members.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    pub frontiers: Vec<Frontier>,
    pub exacts: Vec<Exact>,
    pub blocked: Vec<Blocked>,
}

/// A `sync_read_snapshot` and the frontier and exact records after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub min_available_seq: String,
    pub current_seq: String,
    pub frontiers: Vec<Frontier>,
    pub exacts: Vec<Exact>,
}

/// agmsg's `sync_read_apply_result`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadApplyResult {
    pub min_available_seq: Option<String>,
    pub member_count: u32,
}

fn member_id(r: &Record<'_>) -> Result<String, String> {
    let id = r.string("member_id")?;
    if !is_lower_uuid(&id, 7) {
        return Err(format!("{}: \"member_id\" must be a lowercase UUIDv7, not {id:?}", r.kind));
    }
    Ok(id)
}

/// `(min_available_seq, current_seq)`, the floor not above the tip.
fn window(r: &Record<'_>) -> Result<(String, String), String> {
    let (floor, current) = (r.sequence("min_available_seq")?, r.sequence("current_seq")?);
    if !decimal_le(&floor, &current) {
        return Err(format!("{}: min_available_seq {floor} is above current_seq {current}", r.kind));
    }
    Ok((floor, current))
}

/// The one `sync_read_context` record prepare reads.
pub fn parse_context(line: &str) -> Result<ReadContext, String> {
    let (kind, object) = object_line(line)?;
    expect_kind(&kind, "sync_read_context")?;
    let r = Record::new(&kind, &object, &["type", "min_available_seq", "current_seq", "members", "local_agents"], &[])?;
    let (min_available_seq, current_seq) = window(&r)?;
    let list = |key: &str| match r.get(key) {
        Some(Value::Array(items)) if items.len() <= MEMBERS_MAX => Ok(items),
        Some(Value::Array(_)) => Err(format!("sync_read_context: more than {MEMBERS_MAX} {key}")),
        _ => Err(format!("sync_read_context: {key:?} must be an array")),
    };
    let mut members = Vec::new();
    for item in list("members")? {
        let object = item.as_object().ok_or("sync_read_context: a member must be an object")?;
        let names: Vec<&str> = object.keys().map(String::as_str).filter(|k| *k != "member_id" && *k != "name").collect();
        // The server's other member keys pass unread (see the module's documentation).
        let m = Record::new("sync_read_context member", object, &["member_id", "name"], &names)?;
        let name = m.string("name")?;
        if name.is_empty() {
            return Err("sync_read_context: a member's name is empty".into());
        }
        members.push(Member { member_id: member_id(&m)?, name });
    }
    let mut local_agents: Vec<String> = Vec::new();
    for item in list("local_agents")? {
        match item.as_str() {
            Some(a) if !a.is_empty() && !local_agents.iter().any(|seen| seen == a) => local_agents.push(a.to_owned()),
            _ => return Err("sync_read_context: \"local_agents\" must hold distinct non-empty names".into()),
        }
    }
    Ok(ReadContext { min_available_seq, current_seq, members, local_agents })
}

/// apply's records: one `sync_read_snapshot` first, then frontier and exact records for it.
pub fn parse_snapshot(lines: impl IntoIterator<Item = Result<(u64, String), String>>) -> Result<Snapshot, String> {
    let mut snapshot: Option<Snapshot> = None;
    for line in lines {
        let (number, text) = line?;
        let at = |e: String| format!("stdin line {number}: {e}");
        if snapshot.as_ref().is_some_and(|s| s.frontiers.len() + s.exacts.len() >= PAGE_RECORDS_MAX) {
            return Err(at(format!("a read-state page of more than {PAGE_RECORDS_MAX} records")));
        }
        let (kind, object) = object_line(&text).map_err(at)?;
        match (kind.as_str(), snapshot.as_mut()) {
            ("sync_read_snapshot", None) => {
                let r = Record::new(&kind, &object, &["type", "min_available_seq", "current_seq"], &[]).map_err(at)?;
                let (min_available_seq, current_seq) = window(&r).map_err(at)?;
                snapshot = Some(Snapshot { min_available_seq, current_seq, frontiers: Vec::new(), exacts: Vec::new() });
            }
            ("sync_read_snapshot", Some(_)) => return Err(at("a second sync_read_snapshot record".into())),
            ("sync_read_frontier" | "sync_read_exact", None) => return Err(at(format!("a {kind} record before the sync_read_snapshot"))),
            ("sync_read_frontier", Some(s)) => {
                let r = Record::new(&kind, &object, &["type", "member_id", "server_seq"], &[]).map_err(at)?;
                let f = Frontier { member_id: member_id(&r).map_err(at)?, server_seq: r.sequence("server_seq").map_err(at)? };
                if !decimal_le(&f.server_seq, &s.current_seq) {
                    return Err(at(format!("sync_read_frontier: server_seq {} is above current_seq {}", f.server_seq, s.current_seq)));
                }
                s.frontiers.push(f);
            }
            ("sync_read_exact", Some(s)) => {
                let r = Record::new(&kind, &object, &["type", "member_id", "wire_id"], &[]).map_err(at)?;
                s.exacts.push(Exact { member_id: member_id(&r).map_err(at)?, wire_id: r.wire_id("wire_id").map_err(at)? });
            }
            _ => return Err(at(format!("a {kind:?} record in a read-state page"))),
        }
    }
    snapshot.ok_or_else(|| "no sync_read_snapshot record on stdin".into())
}

/// The `sync_read_block` record: its member and the only reason agmsg defines.
pub fn parse_block(line: &str) -> Result<String, String> {
    let (kind, object) = object_line(line)?;
    expect_kind(&kind, "sync_read_block")?;
    let r = Record::new(&kind, &object, &["type", "member_id", "reason"], &[])?;
    if r.string("reason")? != BlockedReason::ReadStateLimitExceeded.word() {
        return Err("sync_read_block: \"reason\" must be \"read-state-limit-exceeded\"".into());
    }
    member_id(&r)
}

/// The `sync_read_unblock` record's member.
pub fn parse_unblock(line: &str) -> Result<String, String> {
    let (kind, object) = object_line(line)?;
    expect_kind(&kind, "sync_read_unblock")?;
    member_id(&Record::new(&kind, &object, &["type", "member_id"], &[])?)
}

fn answer_member(what: &str, id: &str) -> Result<(), String> {
    if is_lower_uuid(id, 7) { Ok(()) } else { Err(format!("{what} {} is not a lowercase UUIDv7", quoted(id))) }
}

/// A driver's prepared state is printed only if every value is the spec's and it is what agmsg's engine
/// takes (`readStateUpdateBatches`): only members asked about, one frontier for each member not
/// blocked, none and no exact read for a blocked one, no block twice, no exact read twice. No bound on
/// the count of exact reads: the relay answers one member's excess with `read-state-limit-exceeded` and
/// the engine blocks that member alone; a bound here would stop the whole team's read state instead
/// (the driver's memory cap bounds what it can hand back).
pub fn check_prepared(p: &Prepared, context: &ReadContext) -> Result<(), String> {
    use std::collections::BTreeSet;
    let known = |id: &str| context.members.iter().any(|m| m.member_id == id);
    let mut blocked = BTreeSet::new();
    for b in &p.blocked {
        answer_member("sync_read_blocked.member_id", &b.member_id)?;
        if !known(&b.member_id) || !blocked.insert(b.member_id.as_str()) {
            return Err(format!("a block for {} (unknown or repeated)", b.member_id));
        }
    }
    let mut framed = BTreeSet::new();
    for f in &p.frontiers {
        answer_member("sync_read_frontier.member_id", &f.member_id)?;
        answer_sequence("sync_read_frontier.server_seq", &f.server_seq)?;
        if !known(&f.member_id) || !framed.insert(f.member_id.as_str()) {
            return Err(format!("a frontier for {} (unknown or repeated)", f.member_id));
        }
        if blocked.contains(f.member_id.as_str()) {
            return Err(format!("a frontier for {}, which it blocked", f.member_id));
        }
    }
    let mut read = BTreeSet::new();
    for x in &p.exacts {
        answer_member("sync_read_exact.member_id", &x.member_id)?;
        answer_wire("sync_read_exact.wire_id", &x.wire_id)?;
        if !known(&x.member_id) {
            return Err(format!("an exact read for unknown member {}", x.member_id));
        }
        if blocked.contains(x.member_id.as_str()) {
            return Err(format!("an exact read for {}, which it blocked", x.member_id));
        }
        if !read.insert((x.member_id.as_str(), x.wire_id.as_str())) {
            return Err(format!("the exact read {} of {} twice", x.wire_id, x.member_id));
        }
    }
    if let Some(m) = context.members.iter().find(|m| !blocked.contains(m.member_id.as_str()) && !framed.contains(m.member_id.as_str())) {
        return Err(format!("no frontier for member {}, which it did not block", m.member_id));
    }
    Ok(())
}

/// A driver's apply result is printed only if it can follow from `page`: the floor of its active
/// members (there are at most [`MEMBERS_MAX`], a context's), none exactly when it has none, and the
/// page's floor max-merged into it, so not below it.
pub fn check_apply_result(r: &ReadApplyResult, page: &Snapshot) -> Result<(), String> {
    if r.member_count as usize > MEMBERS_MAX {
        return Err(format!("sync_read_apply_result.member_count {}, more than a context's {MEMBERS_MAX} members", r.member_count));
    }
    match &r.min_available_seq {
        Some(floor) => {
            answer_sequence("sync_read_apply_result.min_available_seq", floor)?;
            if r.member_count == 0 {
                return Err(format!("sync_read_apply_result.min_available_seq {floor} with no active member"));
            }
            if !decimal_le(&page.min_available_seq, floor) {
                return Err(format!("sync_read_apply_result.min_available_seq {floor}, below the page's {}", page.min_available_seq));
            }
            Ok(())
        }
        None if r.member_count > 0 => Err(format!("sync_read_apply_result.min_available_seq null with {} active members", r.member_count)),
        None => Ok(()),
    }
}

pub fn frontier_line(f: &Frontier) -> String {
    format!("{{\"type\":\"sync_read_frontier\",\"member_id\":{},\"server_seq\":{}}}", js(&f.member_id), js(&f.server_seq))
}

pub fn exact_line(x: &Exact) -> String {
    format!("{{\"type\":\"sync_read_exact\",\"member_id\":{},\"wire_id\":{}}}", js(&x.member_id), js(&x.wire_id))
}

pub fn blocked_line(member_id: &str, reason: BlockedReason) -> String {
    format!("{{\"type\":\"sync_read_blocked\",\"member_id\":{},\"reason\":\"{}\"}}", js(member_id), reason.word())
}

pub fn unblocked_line(member_id: &str) -> String {
    format!("{{\"type\":\"sync_read_unblocked\",\"member_id\":{}}}", js(member_id))
}

pub fn apply_result_line(r: &ReadApplyResult) -> String {
    let floor = r.min_available_seq.as_deref().map(js).unwrap_or_else(|| "null".into());
    format!("{{\"type\":\"sync_read_apply_result\",\"min_available_seq\":{floor},\"member_count\":{}}}", r.member_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "018f3f7e-0000-7000-8000-000000000010";
    const W: &str = "550e8400-e29b-41d4-a716-446655440031";

    fn numbered(lines: &[&str]) -> Vec<Result<(u64, String), String>> {
        lines.iter().enumerate().map(|(i, l)| Ok((i as u64 + 1, (*l).to_owned()))).collect()
    }

    #[test]
    fn a_context_is_exact_but_a_member_keeps_the_servers_other_keys() {
        let line = format!(
            r#"{{"type":"sync_read_context","min_available_seq":"0","current_seq":"2","members":[{{"member_id":"{M}","name":"bob","registrations":[]}}],"local_agents":["bob"]}}"#
        );
        let c = parse_context(&line).unwrap();
        assert_eq!(c.members, vec![Member { member_id: M.into(), name: "bob".into() }]);
        assert!(parse_context(&line.replacen(r#""local_agents""#, r#""extra":1,"local_agents""#, 1)).unwrap_err().contains("unknown key"));
        assert!(parse_context(&line.replacen(r#""name":"bob""#, r#""name":"bob","name":"rob""#, 1)).unwrap_err().contains("duplicate"));
        assert!(parse_context(&line.replacen(r#"["bob"]"#, r#"["bob","bob"]"#, 1)).is_err(), "a repeated local agent");
        assert!(parse_context(&line.replacen(r#""current_seq":"2""#, r#""current_seq":"-1""#, 1)).is_err());
        assert!(parse_context(&line.replacen(r#""min_available_seq":"0""#, r#""min_available_seq":"3""#, 1)).is_err(), "floor above tip");
        assert!(parse_context(&line.replacen(M, "018f3f7e-0000-4000-8000-000000000010", 1)).is_err(), "not a UUIDv7");
    }

    #[test]
    fn a_page_starts_with_one_snapshot_and_holds_only_its_records() {
        let snap = r#"{"type":"sync_read_snapshot","min_available_seq":"0","current_seq":"2"}"#;
        let frontier = format!(r#"{{"type":"sync_read_frontier","member_id":"{M}","server_seq":"2"}}"#);
        let exact = format!(r#"{{"type":"sync_read_exact","member_id":"{M}","wire_id":"{W}"}}"#);
        let s = parse_snapshot(numbered(&[snap, &frontier, &exact])).unwrap();
        assert_eq!((s.frontiers.len(), s.exacts.len()), (1, 1));
        assert!(parse_snapshot(numbered(&[&frontier, snap])).is_err(), "a frontier first");
        assert!(parse_snapshot(numbered(&[snap, snap])).is_err(), "two snapshots");
        assert!(parse_snapshot(numbered(&[])).is_err(), "no snapshot");
        assert!(parse_snapshot(numbered(&[snap, &frontier.replace(r#""2"}"#, r#""3"}"#)])).is_err(), "beyond current_seq");
        assert!(parse_snapshot(numbered(&[snap, r#"{"type":"sync_read_unblock"}"#])).is_err());
        // A page is bounded (agmsg's engine sends at most 1,000 items): an endless one is refused, not held.
        let many: Vec<Result<(u64, String), String>> = std::iter::once(Ok((1, snap.to_owned())))
            .chain((0..PAGE_RECORDS_MAX as u64 + 1).map(|n| Ok((n + 2, frontier.clone()))))
            .collect();
        assert!(parse_snapshot(many).unwrap_err().contains("more than"), "an unbounded page");
        assert!(parse_block(&format!(r#"{{"type":"sync_read_block","member_id":"{M}","reason":"other"}}"#)).is_err());
        assert_eq!(parse_unblock(&format!(r#"{{"type":"sync_read_unblock","member_id":"{M}"}}"#)).unwrap(), M);
    }

    #[test]
    fn printed_read_state_records_keep_agmsgs_key_order() {
        assert_eq!(
            apply_result_line(&ReadApplyResult { min_available_seq: None, member_count: 0 }),
            r#"{"type":"sync_read_apply_result","min_available_seq":null,"member_count":0}"#
        );
        assert_eq!(
            blocked_line(M, BlockedReason::MemberNameMismatch),
            format!(r#"{{"type":"sync_read_blocked","member_id":"{M}","reason":"member-name-mismatch"}}"#)
        );
    }
}
