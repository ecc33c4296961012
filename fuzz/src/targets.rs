//! The fuzz targets' checks (issue 39): one function per parser of outside bytes, each taking the
//! fuzzer's bytes and asserting the parser's properties. A panic is a finding: a parser that panics, a
//! property that does not hold (a print-then-parse round trip that does not give the value back, an
//! accepted value a check should have refused), or, through [`run`], an input that allocates past its
//! bound. No parser may hang: scripts/fuzz gives libFuzzer a 2 s timeout, and the replay a deadline.
//!
//! Used twice: by the libFuzzer binaries in `fuzz_targets/` (scripts/fuzz, through the crate root
//! src/lib.rs), and, as a module, by
//! `tests/fuzz_replay.rs`, a host test that replays every kept corpus on the stable toolchain in CI. So
//! this file names only crates the host's tests link (agmsg_host, agmsg_contract, agmsg_sync_seal,
//! serde_json) and has no crate-level attributes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use agmsg_host::storage::records;
use agmsg_host::storage::sync::{self, read_state, resync};
use serde_json::Value;

/// A fuzz target: one input in, a panic when a property breaks.
pub type Target = fn(&[u8]);

/// Every target, by the name of its binary and of its corpus directory (`fuzz/corpus/<name>`).
pub const TARGETS: &[(&str, Target)] = &[
    ("sync_prepare", sync_prepare),
    ("sync_ack", sync_ack),
    ("sync_pull", sync_pull),
    ("sync_read_state", sync_read_state),
    ("sync_resync", sync_resync),
    ("sync_answers", sync_answers),
    ("import", import),
    ("shell_words", shell_words),
    ("type_conf", type_conf),
    ("terminal_conf", terminal_conf),
    ("driver_manifest", driver_manifest),
    ("trust_file", trust_file),
    ("age_header", age_header),
    ("seal", seal),
    ("plug_lines", plug_lines),
    ("placement", placement),
    ("agmsg_config", agmsg_config),
    ("team_config", team_config),
    ("delivery_files", delivery_files),
    ("describe_watch", describe_watch),
    ("codex_bridge", codex_bridge),
];

/// The targets whose checks live in a driver (the jsonl driver's src/fuzz_check/, the sqlite driver's
/// src/fuzz_check.rs), replayed by that driver's unit tests rather than by tests/fuzz_replay.rs.
pub const DRIVER_TARGETS: &[&str] = &["jsonl_line", "jsonl_cursors", "jsonl_journal", "jsonl_index", "jsonl_catch_up", "sqlite_store"];

// ---- the allocation bound ----

/// The most one input may hold allocated at once: a fixed allowance plus a multiple of its size (a
/// JSON tree of small values takes some tens of bytes per input byte). More is a finding: a parser
/// that lets a small input make it allocate much (a length it trusts, a quadratic copy).
pub fn allocation_bound(input_len: usize) -> usize {
    (16 << 20) + 128 * input_len
}

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, counting each thread's live bytes and their peak (for [`run`]). The fuzz
/// binaries and the replay test install it as their global allocator.
pub struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        shrank(layout.size());
        grew(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn grew(size: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(size);
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn shrank(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().wrapping_sub(size)));
}

/// Run `target` on `data` and check that this thread's allocations stayed within
/// [`allocation_bound`] (when [`Counting`] is the global allocator; else nothing is counted).
pub fn run(target: fn(&[u8]), data: &[u8]) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    target(data);
    let peak = PEAK.with(Cell::get).saturating_sub(base);
    assert!(peak <= allocation_bound(data.len()), "{peak} bytes allocated at once for an input of {} bytes", data.len());
}

// ---- reading structured values from the fuzzer's bytes ----

/// The fuzzer's bytes read as a sequence of choices (each read takes from the front; an exhausted
/// input reads as zeros), for the targets whose input is a value a driver hands back.
pub struct Src<'a>(&'a [u8]);

impl<'a> Src<'a> {
    pub fn new(data: &'a [u8]) -> Src<'a> {
        Src(data)
    }
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    /// What is left of the input, all of it.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    pub fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }
    pub fn u64(&mut self) -> u64 {
        let mut n = 0u64;
        for _ in 0..8 {
            n = n << 8 | u64::from(self.byte());
        }
        n
    }
    pub fn bytes(&mut self) -> &'a [u8] {
        let n = usize::from(self.byte()).min(self.0.len());
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        taken
    }
    pub fn text(&mut self) -> String {
        String::from_utf8_lossy(self.bytes()).into_owned()
    }
    pub fn pick<T: Clone>(&mut self, options: &[T]) -> T {
        options[usize::from(self.byte()) % options.len()].clone()
    }
    /// Mostly a canonical decimal (small, or any up to 2^63-1), sometimes any text.
    pub fn sequence(&mut self) -> String {
        match self.byte() % 4 {
            0 => self.text(),
            1 => (self.u64() >> 1).to_string(),
            _ => u64::from(self.byte() % 16).to_string(),
        }
    }
    /// Mostly a lowercase UUID of `version` from a few seeds (so that two values meet), sometimes any text.
    pub fn uuid(&mut self, version: u8) -> String {
        match self.byte() % 4 {
            0 => self.text(),
            n => {
                let seed = self.byte() % 8;
                let text = format!("{seed:08x}-0000-{version}000-8000-{:012x}", u64::from(n) * 7);
                if n == 3 { text.to_uppercase() } else { text }
            }
        }
    }
}

/// Standard padded base64 (what agmsg writes), for blobs that must be accepted.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]) } else { '=' });
        }
    }
    out
}

/// `data` as lines of text (lossily UTF-8), as a JSONL reader meets them.
fn lines(data: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(data).lines().map(str::to_owned).collect()
}

/// A printed record is one JSON object on one line; its object.
fn printed(line: &str) -> serde_json::Map<String, Value> {
    assert!(!line.contains('\n') && !line.contains('\r'), "a printed record spans lines: {line:?}");
    match serde_json::from_str(line) {
        Ok(Value::Object(o)) => o,
        other => panic!("a printed record is not a JSON object: {line:?} ({other:?})"),
    }
}

fn field<'m>(o: &'m serde_json::Map<String, Value>, key: &str) -> &'m Value {
    o.get(key).unwrap_or_else(|| panic!("no {key:?} in {o:?}"))
}

// ---- sync records on stdin (agmsg's remote-sync engine writes them) ----

/// `sync-prepare`'s stdin: `parse_prepare` on each line (the strict JSON reader under it).
pub fn sync_prepare(data: &[u8]) {
    for line in lines(data) {
        if let Ok(r) = sync::parse_prepare(&line) {
            // What was accepted is what the line says.
            let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&line) else {
                panic!("accepted a line that is not an object: {line:?}")
            };
            assert_eq!(o.get("max_blob_bytes").and_then(Value::as_u64), Some(r.max_blob_bytes));
            assert_eq!(o.get("allow_new").and_then(Value::as_bool), Some(r.allow_new));
            if let sync::WriteProfile::AgeV1 { recipients, .. } = &r.profile {
                assert!(!recipients.is_empty());
            }
        }
    }
}

/// `reconcile-push`'s stdin: `parse_ack` on each line, and the values it read are the spec's.
pub fn sync_ack(data: &[u8]) {
    for line in lines(data) {
        if let Ok(ack) = sync::parse_ack(&line) {
            assert!(sync::is_sequence(&ack.server_seq), "{ack:?}");
            assert!(sync::is_lower_uuid(&ack.wire_id, 4), "{ack:?}");
            assert_eq!(sync::parse_position(&ack.local_position.to_string()), Some(ack.local_position));
        }
    }
}

/// `apply-pull`'s stdin: `parse_pull_line` on each line, noted into the page the host checks the
/// driver's answer against; and the small value parsers (page keys, positions, scopes) on each line.
pub fn sync_pull(data: &[u8]) {
    let mut page = sync::PageSent::default();
    for line in lines(data) {
        if let Ok(pulled) = sync::parse_pull_line(&line) {
            if let sync::PullLine::Message(m) = &pulled {
                assert!(sync::is_sequence(&m.server_seq) && sync::is_lower_uuid(&m.wire_id, 4), "{m:?}");
                if m.status == sync::Evaluated::Importable {
                    assert!(m.projection.is_some(), "an importable message without a projection: {line:?}");
                }
            }
            page.note(&pulled);
        }
        if let Ok(key) = sync::parse_page_key(&line) {
            assert_eq!(format!("{}:{}", key.server_seq, key.wire_id), line);
        }
        if let Some(p) = sync::parse_position(&line) {
            assert_eq!(p.to_string(), line, "a position is canonical");
        }
        let _ = sync::parse_scope(&line);
    }
    assert_eq!(page.count, page.messages.values().map(|v| v.len() as u64).sum::<u64>());
}

/// Stage-2 read state's stdin: the context line, a snapshot page, block and unblock lines.
pub fn sync_read_state(data: &[u8]) {
    let all = lines(data);
    for line in &all {
        if let Ok(c) = read_state::parse_context(line) {
            assert!(c.members.len() <= read_state::MEMBERS_MAX && c.local_agents.len() <= read_state::MEMBERS_MAX);
            assert!(c.min_available_seq.len() <= c.current_seq.len());
        }
        if let Ok(id) = read_state::parse_block(line) {
            assert!(sync::is_lower_uuid(&id, 7));
        }
        if let Ok(id) = read_state::parse_unblock(line) {
            assert!(sync::is_lower_uuid(&id, 7));
        }
    }
    let numbered = all.into_iter().enumerate().map(|(i, l)| Ok((i as u64 + 1, l)));
    if let Ok(s) = read_state::parse_snapshot(numbered) {
        assert!(s.frontiers.len() + s.exacts.len() <= read_state::PAGE_RECORDS_MAX);
        for f in &s.frontiers {
            assert!((f.server_seq.len(), &f.server_seq) <= (s.current_seq.len(), &s.current_seq), "{f:?} above {s:?}");
        }
    }
}

/// Resync's stdin (`sync_resync`) and its floor argument.
pub fn sync_resync(data: &[u8]) {
    for line in lines(data) {
        if let Ok(r) = resync::parse_resync(&line) {
            let n = |s: &str| s.parse::<u64>().expect("a sequence reads as a number");
            assert!(n(&r.expected_transport_cursor) < n(&r.min_available_seq), "{r:?}");
            assert!(n(&r.min_available_seq) <= n(&r.current_seq), "{r:?}");
        }
        if let Ok(floor) = resync::parse_floor(&line) {
            assert_eq!(floor, line);
        }
    }
}

/// What a driver hands back to the host's sync ops, built from the fuzzer's bytes: the host's checks
/// (`check_candidate`, `check_apply_result`, reprocess, resync, read state) never panic, accept an
/// envelope agmsg would write, and every record they let through prints as one line of JSON that
/// reads back as the value.
pub fn sync_answers(data: &[u8]) {
    let mut s = Src::new(data);
    // sync_state
    let version = if s.bool() { 4 } else { 7 };
    let state = sync::SyncState { driver_generation: s.uuid(version), transport_cursor: s.sequence() };
    if sync::check_state(&state).is_ok() {
        let o = printed(&sync::state_line(&state));
        assert_eq!(field(&o, "driver_generation").as_str(), Some(state.driver_generation.as_str()));
        assert_eq!(field(&o, "transport_cursor").as_str(), Some(state.transport_cursor.as_str()));
    }
    // prepare's candidates, against the request they answer
    let age = s.bool();
    let request = sync::PrepareRequest {
        envelope_v: s.pick(&[1, 1, 2, u32::MAX]),
        profile: if age {
            sync::WriteProfile::AgeV1 { key_id: "k1".into(), recipients: vec!["age1x".into()] }
        } else {
            sync::WriteProfile::None
        },
        max_blob_bytes: s.pick(&[1, 64, 1 << 20, u64::MAX]),
        allow_new: s.bool(),
    };
    for _ in 0..1 + s.byte() % 4 {
        let cipher = s.pick(&["none", "age-v1", "", "AGE-V1"]).to_owned();
        let key_id = match s.byte() % 4 {
            0 => None,
            1 => Some("k1".to_owned()),
            2 => Some(s.text()),
            _ => Some("a".repeat(usize::from(s.byte()))),
        };
        let payload = s.bytes();
        let blob = match s.byte() % 4 {
            0 => s.text(),
            1 => base64(&[b"age-encryption.org/v1\n".as_slice(), payload].concat()),
            _ => base64(payload),
        };
        let c = sync::PushCandidate {
            local_position: s.u64() as i64,
            local_id: if s.bool() { s.text() } else { "m1".into() },
            wire_id: s.uuid(4),
            envelope: sync::Envelope { v: s.pick(&[1, 2]), cipher, key_id, blob },
        };
        let verdict = sync::check_candidate(&c, &request);
        let agmsg_writes = c.envelope.v == request.envelope_v
            && c.envelope.cipher == "none"
            && c.envelope.key_id.is_none()
            && !age
            && c.envelope.blob == base64(payload)
            && (1..=request.max_blob_bytes).contains(&(payload.len() as u64))
            && sync::is_lower_uuid(&c.wire_id, 4)
            && agmsg_contract::is_transport_token(&c.local_id);
        if agmsg_writes {
            assert!(verdict.is_ok(), "refused an envelope agmsg writes: {c:?}: {verdict:?}");
        }
        if verdict.is_ok() {
            let o = printed(&sync::candidate_line(&c));
            assert_eq!(field(&o, "local_position").as_str(), Some(c.local_position.to_string().as_str()));
            assert_eq!(field(&o, "local_id").as_str(), Some(c.local_id.as_str()));
            assert_eq!(field(&o, "id").as_str(), Some(c.wire_id.as_str()));
            let e = field(&o, "envelope");
            assert_eq!(e["blob"].as_str(), Some(c.envelope.blob.as_str()));
            assert_eq!(e["key_id"].as_str(), c.envelope.key_id.as_deref());
        }
    }
    // apply-pull's answer, against the page it answers
    let statuses = [
        sync::Evaluated::Importable,
        sync::Evaluated::UnsupportedCipher,
        sync::Evaluated::PendingKey,
        sync::Evaluated::AuthenticationFailed,
        sync::Evaluated::Malformed,
        sync::Evaluated::PolicyViolation,
    ];
    let mut sent = sync::PageSent::default();
    let mut pairs = Vec::new();
    for _ in 0..s.byte() % 6 {
        let (wire, seq, status) = (s.uuid(4), s.sequence(), s.pick(&statuses));
        sent.messages.entry(wire.clone()).or_default().push((seq.clone(), status));
        sent.count += 1;
        pairs.push((wire, seq, status));
    }
    sent.next_after = if s.bool() { Some(s.sequence()) } else { None };
    let mut outcomes = Vec::new();
    for _ in 0..s.byte() % 8 {
        let status = match s.byte() % 5 {
            0 => sync::OutcomeStatus::Imported,
            1 => sync::OutcomeStatus::Reconciled,
            2 => sync::OutcomeStatus::CorruptState,
            _ => sync::OutcomeStatus::Evaluated(s.pick(&statuses)),
        };
        let (wire_id, server_seq) = match (pairs.is_empty(), s.byte() % 3) {
            (false, 0 | 1) => {
                let (w, q, _) = s.pick(&pairs);
                (w, q)
            }
            _ => (s.uuid(4), s.sequence()),
        };
        outcomes.push(sync::Outcome { wire_id, server_seq, status });
    }
    let result = sync::ApplyResult {
        transport_cursor: if s.bool() { sent.next_after.clone().unwrap_or_default() } else { s.sequence() },
        corrupt_count: s.pick(&[0, 1, (1 << 53) - 1, 1 << 53, u64::MAX]),
        outcomes,
    };
    if sync::check_apply_result(&result, &sent).is_ok() {
        // Every message of the page is answered, and each outcome is for one of them.
        for (wire, _, _) in &pairs {
            assert!(result.outcomes.iter().any(|o| &o.wire_id == wire), "{wire} unanswered: {result:?}");
        }
        for o in &result.outcomes {
            assert!(sent.messages.contains_key(&o.wire_id));
            let p = printed(&sync::outcome_line(o));
            assert_eq!(field(&p, "id").as_str(), Some(o.wire_id.as_str()));
            assert_eq!(field(&p, "status").as_str(), Some(o.status.word()));
        }
        let p = printed(&sync::apply_result_line(&result));
        assert_eq!(field(&p, "corrupt_count").as_u64(), Some(result.corrupt_count));
    }
    // reprocess
    let candidate = sync::ReprocessCandidate {
        server_seq: s.sequence(),
        wire_id: s.uuid(4),
        server_received_at: s.text(),
        envelope: sync::Envelope { v: 1, cipher: s.text(), key_id: if s.bool() { Some(s.text()) } else { None }, blob: s.text() },
        prior_status: s.pick(&statuses),
    };
    let scope = if s.bool() { sync::ReprocessScope::Malformed } else { sync::ReprocessScope::Recoverable };
    if sync::check_reprocess_candidate(&candidate, scope).is_ok() {
        let o = printed(&sync::reprocess_candidate_line(&candidate));
        assert_eq!(field(&o, "server_received_at").as_str(), Some(candidate.server_received_at.as_str()));
        assert_eq!(field(&o, "envelope")["cipher"].as_str(), Some(candidate.envelope.cipher.as_str()));
    }
    let next_after = if s.bool() { Some(sync::PageKey { server_seq: s.sequence(), wire_id: s.uuid(4) }) } else { None };
    let page = sync::ReprocessPage { state: state.clone(), next_after, has_more: s.bool() };
    if sync::check_reprocess_page(&page).is_ok() {
        let o = printed(&sync::reprocess_page_line(&page));
        match (&page.next_after, field(&o, "next_after").as_str()) {
            (Some(k), Some(text)) => {
                let back = sync::parse_page_key(text).expect("a printed page key reads back");
                assert_eq!(&back, k);
            }
            (None, None) => {}
            (k, text) => panic!("next_after {k:?} printed as {text:?}"),
        }
    }
    // resync
    let audit = |s: &mut Src<'_>| resync::ResyncAudit {
        expected_transport_cursor: s.sequence(),
        accepted_floor: s.sequence(),
        gap_start: s.sequence(),
        gap_end: s.sequence(),
        reason: if s.bool() { resync::REASON.to_owned() } else { s.text() },
    };
    let report = resync::ResyncReport {
        driver_generation: s.uuid(4),
        transport_cursor: s.sequence(),
        audit: if s.bool() { Some(audit(&mut s)) } else { None },
    };
    let _ = resync::check_report(&report, &s.sequence());
    let asked =
        resync::ResyncRequest { expected_transport_cursor: s.sequence(), min_available_seq: s.sequence(), current_seq: s.sequence() };
    let answer = resync::ResyncResult { driver_generation: s.uuid(7), audit: audit(&mut s) };
    if resync::check_result(&answer, &asked).is_ok() {
        let n = |t: &str| t.parse::<u64>().unwrap();
        assert_eq!(n(&answer.audit.gap_start), n(&answer.audit.expected_transport_cursor) + 1);
        assert_eq!(answer.audit.accepted_floor, asked.min_available_seq);
    }
    // read state
    let members: Vec<read_state::Member> = (0..s.byte() % 4).map(|_| read_state::Member { member_id: s.uuid(7), name: s.text() }).collect();
    let context = read_state::ReadContext {
        min_available_seq: s.sequence(),
        current_seq: s.sequence(),
        members: members.clone(),
        local_agents: (0..s.byte() % 3).map(|_| s.text()).collect(),
    };
    let mut prepared = read_state::Prepared::default();
    for _ in 0..s.byte() % 6 {
        let member_id = if !members.is_empty() && s.bool() { s.pick(&members).member_id } else { s.uuid(7) };
        match s.byte() % 3 {
            0 => prepared.frontiers.push(read_state::Frontier { member_id, server_seq: s.sequence() }),
            1 => prepared.exacts.push(read_state::Exact { member_id, wire_id: s.uuid(4) }),
            _ => prepared.blocked.push(read_state::Blocked {
                member_id,
                reason: if s.bool() {
                    read_state::BlockedReason::MemberNameMismatch
                } else {
                    read_state::BlockedReason::ReadStateLimitExceeded
                },
            }),
        }
    }
    if read_state::check_prepared(&prepared, &context).is_ok() {
        for f in &prepared.frontiers {
            let o = printed(&read_state::frontier_line(f));
            assert_eq!(field(&o, "member_id").as_str(), Some(f.member_id.as_str()));
        }
        for x in &prepared.exacts {
            let o = printed(&read_state::exact_line(x));
            assert_eq!(field(&o, "wire_id").as_str(), Some(x.wire_id.as_str()));
        }
    }
    let snapshot = read_state::Snapshot {
        min_available_seq: s.sequence(),
        current_seq: s.sequence(),
        frontiers: prepared.frontiers.clone(),
        exacts: prepared.exacts.clone(),
    };
    let applied =
        read_state::ReadApplyResult { min_available_seq: if s.bool() { Some(s.sequence()) } else { None }, member_count: s.byte().into() };
    if read_state::check_apply_result(&applied, &snapshot).is_ok() {
        printed(&read_state::apply_result_line(&applied));
    }
}

// ---- import logs and records ----

/// `import`'s stdin (an agmsg JSONL log): `scan_import` never panics; every event it gives meets the
/// export rule; and the round trip holds: the events printed as agmsg's records (export) and imported
/// again are the same events.
pub fn import(data: &[u8]) {
    let mut events = Vec::new();
    let scanned = records::scan_import(data, |e| {
        events.push(e);
        Ok::<(), String>(())
    });
    if let Ok(count) = scanned {
        assert_eq!(count, events.len() as u64);
        if let Ok(text) = std::str::from_utf8(data) {
            assert_eq!(records::parse_import(text).as_ref(), Ok(&events));
        }
    }
    for e in &events {
        assert_eq!(records::check_event(e), Ok(()), "{e:?}");
    }
    let exported: String = events.iter().map(|e| records::event_line(e) + "\n").collect();
    let again = records::parse_import(&exported).unwrap_or_else(|e| panic!("an exported log does not import: {e}\n{exported}"));
    assert_eq!(again, events, "export then import changed the events");
}

// ---- the contract's words ----

/// agmsg's shell quoting and the name rules: `printf_q_word` reads back exactly what `printf_q`
/// prints (both ways), `shell_quote` is one word, and the name, driver-name, pair and token rules
/// never panic and agree with each other.
pub fn shell_words(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    // Print then read: the text comes back.
    assert_eq!(agmsg_contract::printf_q_word(&agmsg_contract::printf_q(&text)).as_deref(), Some(&*text), "printf_q of {text:?}");
    // Read then print: a word read back is the printf_q of what it read.
    if let Some(read) = agmsg_contract::printf_q_word(&text) {
        assert_eq!(agmsg_contract::printf_q(&read), text);
    }
    let printed = agmsg_contract::printf_q(&text);
    assert!(!printed.chars().any(agmsg_contract::is_unprintable), "printf_q left an unprintable character: {printed:?}");
    let quoted = agmsg_contract::shell_quote(&text);
    assert!(quoted.starts_with('\'') && quoted.ends_with('\''));
    if agmsg_contract::is_plain_word(&text) {
        assert_eq!(agmsg_contract::shell_word(&text), text);
    }
    for word in text.split(' ') {
        let name_ok = agmsg_contract::check_name("name", word).is_ok();
        if agmsg_contract::is_driver_name(word) {
            assert!(name_ok, "a driver name {word:?} that is not a name");
        }
        assert_eq!(agmsg_contract::check_driver_name(word).is_ok(), agmsg_contract::is_driver_name(word));
        if name_ok {
            assert!(!word.contains(['/', ':', '\\']) && !word.chars().any(char::is_control), "{word:?}");
        }
        let _ = agmsg_contract::split_pair(word);
        let _ = agmsg_contract::is_transport_token(word);
    }
    let words: Vec<&str> = text.split(' ').collect();
    let _ = agmsg_contract::split_pairs(&words);
}

// ---- manifests and config ----

/// An agent type's `type.conf` (agmsg's KEY=value reader, `plugin::conf`): parse, every entry, stray
/// lines, and each key's value as agmsg's `agmsg_type_get` reads it (the first matching line).
pub fn type_conf(data: &[u8]) {
    let Ok(m) = agmsg_host::plugin::conf::Manifest::parse(data, "type.conf") else { return };
    let entries = m.entries();
    for e in &entries {
        assert!(agmsg_host::plugin::conf::is_key(e.key), "{e:?}");
        let first = entries.iter().find(|f| f.key == e.key).unwrap();
        assert_eq!(e.ignored, first.line != e.line, "{e:?}");
        assert_eq!(m.get(e.key), Some(first.value), "{e:?}");
        let _ = m.words(e.key);
        let _ = agmsg_host::agent::manifest::check_relative(e.key, e.value);
    }
    let _ = m.stray_lines();
    let _ = agmsg_host::agent::manifest::spawnable(&m);
}

/// A terminal driver's `terminal.conf`: the contract's reader (bundled drivers describe themselves with
/// it) and the host's manifest check on top of it.
pub fn terminal_conf(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for key in ["name", "priority", "capabilities", "programs", "env"] {
        if let Some(v) = agmsg_contract::terminal_conf::value(&text, key) {
            assert!(!v.contains('\n'), "{key}: {v:?} spans lines");
        }
        let _ = agmsg_contract::terminal_conf::words(&text, key);
    }
    let _ = agmsg_contract::terminal_conf::priority(&text);
    let _ = agmsg_host::terminal::manifest::TerminalManifest::parse(&text);
}

/// A third-party plugin's `agmsg-driver.toml`: parse and validate; an accepted manifest's installed
/// text (what `plugin install` writes) parses again to the same manifest.
pub fn driver_manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(m) = agmsg_host::plugin::manifest::PluginManifest::parse(text, Path::new("agmsg-driver.toml")) else { return };
    let _ = m.capabilities();
    let installed = m.installed_text();
    let again = agmsg_host::plugin::manifest::PluginManifest::parse(&installed, Path::new("installed"))
        .unwrap_or_else(|e| panic!("the installed text of an accepted manifest is refused: {e}\n{installed}"));
    assert_eq!(again.installed_text(), installed);
}

/// The trust file (`trusted-plugins.json`), as `TrustFile::load` reads it; a file read saves and
/// reads back as the same records.
pub fn trust_file(data: &[u8]) {
    use agmsg_host::plugin::trust::TrustFile;
    let Ok(file) = serde_json::from_slice::<TrustFile>(data) else { return };
    let saved = serde_json::to_vec_pretty(&file).expect("a trust file serializes");
    let again: TrustFile = serde_json::from_slice(&saved).unwrap_or_else(|e| panic!("a saved trust file does not read back: {e}"));
    assert_eq!(again.version, file.version);
    assert_eq!(again.plugins, file.plugins);
    // A plugin unchanged since it was trusted is trusted, with what was granted of what it declares.
    for r in &file.plugins {
        let state = file.state(r.axis, &r.name, &r.path, (&r.sha256, &r.manifest_sha256), &r.consented);
        if file.record(r.axis, &r.name, &r.path) == Some(r) {
            assert_eq!(state, agmsg_host::plugin::trust::TrustState::Trusted(r.consented.granted_by(&r.granted)), "{r:?}");
        }
    }
}

// ---- sync-seal ----

/// agmsg's age header check (`validateAgeHeader`), run on every age file sealed.
pub fn age_header(data: &[u8]) {
    if let Ok(n) = agmsg_sync_seal::header::x25519_stanzas(data) {
        assert!(n <= 256, "{n} X25519 stanzas");
        assert!(data.starts_with(b"age-encryption.org/v1\n"));
    }
}

/// Sealing what a store holds (its timestamps, names and bodies, the recipients the engine names):
/// never a panic; a `none` envelope's blob is agmsg's canonical projection of the message; the
/// timestamp canonicalisation is idempotent.
pub fn seal(data: &[u8]) {
    let mut s = Src::new(data);
    let at = s.text();
    let canonical = agmsg_sync_seal::canonical_created_at(&at).into_owned();
    assert_eq!(agmsg_sync_seal::canonical_created_at(&canonical), canonical, "canonical_created_at of {at:?}");
    let (body, from, to) = (s.text(), s.text(), s.text());
    let message = agmsg_sync_seal::Message { body: &body, created_at: &canonical, from_agent: &from, to_agent: &to };
    let projection = agmsg_sync_seal::canonical_message(&message);
    let wire = s.uuid(4);
    let team = s.text();
    if s.bool() {
        let request = agmsg_sync_seal::SealRequest::none(&team, &wire);
        if let Ok(e) = agmsg_sync_seal::seal(&message, &request) {
            let o = printed(&e.to_json());
            assert_eq!(field(&o, "blob").as_str(), Some(base64(&projection.expect("sealed, so projected")).as_str()));
        }
    } else {
        let recipients: Vec<String> = (0..1 + s.byte() % 2).map(|_| s.text()).collect();
        let key_id = s.text();
        let mut request = agmsg_sync_seal::SealRequest::none(&team, &wire);
        request.cipher = "age-v1";
        request.key_id = Some(&key_id);
        request.recipients = &recipients;
        let _ = agmsg_sync_seal::seal(&message, &request);
    }
}

// ---- what a delivery plug says, placement records ----

/// A delivery plug's lines: the host's line check and its directive look-alike fold (NFKC, UTS 39
/// skeletons), on any text; a line with the exact directive prefix reads as a directive.
pub fn plug_lines(data: &[u8]) {
    for line in String::from_utf8_lossy(data).split('\n') {
        let _ = agmsg_host::agent::delivery::component::check_line(line);
        let directive = agmsg_host::agent::delivery::forms::reads_as_directive(line);
        if line.contains("AGMSG-DIRECTIVE") {
            assert!(directive, "{line:?}");
        }
    }
}

/// A spawn's placement record (agmsg's `read -r id project type`): parse; a record printed reads back.
pub fn placement(data: &[u8]) {
    use agmsg_host::spawn::place::PlacementRecord;
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = PlacementRecord::parse(&text)
        && let Ok(line) = r.line()
    {
        assert_eq!(PlacementRecord::parse(&line).ok().as_ref(), Some(&r), "{line:?}");
    }
}

// ---- agmsg's config and a team's config (as the host reads them) ----

/// The driver names the config targets set and look up, beside whatever the file names.
const DRIVER_NAMES: [&str; 4] = ["sqlite", "jsonl", "postgres", "x"];

/// agmsg's `config.json` (`AGMSG_CONFIG`): its `storage` key (`configured_storage`), a driver's table
/// (`driver_table`), and `storage switch`'s edit (`config_with_driver`): the edited text reads back
/// with the driver named and its `url` set, every other key as it was (numbers read exactly, as
/// `read_config` and agmsg's tools read them), and editing it again changes nothing.
pub fn agmsg_config(data: &[u8]) {
    use agmsg_host::storage::location::{configured_storage, driver_table};
    use agmsg_host::storage::manage::{config_with_driver, read_config};
    // The host reads the file with `read_to_string`: text that is not UTF-8 is an error before any JSON.
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = serde_json::from_str::<Value>(text);
    match configured_storage(text) {
        Ok(Some(name)) => {
            assert!(!name.is_empty());
            assert_eq!(parsed.as_ref().ok().and_then(|v| v.get("storage")).and_then(Value::as_str), Some(name.as_str()));
        }
        Ok(None) => assert!(parsed.as_ref().is_ok_and(|v| v.get("storage").and_then(Value::as_str).is_none_or(str::is_empty))),
        Err(_) => assert!(parsed.is_err()),
    }
    let named = parsed.as_ref().ok().and_then(|v| v.get("storage")).and_then(Value::as_str).unwrap_or("sqlite").to_owned();
    for (i, name) in DRIVER_NAMES.iter().copied().chain([named.as_str()]).enumerate() {
        let table = driver_table(text, name);
        assert_eq!(table.is_ok(), parsed.is_ok());
        if let (Ok(table), Ok(value)) = (&table, &parsed) {
            assert_eq!(table.as_ref(), value.get(name));
        }
        let url = if i % 2 == 0 { Some("postgres://agmsg@db.example/agmsg?sslmode=verify-full") } else { None };
        let Ok(edited) = config_with_driver(Some(text), name, url) else { continue };
        assert!(edited.ends_with('\n'));
        // Compared as read exactly (`read_config`, what the edit reads), as agmsg's tools read numbers.
        let Ok(Value::Object(after)) = read_config(&edited) else { panic!("the edited config is not a JSON object: {edited}") };
        let Ok(Value::Object(before)) = read_config(text) else { panic!("an edit of a config that is not a JSON object: {text:?}") };
        assert_eq!(configured_storage(&edited).ok().flatten().as_deref(), Some(name).filter(|n| !n.is_empty()), "{edited}");
        if let Some(url) = url {
            let table = driver_table(&edited, name).expect("the edit reads back");
            assert_eq!(table.as_ref().and_then(|t| t.get("url")).and_then(Value::as_str), Some(url), "{edited}");
        }
        for (key, value) in &before {
            if key == "storage" || (url.is_some() && key == name) {
                continue;
            }
            assert_eq!(after.get(key), Some(value), "{key:?} changed: {edited}");
        }
        assert_eq!(
            after.len(),
            before.len() + usize::from(!before.contains_key("storage")) + usize::from(url.is_some() && !before.contains_key(name))
        );
        let again = config_with_driver(Some(&edited), name, url).expect("an edited config takes the edit again");
        assert_eq!(again, edited, "editing twice changed the config");
    }
    // No file: the edit starts from `{}`.
    let fresh = config_with_driver(None, "jsonl", None).expect("an empty config takes a driver");
    assert_eq!(configured_storage(&fresh).ok().flatten().as_deref(), Some("jsonl"));
}

/// A team's `config.json` (`<teams>/<team>/config.json`): its partition (`team_partition`) and its
/// registered agents (`registered`, what `send` checks), against the JSON the file holds.
pub fn team_config(data: &[u8]) {
    use agmsg_host::storage::location::{Partition, PartitionError, team_partition};
    let value = serde_json::from_slice::<Value>(data);
    let agents = agmsg_host::storage::roster::registered(data);
    match value.as_ref().ok().and_then(|v| v.get("agents")).and_then(Value::as_object) {
        Some(object) => {
            assert_eq!(agents.len(), object.len());
            assert!(agents.iter().all(|a| object.contains_key(a)));
        }
        None => assert!(agents.is_empty(), "{agents:?}"),
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let partition = team_partition(text);
    // The JSON's `drivers.partition`: `None` when the file is not JSON.
    let said = value.as_ref().ok().map(|v| v.pointer("/drivers/partition"));
    let word = said.flatten().map(Value::as_str);
    match &partition {
        Ok(Partition::Shared) => assert!(matches!(said, Some(None)) || word == Some(Some("shared")), "{text:?}"),
        Ok(Partition::PerTeam) => assert_eq!(word, Some(Some("per-team")), "{text:?}"),
        Err(PartitionError::Json(_)) => assert!(said.is_none(), "{text:?}"),
        Err(PartitionError::Unknown(unknown)) => {
            assert_eq!(Some(unknown.as_deref()), word, "{text:?}");
            assert!(!matches!(unknown.as_deref(), Some("shared" | "per-team")));
        }
    }
}

// ---- the files delivery reads before a write ----

/// The project file a type's delivery rewrites (`hooks_file`), read before each write: agmsg's JSON
/// hooks (`json_hooks::apply`, `status`) and the shared rule file (`rules::shared_rule_apply`,
/// `shared_rule_status`), with the marker rules' status and the `hooks_file` checks. A status never
/// fails; what apply writes reads back as the mode it was asked for, and applying it again changes
/// nothing; the rule file keeps every other type's line.
pub fn delivery_files(data: &[u8]) {
    use agmsg_host::agent::delivery::{Context, FileAnswer, Mode, json_hooks, rules};
    let mut s = Src::new(data);
    let agent_type = match s.byte() % 8 {
        0 => s.text(),
        n => ["claude-code", "codex", "gemini", "antigravity", "x", "it's", "my type"][usize::from(n) - 1].to_owned(),
    };
    let project = match s.byte() % 6 {
        0 => s.text(),
        n => ["/p", "/home/u/my project", "/p/it's", "relative", "/p/\u{202e}x"][usize::from(n) - 1].to_owned(),
    };
    let skill_dir = match s.byte() % 5 {
        0 => s.text(),
        n => ["/s/agmsg", "/h/.agents/skills/agmsg", "/it's dir", "/s/\"q\\"][usize::from(n) - 1].to_owned(),
    };
    let ctx = Context { agent_type, project, skill_dir, windows_wrap: s.bool() };
    let mode = s.pick(&Mode::ALL);
    // The rest is the file (the target's `read` refuses text that is not UTF-8).
    let Ok(text) = std::str::from_utf8(s.rest()) else { return };
    let one_line = |t: &str| !t.contains(['\n', '\r']);
    let plain_ctx = one_line(&ctx.agent_type) && one_line(&ctx.project) && one_line(&ctx.skill_dir);

    // agmsg's JSON hooks.
    assert!(json_hooks::status(&ctx, Some(text)).is_ok(), "a status failed");
    if let Ok(answer) = json_hooks::apply(&ctx, mode, Some(text)) {
        let FileAnswer::Write(out) = answer else { panic!("json hooks answered {answer:?}") };
        // Valid JSON as the host checks it (a number out of f64's range, kept as the user wrote it, is
        // still JSON), an object at the top.
        assert!(serde_json::from_str::<serde::de::IgnoredAny>(&out).is_ok() && out.starts_with('{'), "not a JSON object: {out}");
        // The host's entries are its own only for a type name and an absolute project: then the file
        // says the mode written, and a second apply finds them and changes nothing.
        if agmsg_contract::is_driver_name(&ctx.agent_type) && ctx.project.starts_with('/') {
            let status = json_hooks::status(&ctx, Some(&out)).expect("a status");
            assert_eq!(status.mode, mode, "wrote {out}");
            assert_eq!(json_hooks::apply(&ctx, mode, Some(&out)).ok(), Some(FileAnswer::Write(out.clone())), "applied twice");
        }
    }

    // The shared rule file.
    let report = rules::shared_rule_apply(&ctx, mode, Some(text));
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("- Command: ") && l.contains("/scripts/check-inbox.sh' ") && !ours(l, &ctx.agent_type))
        .collect();
    match report.answer {
        Some(FileAnswer::Write(out)) => {
            // A last line's lone `\r` (no `\n` after it) is kept, and reads as a CRLF line ending once
            // the rule file's `\n` follows it: lines compare without it.
            let kept: Vec<&str> = kept.iter().map(|l| l.trim_end_matches('\r')).collect();
            let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("- Command: ")).map(|l| l.trim_end_matches('\r')).collect();
            if plain_ctx {
                assert_eq!(lines.get(..kept.len()), Some(&kept[..]), "another type's rule lost: {out:?}");
                let expect = if mode == Mode::Off { Mode::Off } else { Mode::Turn };
                assert_eq!(rules::shared_rule_status(&ctx, Some(&out)), expect, "{out:?}");
                if !text.contains('\r') {
                    assert_eq!(
                        rules::shared_rule_apply(&ctx, mode, Some(&out)).answer,
                        Some(FileAnswer::Write(out.clone())),
                        "applied twice"
                    );
                }
            }
        }
        Some(FileAnswer::Remove) => assert!(mode == Mode::Off && kept.is_empty()),
        other => panic!("the rule file answered {other:?}"),
    }
    let _ = rules::shared_rule_status(&ctx, Some(text));
    let _ = rules::marker_status(Some(text));

    // The `hooks_file` rules, on the file's first line as a path.
    let path = text.lines().next().unwrap_or_default();
    if agmsg_host::agent::delivery::target::check_hooks_file(&ctx.agent_type, path).is_ok() {
        assert!(!path.contains("..") && !path.starts_with('/') && !path.is_empty(), "{path:?}");
    }
    let _ = agmsg_host::agent::manifest::check_hooks_file(&ctx.agent_type, path);
}

/// Whether a `- Command:` line is `agent_type`'s (the rule file's own test, restated).
fn ours(line: &str, agent_type: &str) -> bool {
    line.strip_prefix("- Command: ")
        .is_some_and(|cmd| cmd.contains(&format!("/scripts/check-inbox.sh' {} ", agmsg_host::shell::quote(agent_type))))
}

// ---- what a driver answers to describe and to a watch ----

/// One of `words`, or (two times in `words.len() + 2`) any text.
fn word(s: &mut Src<'_>, words: &[&str]) -> String {
    match usize::from(s.byte()) % (words.len() + 2) {
        0 | 1 => s.text(),
        n => words[n - 2].to_owned(),
    }
}

/// A driver's `describe` answer (`check_description`, `store_file_path`) and a watch's batch
/// (`check_watch_batch`: its messages and cursor), built from the fuzzer's bytes. A description let
/// through prints as `key=value` lines that read back, as agmsg splits them, as the same values, its
/// store file below the store; a batch let through prints as JSON lines holding its values.
pub fn describe_watch(data: &[u8]) {
    use agmsg_host::storage::driver::{Description, Message, StoreFile, WatchBatch, check_description, check_watch_batch, store_file_path};
    let mut s = Src::new(data);
    let count = match s.byte() % 8 {
        0 => 64 + usize::from(s.byte() % 3),
        n => usize::from(n),
    };
    let capabilities = (0..count).map(|_| word(&mut s, &["send", "stage1-sync", "live", "a,b", "", "two words", "\u{202e}x"])).collect();
    let description = Description {
        name: word(&mut s, &["sqlite", "jsonl", "x=y", "name"]),
        backend: word(&mut s, &["SQLite 3.50 (WAL)", "", "a\nb"]),
        capabilities,
        store_file: s.bool().then(|| StoreFile {
            key: word(&mut s, &["db", "log", "name", "capabilities", "a=b", "-"]),
            path: word(&mut s, &["messages.db", "./events.jsonl", "a/b", "../x", "/abs", "a/../../b", ".", "a//b/./c"]),
        }),
    };
    if let Ok(d) = check_description("fuzz", description.clone()) {
        assert_eq!(d, description);
        let store = Path::new("/nonexistent/agmsg-fuzz-store");
        let file = d
            .store_file
            .as_ref()
            .map(|f| (f, store_file_path("fuzz", store, f).unwrap_or_else(|e| panic!("{f:?} is refused after its check: {}", e.message))));
        let mut lines =
            vec![format!("name={}", d.name), format!("backend={}", d.backend), format!("capabilities={}", d.capabilities.join(","))];
        if let Some((f, path)) = &file {
            assert!(path.starts_with(store) && !path.components().any(|c| c == std::path::Component::ParentDir), "{path:?}");
            lines.push(format!("{}={}", f.key, path.display()));
        }
        let text = lines.join("\n") + "\n";
        // agmsg reads `describe` line by line, each split at its first `=`.
        let read: Vec<(&str, &str)> = text.lines().map(|l| l.split_once('=').expect("a key=value line")).collect();
        assert_eq!(read.len(), lines.len(), "{text:?}");
        assert_eq!(read[0], ("name", d.name.as_str()));
        assert_eq!(read[1], ("backend", d.backend.as_str()));
        assert_eq!(read[2].0, "capabilities");
        let capabilities: Vec<&str> = if read[2].1.is_empty() { Vec::new() } else { read[2].1.split(',').collect() };
        assert_eq!(capabilities, d.capabilities);
        if let Some((f, path)) = &file {
            assert_eq!(read[3].0, f.key);
            assert!(!["name", "backend", "capabilities"].contains(&read[3].0));
            assert_eq!(Path::new(read[3].1), path.as_path());
        }
    }

    let messages = (0..s.byte() % 4)
        .map(|_| Message {
            id: word(&mut s, &["m1", "0192aaaa-0000-7000-8000-000000000001", "a b", ""]),
            team: word(&mut s, &["t", "team-1", "a:b", ".."]),
            from: word(&mut s, &["alice", "a/b", "."]),
            to: word(&mut s, &["bob", "b\u{0}"]),
            body: s.text(),
            at: word(&mut s, &["2026-05-30T19:00:01Z", "2026-05-30 19:00:01"]),
        })
        .collect();
    let batch = WatchBatch { messages, cursor: word(&mut s, &["0", "42", "1 2", "\u{7f}"]) };
    if let Ok(checked) = check_watch_batch("fuzz", batch.clone()) {
        assert_eq!(checked, batch);
        for m in &checked.messages {
            let o = printed(&records::message_line(m));
            for (key, value) in [("id", &m.id), ("team", &m.team), ("from", &m.from), ("to", &m.to), ("body", &m.body), ("at", &m.at)] {
                assert_eq!(field(&o, key).as_str(), Some(value.as_str()), "{key}");
            }
        }
        let o = printed(&records::cursor_line(&checked.cursor));
        assert_eq!(field(&o, "cursor").as_str(), Some(checked.cursor.as_str()));
    }
}

/// `delivery status codex`'s reading of agmsg's Codex bridge records (`run/codex-bridge.<who>.meta`
/// and `.pid`, [`BridgeRecord`](agmsg_host::agent::delivery::codex::BridgeRecord)), which any process
/// that can write the run directory writes. The input is the file name's `<who>`, the meta's text and
/// the pid file's, split at NUL bytes (both files are read only as UTF-8). The status line is one
/// inert line whatever they hold, says "running" only for a positive pid the pid file holds, the meta
/// does not contradict and the process table says is alive; a record is the project's only when its
/// first `project=` names it and its `type=` is codex or absent.
pub fn codex_bridge(data: &[u8]) {
    use agmsg_host::agent::delivery::codex::BridgeRecord;
    let mut parts = data.splitn(3, |b| *b == 0);
    let who = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let Ok(meta) = std::str::from_utf8(parts.next().unwrap_or_default()) else { return };
    let pid_file = parts.next().map(std::str::from_utf8);
    let pid_file = match pid_file {
        Some(Err(_)) => return,
        Some(Ok(text)) => Some(text),
        None => None,
    };
    let record = BridgeRecord::new(meta, pid_file);
    let pid = pid_file.and_then(|t| t.trim().parse::<i32>().ok()).filter(|p| *p > 0);
    for alive in [false, true] {
        let line = record.status_line(&who, |p| {
            assert_eq!(Some(p), pid, "asked about a pid the pid file does not hold");
            alive
        });
        assert!(!line.chars().any(agmsg_host::display::is_unsafe), "{line:?}");
        let shown = agmsg_host::display::line(&who);
        let status = line.strip_prefix(&format!("Codex bridge {shown}: ")).unwrap_or_else(|| panic!("{line:?}"));
        if status.starts_with("running") {
            let pid = pid.expect("running without a pid");
            assert!(alive && status == format!("running (pid {pid})"), "{line:?}");
            assert!(record.field("pid").is_none_or(|p| p == pid.to_string()), "{line:?}");
        }
    }
    // With canonicalization the identity, the record is `project`'s exactly when it says so.
    let project = meta.lines().find_map(|l| l.strip_prefix("project="));
    let kind = meta.lines().find_map(|l| l.strip_prefix("type="));
    assert_eq!(record.field("project"), project);
    for candidate in [project.unwrap_or(""), "/elsewhere", ""] {
        let expected = project == Some(candidate) && kind.is_none_or(|t| t == "codex");
        assert_eq!(record.is_for(candidate, str::to_owned), expected, "{candidate:?} {meta:?}");
    }
}
