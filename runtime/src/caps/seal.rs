//! `agmsg:host/seal`: the host seals a storage driver's remote-sync push envelopes.
//!
//! Whoever seals an `age-v1` envelope chooses who can read what agmsg's relay receives, and nobody
//! without a key can tell a real envelope from one sealed to someone else (or holding the message in
//! the clear behind a well-formed header). So a driver does not seal: it hands the host a message it
//! stores and gets the envelope back. This module is only the door: what sealing means (the profile,
//! the recipients, where the host remembers what it sealed) is the storage layer's [`Sealer`], installed
//! on the instance for the one op that may seal (`prepare-push`) and removed after it. Without one, every
//! call is refused.

use wasmtime::component::{HasSelf, Linker};

use super::wit::seal::{Host, Message, SealError, Sealed, add_to_linker};

pub use super::wit::seal::{Message as SealMessage, SealError as SealFailure, Sealed as SealedMessage};

/// Seals messages for one op: given by the host's storage layer, which knows the op's profile.
pub trait Sealer: Send {
    fn seal(&mut self, message: SealMessage) -> Result<SealedMessage, SealFailure>;
}

/// An instance's sealer, present only while an op that may seal runs.
#[derive(Default)]
pub struct SealCtx {
    sealer: Option<Box<dyn Sealer>>,
}

impl SealCtx {
    /// Install `sealer` for the op about to run, or remove it (`None`) when the op ends.
    pub fn set(&mut self, sealer: Option<Box<dyn Sealer>>) {
        self.sealer = sealer;
    }
}

/// Add `agmsg:host/seal` to a linker whose state projects a [`SealCtx`].
pub fn link<T: 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> &mut SealCtx) -> wasmtime::Result<()> {
    add_to_linker::<T, HasSelf<SealCtx>>(linker, project)
}

impl Host for SealCtx {
    fn seal(&mut self, message: Message) -> Result<Sealed, SealError> {
        match self.sealer.as_mut() {
            Some(sealer) => sealer.seal(message),
            None => Err(SealError::Refused("nothing may be sealed outside a sync prepare-push".into())),
        }
    }
}
