//! Crash injection for the native tests ([`super::tests`]): a crash test runs its op in a child process
//! of the test binary that aborts at a named point of the write protocol (no unwinding, no `Drop`, no
//! cut-back: what a kill or a trapped instance leaves), and then checks what the next op makes of the
//! store. `AGMSG_SYNC_CRASH_AT` names the point, `AGMSG_SYNC_CRASH_HIT` which passage of it (1 when
//! unset). In the component (any build but the unit tests') a point is an empty inline function.
//!
//! The points, in the order an op passes them:
//! - `prepare:sealed` (after each new reservation is sealed and staged), `prepare:before-append`;
//!   `reconcile:before-append`; `apply:staged` (after each pulled message is staged),
//!   `apply:before-append`: nothing of the op is in the log yet.
//! - `rewrite:before-rename` (any file written whole, here the append journal): its temp file is
//!   written, not yet renamed into place: no journal, nothing appended.
//! - `append:journaled`: the append journal (the log's old length) is in place, nothing appended.
//! - `append:line`: after each record line is written (not yet synced): a commit of several records
//!   is half in the log.
//! - `append:synced`: every line written and synced, the journal not yet removed: not committed.
//! - `append:committed`: the journal removed: the op's records are durable (the op has not answered).
//! - `recover:cut-back`: the next op's recovery cut the log back and has not yet removed the journal.
//! - `index:batch-written`: a read bringing the index up to date (over a pull commit's messages) has
//!   written their records and id slots, not yet the meta that counts them.

pub use agmsg_guest_sdk::crash::crash_point;
