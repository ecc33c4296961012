//! Delivering messages to an agent, the §2.2 way: whatever shows them (a terminal, a pipe, an agent's
//! hook) says which it delivered, and exactly those are consumed. A message that could not be shown
//! stays unread: the consume's frontier stops at the first one not delivered.

use std::time::{Duration, Instant};

use super::driver::{Message, Pair, Wake};
use super::wake::{Change, StoreWake};
use super::{Storage, StorageError};
use crate::log::host_log;
use crate::runtime::sandbox::StoreDir;

/// The longest one wait call lasts, so that a stop request (Ctrl-C) is seen this soon.
const WAIT_SLICE: Duration = Duration::from_secs(1);
/// The least time between two `live` wait calls: a driver that answers at once, every time, costs a
/// round per this, never a busy loop.
const LIVE_SPACING: Duration = Duration::from_millis(20);
/// The least time between the end of a round and the next round woken by the store: a store written
/// without pause costs a round per this. Short, because the round itself writes the store (its
/// consume), so the wake that follows every delivering round is the watcher's own, and a message that
/// arrives meanwhile waits this long.
const STORE_SPACING: Duration = Duration::from_millis(4);
/// After a wake by another file of the store directory (a writer's lock, the jsonl index): a pause
/// before waiting again, so a stream of such events costs a wait per this, never a busy loop, while the
/// store file's own write, which follows at once, is seen this soon.
const QUIET_PAUSE: Duration = Duration::from_millis(1);
/// How often a polling watch looks at `stopped`.
const POLL_STEP: Duration = Duration::from_millis(50);

/// Hand each message to `deliver` in order until it returns false (the reader is gone); the ids delivered,
/// and whether every message was.
fn hand_over(messages: &[Message], deliver: &mut impl FnMut(&Message) -> bool) -> (Vec<String>, bool) {
    let mut delivered = Vec::new();
    for message in messages {
        if !deliver(message) {
            return (delivered, false);
        }
        delivered.push(message.id.clone());
    }
    (delivered, true)
}

/// The evidence words of the receipts agmsg-host's `inbox` and `watch` record: agmsg's own, for the
/// same hand-off (the message written to the reader's stdout), as its `inbox.sh` and `watch.sh` record
/// them.
pub const INBOX_EVIDENCE: &str = "inbox_stdout";
pub const WATCH_EVIDENCE: &str = "watch_stdout";

/// After a consume: record that `agent` was handed `delivered` (`evidence`), when the driver keeps
/// receipts (the optional `receipts` interface; agmsg's sqlite hand-off audit, which its history and
/// `message-status.sh` read). As agmsg's readers do, a failure here never undoes the delivery: it is
/// logged, and the messages stay read.
fn record_receipts(driver: &mut Storage<'_>, team: &str, agent: &str, evidence: &str, delivered: &[String]) {
    if delivered.is_empty() || !driver.offers().receipts {
        return;
    }
    if let Err(e) = driver.record_receipts(team, agent, evidence, delivered) {
        host_log::warn(&format!("the messages were delivered, but their receipts were not recorded: {}", e.message));
    }
}

/// An agent's unread messages, delivered oldest first, then exactly those consumed, and their receipts
/// recorded (`inbox_stdout`) where the driver keeps them. Returns how many were unread (0: nothing to
/// show).
pub fn inbox(driver: &mut Storage<'_>, team: &str, agent: &str, mut deliver: impl FnMut(&Message) -> bool) -> Result<usize, StorageError> {
    let pair = Pair { team: team.to_owned(), agent: agent.to_owned() };
    // The tip first: what arrives after it is consumed only if delivered (its exact id).
    let tip = driver.watch_tip(std::slice::from_ref(&pair))?;
    let unread = driver.list_unread(team, agent, None)?;
    let (delivered, _) = hand_over(&unread, &mut deliver);
    if !delivered.is_empty() {
        driver.read_cursor_consume(team, agent, &tip, &delivered)?;
        record_receipts(driver, team, agent, INBOX_EVIDENCE, &delivered);
    }
    Ok(unread.len())
}

/// What one watch round did.
pub struct WatchRound {
    /// False once `deliver` refused a message (the reader is gone).
    pub all_delivered: bool,
    /// The cursor the round read up to: what a wait for the next message starts from.
    pub cursor: String,
}

/// One round of a watch: what arrived after the agent's stored cursor, delivered, then consumed (the
/// cursor also moves past what the agent does not see) and their receipts recorded (`watch_stdout`). The stored cursor is the truth: a round after a
/// missed wake-up, or after none at all, delivers everything since.
pub fn watch_round(
    driver: &mut Storage<'_>,
    team: &str,
    agent: &str,
    mut deliver: impl FnMut(&Message) -> bool,
) -> Result<WatchRound, StorageError> {
    let cursor = driver.read_cursor_get(team, agent)?;
    let pair = Pair { team: team.to_owned(), agent: agent.to_owned() };
    let batch = driver.watch_after(&cursor, std::slice::from_ref(&pair))?;
    let (delivered, all) = hand_over(&batch.messages, &mut deliver);
    if batch.cursor != cursor || !delivered.is_empty() {
        driver.read_cursor_consume(team, agent, &batch.cursor, &delivered)?;
        record_receipts(driver, team, agent, WATCH_EVIDENCE, &delivered);
    }
    Ok(WatchRound { all_delivered: all, cursor: batch.cursor })
}

/// How a watch waits between rounds, chosen once when it starts.
pub enum Waiter {
    /// The driver's `live.wait-after` (postgres: LISTEN/NOTIFY).
    Live,
    /// The host's watch of the store file (inotify on the store directory; see [`wake`]).
    Store(StoreWake),
    /// Sleeping out the interval.
    Poll,
}

impl Waiter {
    /// The best way to wait that this driver and store allow: the driver's own `live` wake-ups, else a
    /// watch of the store file in `store` (the directory the driver is granted, if any), else polling.
    /// `wake` false (`AGMSG_WATCH_POLL=1`) forces polling. Why a watch polls is logged at debug level.
    pub fn choose(driver: &mut Storage<'_>, store: Option<&StoreDir>, wake: bool) -> Waiter {
        let why_poll = if !wake {
            "AGMSG_WATCH_POLL is set".to_owned()
        } else if driver.offers().live {
            return Waiter::Live;
        } else if let Some(store) = store {
            // The driver says which file is its store (sqlite: messages.db, jsonl: events.jsonl).
            match driver.describe().map(|d| d.store_file) {
                Ok(Some(file)) => match StoreWake::watch(store, &file.path) {
                    Ok(watch) => {
                        host_log::debug(&format!("watch: woken by changes to {} in {}", file.path, store.path().display()));
                        return Waiter::Store(watch);
                    }
                    Err(why) => why,
                },
                Ok(None) => format!("driver '{}' names no store file", driver.name()),
                Err(e) => format!("driver '{}' could not describe its store: {}", driver.name(), e.message),
            }
        } else {
            format!("driver '{}' offers no live wake-ups and has no store directory", driver.name())
        };
        host_log::debug(&format!("watch: polling every interval: {why_poll}"));
        Waiter::Poll
    }
}

/// Wait between two watch rounds, as `waiter` says (from `cursor`, the last round's, for `live`).
/// Returns when a wake-up says a message may have arrived, when `interval` has passed (the next round
/// then reads anyway, so a lost wake-up delays a message by at most `interval`), or when `stopped` says
/// so (checked at least every second). Rounds woken by the store come at least [`STORE_SPACING`] after
/// the last, `live` waits at least [`LIVE_SPACING`] apart. A wait that stops working (the driver no
/// longer offers `live`, the store watch ended) falls back to polling.
pub fn wait_for_next_round(
    driver: &mut Storage<'_>,
    waiter: &mut Waiter,
    team: &str,
    agent: &str,
    cursor: &str,
    interval: Duration,
    stopped: impl Fn() -> bool,
) -> Result<(), StorageError> {
    // The last round ended as this wait began.
    let round_ended = Instant::now();
    let until = round_ended + interval;
    let pair = [Pair { team: team.to_owned(), agent: agent.to_owned() }];
    loop {
        let started = Instant::now();
        let left = until.saturating_duration_since(started);
        if left.is_zero() || stopped() {
            return Ok(());
        }
        // Woken or not, and the instant before which the next step must not start. A store's spacing
        // counts from the round's end, not from this wait's start: a writer's lock file wakes us just
        // before its store file does, and the store's wake must not then wait the spacing out again.
        let (woken, not_before) = match waiter {
            Waiter::Poll => {
                std::thread::sleep(left.min(POLL_STEP));
                continue;
            }
            Waiter::Live => match driver.wait_after(cursor, &pair, left.min(WAIT_SLICE))? {
                Some(Wake::Changed) => (true, started + LIVE_SPACING),
                Some(Wake::TimedOut) => (false, started + LIVE_SPACING),
                None => {
                    *waiter = Waiter::Poll;
                    (false, started)
                }
            },
            Waiter::Store(watch) => match watch.wait(left.min(WAIT_SLICE)) {
                Ok(Change::Changed) => (true, round_ended + STORE_SPACING),
                Ok(Change::Quiet) => (false, started + QUIET_PAUSE),
                ended => {
                    let why = ended.err().unwrap_or_else(|| "the store directory was removed or unmounted".to_owned());
                    host_log::debug(&format!("watch: polling from now on: {why}"));
                    *waiter = Waiter::Poll;
                    (false, started)
                }
            },
        };
        std::thread::sleep(not_before.saturating_duration_since(Instant::now()));
        if woken {
            // What the writer wrote while we slept is part of this wake: the round reads it.
            if let Waiter::Store(watch) = waiter
                && !matches!(watch.drain(), Ok(Change::Changed | Change::Quiet))
            {
                host_log::debug("watch: polling from now on: the store watch ended");
                *waiter = Waiter::Poll;
            }
            return Ok(());
        }
    }
}
