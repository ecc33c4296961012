//! The postgres driver's send, as `psql` runs it for the baselines (`postgres_vs_psql`, `overhead`):
//! the driver's SQL (`drivers/storage-postgres/src/lib.rs`, `schema.rs`) with the parameters written in
//! as literals (Debian 12's psql 15 cannot bind parameters), in the driver's round trips.

/// `schema::ensure`'s probe, which every op of a fresh connection (every process) runs first.
pub const PROBE: &str = "SELECT value FROM agmsg_meta WHERE key = 'schema'; SELECT EXISTS (SELECT 1 FROM agmsg_counter WHERE part = '')";

/// The driver's `SEND`, for the shared store (partition ''), and its `NOTIFY` in the same transaction (to
/// a channel name of the driver's length: `agmsg_` and 40 hex digits).
pub fn send_sql(i: usize) -> String {
    format!(
        "WITH s AS (UPDATE agmsg_counter SET last = last + 1 WHERE part = '' RETURNING last) \
         INSERT INTO agmsg_events (part, seq, type, id, team, from_agent, to_agent, body, at) \
         SELECT '', s.last, 'message_sent', 'psql-{i}', 't', 'alice', 'bob', 'q{i}', '2026-12-03T00:00:00Z' FROM s; \
         SELECT pg_notify('agmsg_{}', '')",
        "0".repeat(40)
    )
}
