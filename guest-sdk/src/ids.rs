//! Identifiers and timestamps in the forms the contract prescribes.
//!
//! For every axis. A storage driver stamps every event it creates with both:
//!
//! ```
//! use agmsg_guest_sdk::ids::{new_id, now_utc};
//! use agmsg_guest_sdk::is_transport_token;
//!
//! let (id, at) = (new_id(), now_utc());
//! assert!(is_transport_token(&id));
//! assert!(at.ends_with('Z'));
//! ```

use std::time::SystemTime;

/// A new UUIDv7 message or event id (§2.5), from the host's clock and random source.
///
/// UUIDv7 ids start with their creation time, so ids made later sort later.
///
/// ```
/// use agmsg_guest_sdk::ids::new_id;
///
/// let id = new_id();
/// assert_eq!(id.len(), 36);
/// assert_eq!(&id[14..15], "7", "the version digit");
/// assert_ne!(id, new_id());
/// ```
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The current time as ISO-8601 UTC with second resolution (`2026-05-30T19:00:00Z`), as agmsg writes it.
///
/// ```
/// use agmsg_guest_sdk::ids::now_utc;
///
/// let at = now_utc();
/// assert_eq!(at.len(), "2026-05-30T19:00:00Z".len());
/// assert_eq!(&at[10..11], "T");
/// assert!(at.ends_with('Z'));
/// ```
pub fn now_utc() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn shapes() {
        let id = super::new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "7");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        let at = super::now_utc();
        assert_eq!(at.len(), 20, "{at}");
        assert!(at.ends_with('Z'));
    }
}
