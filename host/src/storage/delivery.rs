//! Delivering messages to an agent, the §2.2 way: whatever shows them (a terminal, a pipe, an agent's
//! hook) says which it delivered, and exactly those are consumed. A message that could not be shown
//! stays unread: the consume's frontier stops at the first one not delivered.

use super::driver::{Message, Pair};
use super::{StorageError, Storage};

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

/// One round of a watch: what arrived after the agent's stored cursor, delivered, then consumed (the
/// cursor also moves past what the agent does not see). False once `deliver` refused one (the reader is
/// gone).
pub fn watch_round(driver: &mut Storage<'_>, team: &str, agent: &str, mut deliver: impl FnMut(&Message) -> bool) -> Result<bool, StorageError> {
    let cursor = driver.read_cursor_get(team, agent)?;
    let pair = Pair { team: team.to_owned(), agent: agent.to_owned() };
    let batch = driver.watch_after(&cursor, std::slice::from_ref(&pair))?;
    let (delivered, all) = hand_over(&batch.messages, &mut deliver);
    if batch.cursor != cursor || !delivered.is_empty() {
        driver.read_cursor_consume(team, agent, &batch.cursor, &delivered)?;
    }
    Ok(all)
}
