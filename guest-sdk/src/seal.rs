//! Sealing remote-sync push envelopes, through the host (`agmsg:host/seal`, host 1.1.0).
//!
//! A storage driver with the optional `sync` interface reserves local messages for agmsg's relay in
//! `prepare-push`. It does not seal them itself: whoever seals an `age-v1` envelope decides who can read
//! it, and the host seals with the engine's profile, to exactly the engine's recipients, under a fresh
//! wire id, and remembers what it sealed. The driver stores the wire id and the envelope together with
//! its reservation, and answers them byte for byte until the reservation is acknowledged; the host
//! refuses an `age-v1` answer holding an envelope it did not seal. Only during `prepare-push` (and the
//! reading of its answer) does the host seal; any other time the call is refused.
//!
//! ```no_run
//! use agmsg_guest_sdk::seal::{seal, Message};
//!
//! let sealed = seal(&Message {
//!     body: "hi".into(),
//!     created_at: "2026-07-20T06:30:00Z".into(),
//!     from_agent: "alice".into(),
//!     to_agent: "bob".into(),
//! })
//! .expect("sealed");
//! // Store `sealed.wire_id` and `sealed.envelope()` with the reservation, in one commit.
//! let _ = (sealed.wire_id.clone(), sealed.envelope());
//! ```

use crate::bindings::seal as host;
use crate::storage::{DriverError, Envelope};

/// One local message as agmsg projects it; `created_at` as stored (`…:SSZ` or with a fraction).
pub use host::Message;

/// What the host sealed: the wire id and agmsg's envelope fields.
pub use host::Sealed;

/// Why the host did not seal.
pub use host::SealError;

impl Sealed {
    /// The envelope, as a push candidate carries it.
    pub fn envelope(&self) -> Envelope {
        Envelope { v: self.v, cipher: self.cipher.clone(), key_id: self.key_id.clone(), blob: self.blob.clone() }
    }
}

/// Have the host seal `message` for the `prepare-push` in progress.
pub fn seal(message: &Message) -> Result<Sealed, SealError> {
    host::seal(message)
}

impl From<SealError> for DriverError {
    /// agmsg's drivers fail the op (`runtime_error`) when a message cannot be sealed.
    fn from(e: SealError) -> DriverError {
        match e {
            SealError::Malformed(why) => DriverError::runtime(format!("a message cannot be sealed: {why}")),
            SealError::Refused(why) => DriverError::runtime(format!("the host did not seal: {why}")),
        }
    }
}
