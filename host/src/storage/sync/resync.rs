//! agmsg's retention-gap resync records (capability `stage1-resync`): `sync_resync` in, parsed strictly
//! (exactly its keys, none twice, one record), and `sync_resync_status` / `sync_resync_result` out in
//! agmsg's key order.

use super::{Record, answer_generation, answer_sequence, expect_kind, is_sequence, js, object_line};

/// The one reason agmsg records for an accepted gap.
pub const REASON: &str = "retention-gap-accepted";

/// An accepted gap: `gap_start` (the expected cursor + 1) to `gap_end` (the accepted floor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResyncAudit {
    pub expected_transport_cursor: String,
    pub accepted_floor: String,
    pub gap_start: String,
    pub gap_end: String,
    pub reason: String,
}

/// agmsg's `sync_resync_status` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResyncReport {
    pub driver_generation: String,
    pub transport_cursor: String,
    pub audit: Option<ResyncAudit>,
}

/// agmsg's `sync_resync` record (its reason is always [`REASON`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResyncRequest {
    pub expected_transport_cursor: String,
    pub min_available_seq: String,
    pub current_seq: String,
}

/// agmsg's `sync_resync_result`: the generation and the audit recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResyncResult {
    pub driver_generation: String,
    pub audit: ResyncAudit,
}

/// `a <= b` for canonical decimals.
pub(crate) fn decimal_le(a: &str, b: &str) -> bool {
    (a.len(), a) <= (b.len(), b)
}

/// The `sync_resync` record: exactly its five keys, `expected < min_available_seq <= current`.
pub fn parse_resync(line: &str) -> Result<ResyncRequest, String> {
    let (kind, object) = object_line(line)?;
    expect_kind(&kind, "sync_resync")?;
    let r = Record::new(&kind, &object, &["type", "expected_transport_cursor", "min_available_seq", "current_seq", "reason"], &[])?;
    if r.string("reason")? != REASON {
        return Err(format!("sync_resync: \"reason\" must be {REASON:?}"));
    }
    let request = ResyncRequest {
        expected_transport_cursor: r.sequence("expected_transport_cursor")?,
        min_available_seq: r.sequence("min_available_seq")?,
        current_seq: r.sequence("current_seq")?,
    };
    if decimal_le(&request.min_available_seq, &request.expected_transport_cursor) {
        return Err("sync_resync: min_available_seq must be above expected_transport_cursor".into());
    }
    if !decimal_le(&request.min_available_seq, &request.current_seq) {
        return Err("sync_resync: min_available_seq must not be above current_seq".into());
    }
    Ok(request)
}

/// The accepted floor of `resync-status`'s argv.
pub fn parse_floor(text: &str) -> Result<String, String> {
    if is_sequence(text) {
        Ok(text.to_owned())
    } else {
        Err(format!("accepted floor {text:?} is not a canonical decimal no greater than 2^63-1"))
    }
}

/// An audit as agmsg's engine takes it (`validateResyncAudit`): canonical sequences, the gap from the
/// expected cursor + 1 to the accepted floor, that floor above the expected cursor and not above the
/// binding's transport cursor `cursor`, agmsg's one reason.
fn check_audit(what: &str, a: &ResyncAudit, cursor: &str) -> Result<(), String> {
    for (key, value) in [
        ("expected_transport_cursor", &a.expected_transport_cursor),
        ("accepted_floor", &a.accepted_floor),
        ("gap_start", &a.gap_start),
        ("gap_end", &a.gap_end),
    ] {
        answer_sequence(&format!("{what}.{key}"), value)?;
    }
    if a.reason != REASON {
        return Err(format!("{what}.reason {:?}", a.reason.chars().take(64).collect::<String>()));
    }
    // Canonical decimals up to 2^63-1: the + 1 fits a u64.
    let expected: u64 = a.expected_transport_cursor.parse().map_err(|_| format!("{what}: an unreadable expected cursor"))?;
    if a.gap_start != (expected + 1).to_string() || a.gap_end != a.accepted_floor {
        return Err(format!("{what}: a gap {}..{} that is not the expected cursor + 1 to the accepted floor", a.gap_start, a.gap_end));
    }
    if decimal_le(&a.accepted_floor, &a.expected_transport_cursor) || !decimal_le(&a.accepted_floor, cursor) {
        return Err(format!(
            "{what}: accepted floor {} not above the expected cursor {} or above the transport cursor {cursor}",
            a.accepted_floor, a.expected_transport_cursor
        ));
    }
    Ok(())
}

/// A driver's status is printed only if its values are the spec's, and its audit the floor asked about.
pub fn check_report(r: &ResyncReport, floor: &str) -> Result<(), String> {
    answer_generation("sync_resync_status.driver_generation", &r.driver_generation)?;
    answer_sequence("sync_resync_status.transport_cursor", &r.transport_cursor)?;
    match &r.audit {
        Some(a) if a.accepted_floor != floor => Err(format!("an audit of floor {} for floor {floor}", super::quoted(&a.accepted_floor))),
        Some(a) => check_audit("sync_resync_status.audit", a, &r.transport_cursor),
        None => Ok(()),
    }
}

/// A driver's result is printed only if it records the gap it was asked to accept (its transport
/// cursor, printed, is that floor).
pub fn check_result(r: &ResyncResult, asked: &ResyncRequest) -> Result<(), String> {
    answer_generation("sync_resync_result.driver_generation", &r.driver_generation)?;
    check_audit("sync_resync_result", &r.audit, &r.audit.accepted_floor)?;
    if r.audit.accepted_floor != asked.min_available_seq || r.audit.expected_transport_cursor != asked.expected_transport_cursor {
        return Err("a resync result for another gap than the one asked".into());
    }
    Ok(())
}

fn audit_json(a: &ResyncAudit) -> String {
    format!(
        "{{\"expected_transport_cursor\":{},\"accepted_floor\":{},\"gap_start\":{},\"gap_end\":{},\"reason\":{}}}",
        js(&a.expected_transport_cursor),
        js(&a.accepted_floor),
        js(&a.gap_start),
        js(&a.gap_end),
        js(&a.reason)
    )
}

pub fn status_line(r: &ResyncReport) -> String {
    format!(
        "{{\"type\":\"sync_resync_status\",\"driver_generation\":{},\"transport_cursor\":{},\"audit\":{}}}",
        js(&r.driver_generation),
        js(&r.transport_cursor),
        r.audit.as_ref().map(audit_json).unwrap_or_else(|| "null".into())
    )
}

/// The result's transport cursor is the accepted floor (agmsg prints both).
pub fn result_line(r: &ResyncResult) -> String {
    let a = &r.audit;
    format!(
        "{{\"type\":\"sync_resync_result\",\"driver_generation\":{},\"expected_transport_cursor\":{},\"transport_cursor\":{},\"accepted_floor\":{},\"gap_start\":{},\"gap_end\":{},\"reason\":{}}}",
        js(&r.driver_generation),
        js(&a.expected_transport_cursor),
        js(&a.accepted_floor),
        js(&a.accepted_floor),
        js(&a.gap_start),
        js(&a.gap_end),
        js(&a.reason)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"type":"sync_resync","expected_transport_cursor":"0","min_available_seq":"5","current_seq":"7","reason":"retention-gap-accepted"}"#;

    #[test]
    fn a_resync_record_is_exact_and_ordered() {
        assert_eq!(parse_resync(LINE).unwrap().min_available_seq, "5");
        let twice = LINE.replacen(r#""min_available_seq":"5""#, r#""min_available_seq":"4","min_available_seq":"5""#, 1);
        assert!(parse_resync(&twice).unwrap_err().contains("duplicate key"));
        assert!(parse_resync(&LINE.replacen(r#""reason""#, r#""extra":1,"reason""#, 1)).unwrap_err().contains("unknown key"));
        assert!(parse_resync(&LINE.replacen("retention-gap-accepted", "because", 1)).is_err());
        for (expected, floor, current) in [("5", "5", "7"), ("6", "5", "7"), ("0", "8", "7"), ("0", "05", "7")] {
            let line = LINE
                .replacen(r#""expected_transport_cursor":"0""#, &format!(r#""expected_transport_cursor":"{expected}""#), 1)
                .replacen(r#""min_available_seq":"5""#, &format!(r#""min_available_seq":"{floor}""#), 1)
                .replacen(r#""current_seq":"7""#, &format!(r#""current_seq":"{current}""#), 1);
            assert!(parse_resync(&line).is_err(), "{line}");
        }
        assert!(parse_resync(&format!("{LINE} {LINE}")).is_err());
    }

    #[test]
    fn printed_resync_records_keep_agmsgs_key_order() {
        let audit = ResyncAudit {
            expected_transport_cursor: "0".into(),
            accepted_floor: "5".into(),
            gap_start: "1".into(),
            gap_end: "5".into(),
            reason: REASON.into(),
        };
        let report = ResyncReport { driver_generation: "g".into(), transport_cursor: "5".into(), audit: Some(audit.clone()) };
        assert_eq!(
            status_line(&report),
            r#"{"type":"sync_resync_status","driver_generation":"g","transport_cursor":"5","audit":{"expected_transport_cursor":"0","accepted_floor":"5","gap_start":"1","gap_end":"5","reason":"retention-gap-accepted"}}"#
        );
        assert_eq!(
            result_line(&ResyncResult { driver_generation: "g".into(), audit }),
            r#"{"type":"sync_resync_result","driver_generation":"g","expected_transport_cursor":"0","transport_cursor":"5","accepted_floor":"5","gap_start":"1","gap_end":"5","reason":"retention-gap-accepted"}"#
        );
        assert!(check_report(&report, "6").is_err(), "an audit of another floor");
    }
}
