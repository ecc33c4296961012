//! Crash injection for a driver's own native tests: a test runs the op in a child process that
//! aborts at a named point of the driver's write protocol (no unwinding, no rollback: as a `kill -9`
//! would leave it), then checks what the next op recovers.
//!
//! [`crash_point`] is an empty inline function unless the `crash-points` feature is on, which a driver
//! turns on for its tests only, as a dev-dependency feature (a component never has it):
//!
//! ```toml
//! [dev-dependencies]
//! agmsg-guest-sdk = { version = "...", features = ["crash-points"] }
//! ```
//!
//! The child is told where to stop by its environment: `AGMSG_SYNC_CRASH_AT` names the point,
//! `AGMSG_SYNC_CRASH_HIT` which passage through it (1 when unset).

/// Abort the process here when this is the point, and the passage, the environment names.
#[cfg(feature = "crash-points")]
pub fn crash_point(point: &str) {
    thread_local! {
        static PASSED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    if std::env::var("AGMSG_SYNC_CRASH_AT").is_ok_and(|p| p == point) {
        let hit: u32 = std::env::var("AGMSG_SYNC_CRASH_HIT").ok().and_then(|h| h.parse().ok()).unwrap_or(1);
        let passed = PASSED.with(|p| {
            p.set(p.get() + 1);
            p.get()
        });
        if passed >= hit {
            std::process::abort();
        }
    }
}

/// Nothing: crash points are compiled in only with the `crash-points` feature.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub fn crash_point(_point: &str) {}
