//! Delivering messages to an agent, the §2.2 way: whatever shows them (a terminal, a pipe, an agent's
//! hook) says which it delivered, and exactly those are consumed. A message that could not be shown
//! stays unread: the consume's frontier stops at the first one not delivered.

use std::time::{Duration, Instant};

use super::driver::{Message, Pair, Wake};
use super::{StorageError, Storage};

/// The longest one wait call lasts, so that a stop request (Ctrl-C) is seen this soon.
const WAIT_SLICE: Duration = Duration::from_secs(1);
/// The least time between two wait calls or rounds: a driver that answers at once, every time, costs a
/// round per this, never a busy loop.
const MIN_SPACING: Duration = Duration::from_millis(20);
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

/// An agent's unread messages, delivered oldest first, then exactly those consumed. Returns how many were
/// unread (0: nothing to show).
pub fn inbox(driver: &mut Storage<'_>, team: &str, agent: &str, mut deliver: impl FnMut(&Message) -> bool) -> Result<usize, StorageError> {
    let pair = Pair { team: team.to_owned(), agent: agent.to_owned() };
    // The tip first: what arrives after it is consumed only if delivered (its exact id).
    let tip = driver.watch_tip(std::slice::from_ref(&pair))?;
    let unread = driver.list_unread(team, agent, None)?;
    let (delivered, _) = hand_over(&unread, &mut deliver);
    if !delivered.is_empty() {
        driver.read_cursor_consume(team, agent, &tip, &delivered)?;
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
/// cursor also moves past what the agent does not see). The stored cursor is the truth: a round after a
/// missed wake-up, or after none at all, delivers everything since.
pub fn watch_round(driver: &mut Storage<'_>, team: &str, agent: &str, mut deliver: impl FnMut(&Message) -> bool) -> Result<WatchRound, StorageError> {
    let cursor = driver.read_cursor_get(team, agent)?;
    let pair = Pair { team: team.to_owned(), agent: agent.to_owned() };
    let batch = driver.watch_after(&cursor, std::slice::from_ref(&pair))?;
    let (delivered, all) = hand_over(&batch.messages, &mut deliver);
    if batch.cursor != cursor || !delivered.is_empty() {
        driver.read_cursor_consume(team, agent, &batch.cursor, &delivered)?;
    }
    Ok(WatchRound { all_delivered: all, cursor: batch.cursor })
}

/// Wait between two watch rounds: through the driver's `live.wait-after` (from `cursor`, the last round's)
/// when it offers it and `live` is true, else by sleeping. Returns when a wake-up says a message may have
/// arrived, when `interval` has passed (the next round then reads anyway, so a lost wake-up delays a
/// message by at most `interval`), or when `stopped` says so (checked at least every second).
pub fn wait_for_next_round(
    driver: &mut Storage<'_>,
    team: &str,
    agent: &str,
    cursor: &str,
    interval: Duration,
    live: bool,
    stopped: impl Fn() -> bool,
) -> Result<(), StorageError> {
    let until = Instant::now() + interval;
    let pair = [Pair { team: team.to_owned(), agent: agent.to_owned() }];
    let mut live = live && driver.offers_wait();
    loop {
        let started = Instant::now();
        let left = until.saturating_duration_since(started);
        if left.is_zero() || stopped() {
            return Ok(());
        }
        if !live {
            std::thread::sleep(left.min(POLL_STEP));
            continue;
        }
        let wake = driver.wait_after(cursor, &pair, left.min(WAIT_SLICE))?;
        std::thread::sleep(MIN_SPACING.saturating_sub(started.elapsed()));
        match wake {
            Some(Wake::Changed) => return Ok(()),
            Some(Wake::TimedOut) => {}
            None => live = false,
        }
    }
}
