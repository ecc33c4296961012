//! Who seals a remote-sync push envelope, and how the host knows an envelope is one it sealed.
//!
//! An `age-v1` envelope decides who can read what agmsg's relay receives, and no check from outside can
//! tell a real one from one sealed also (or only) to a stranger's key, or from the message in the clear
//! behind a well-formed age header. So an installed driver never seals: during its `prepare-push` it
//! calls `agmsg:host/seal` ([`OpSealer`]), and the host seals the message it is handed with the engine's
//! profile, to exactly the engine's recipients, under a fresh wire id. Before the driver sees the
//! envelope, the host records it in the store's [`Ledger`] (in the host's own directory of the store,
//! which no driver's view of the store shows). A reservation is replayed byte for byte until it is
//! acknowledged, so on every answer the host looks each `age-v1` candidate up there, and refuses the
//! whole answer if one is not: nothing the driver made reaches the engine. Acknowledged reservations are
//! never answered again, so reconcile forgets them.
//!
//! The bundled drivers are the host's own code: they seal inside, with the same sealer
//! (`agmsg-sync-seal`), so that reservations agmsg's own driver sealed in a store replay unchanged.
//! `none` is agmsg's plaintext profile: the relay reads it by definition, and it is taken as agmsg
//! defines it (its shape checked by [`super::check_candidate`]).

use std::collections::HashSet;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::AsFd;

use agmsg_sync_seal as seal;
use sha2::{Digest, Sha256};

use super::{Binding, Envelope, PrepareRequest, PushCandidate, WriteProfile};
use crate::fsroot;
use crate::runtime::caps::seal::{SealFailure, SealMessage, SealedMessage};
use crate::runtime::sandbox::{Sealer, StoreDir};
use crate::storage::StorageError;

/// The ledger of a store, per binding, in the host's directory of the store.
const LEDGER_DIR: &str = "sealed";
/// A ledger larger than this is refused rather than read (it holds one line of ~100 bytes per
/// unacknowledged reservation: agmsg reserves at most 1,000 per prepare).
const MAX_LEDGER_BYTES: u64 = 64 << 20;

/// The envelopes the host sealed for one binding's unacknowledged reservations, as `<wire id> <digest>`
/// lines in `.agmsg-host/sealed/<server>.<remote>.v<protocol>`. Appends and rewrites take an exclusive
/// `flock` on `.lock` beside it, so concurrent ops on one store never lose a line.
#[derive(Clone, Debug)]
pub struct Ledger {
    store: StoreDir,
    file: String,
}

/// `sha256` of an envelope's fields, each length-prefixed: what the ledger holds of an envelope.
fn digest(wire_id: &str, e: &Envelope) -> String {
    let mut h = Sha256::new();
    for part in [wire_id, &e.v.to_string(), &e.cipher, e.key_id.as_deref().unwrap_or(""), &e.blob] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn ledger_error(what: &str, e: impl std::fmt::Display) -> StorageError {
    StorageError::runtime(format!("the host's record of the envelopes it sealed: {what}: {e}"))
}

impl Ledger {
    /// The ledger of `b` in `store` (nothing is created until something is recorded).
    pub fn new(store: &StoreDir, b: &Binding) -> Ledger {
        // The binding's three values are checked UUIDs and digits (`parse_binding`): a plain file name.
        Ledger { store: store.clone(), file: format!("{}.{}.v{}", b.server_instance_id, b.remote_team_id, b.protocol_version) }
    }

    /// Its directory, created when `create`; `None` when missing.
    fn dir(&self, create: bool) -> Result<Option<fsroot::Dir>, StorageError> {
        self.store.host_dir(LEDGER_DIR, create).map_err(|e| ledger_error("cannot open its directory", e))
    }

    /// Hold the ledger's lock in `dir` while `f` runs.
    fn locked<T>(dir: &fsroot::Dir, f: impl FnOnce() -> Result<T, StorageError>) -> Result<T, StorageError> {
        let lock = dir.open_append(".lock", 0o600).map_err(|e| ledger_error("cannot open its lock", e))?;
        rustix::fs::flock(lock.as_fd(), rustix::fs::FlockOperation::LockExclusive).map_err(|e| ledger_error("cannot lock it", e))?;
        f()
    }

    /// Record that the host sealed `envelope` under `wire_id`, durably, before anyone else sees it.
    pub fn record(&self, wire_id: &str, envelope: &Envelope) -> Result<(), StorageError> {
        let line = format!("{wire_id} {}\n", digest(wire_id, envelope));
        let dir = self.dir(true)?.expect("created");
        Self::locked(&dir, || {
            let mut file = dir.open_append(&self.file, 0o600).map_err(|e| ledger_error("cannot open it", e))?;
            file.write_all(line.as_bytes()).and_then(|()| file.sync_data()).map_err(|e| ledger_error("cannot write it", e))
        })
    }

    /// Every `<wire id> <digest>` line it holds.
    fn lines(&self) -> Result<HashSet<String>, StorageError> {
        let Some(dir) = self.dir(false)? else {
            return Ok(HashSet::new());
        };
        Self::lines_in(&dir, &self.file)
    }

    fn lines_in(dir: &fsroot::Dir, name: &str) -> Result<HashSet<String>, StorageError> {
        let file = match dir.open_regular(name) {
            Ok(file) => file,
            Err(fsroot::Error { why: fsroot::Why::Missing, .. }) => return Ok(HashSet::new()),
            Err(e) => return Err(ledger_error("cannot open it", e)),
        };
        let size = file.metadata().map_err(|e| ledger_error("cannot read it", e))?.len();
        if size > MAX_LEDGER_BYTES {
            return Err(ledger_error("refusing to read it", format!("it is {size} bytes, more than {MAX_LEDGER_BYTES}")));
        }
        BufReader::new(file).lines().collect::<io::Result<HashSet<String>>>().map_err(|e| ledger_error("cannot read it", e))
    }

    /// Forget the envelopes of `wire_ids` (their reservations are acknowledged: never answered again).
    pub fn forget(&self, wire_ids: &HashSet<&str>) -> Result<(), StorageError> {
        let Some(dir) = self.dir(false)? else {
            return Ok(());
        };
        Self::locked(&dir, || {
            let held = Self::lines_in(&dir, &self.file)?;
            if !held.iter().any(|line| wire_ids.contains(line.split(' ').next().unwrap_or(""))) {
                return Ok(());
            }
            let kept: Vec<&String> = held.iter().filter(|line| !wire_ids.contains(line.split(' ').next().unwrap_or(""))).collect();
            dir.write_atomically(
                &self.file,
                |e| ledger_error("cannot rewrite it", e),
                |out| kept.iter().try_for_each(|line| writeln!(out, "{line}")).map_err(|e| ledger_error("cannot rewrite it", e)),
            )
        })
    }
}

/// What one answer's `age-v1` candidates are checked against: the ledger, read once (and once more
/// when a candidate is missing, since the driver may seal while its answer is read).
pub struct SealedCheck {
    ledger: Ledger,
    known: Option<HashSet<String>>,
}

impl SealedCheck {
    pub fn new(ledger: Ledger) -> SealedCheck {
        SealedCheck { ledger, known: None }
    }

    /// Whether `c`, if it is an `age-v1` envelope, is one the host sealed under its wire id.
    pub fn check(&mut self, c: &PushCandidate) -> Result<(), StorageError> {
        if c.envelope.cipher != "age-v1" {
            return Ok(());
        }
        let line = format!("{} {}", c.wire_id, digest(&c.wire_id, &c.envelope));
        if self.known.as_ref().is_some_and(|known| known.contains(&line)) {
            return Ok(());
        }
        let known = self.ledger.lines()?;
        let found = known.contains(&line);
        self.known = Some(known);
        if found {
            Ok(())
        } else {
            Err(StorageError::runtime(format!(
                "answered an age-v1 envelope for wire id {} that the host did not seal (an installed driver seals through \
                 agmsg:host/seal, never by itself); nothing was printed",
                c.wire_id
            )))
        }
    }
}

/// `agmsg:host/seal` for one `prepare-push`: the engine's profile and recipients, the binding's
/// team, and the ledger each `age-v1` envelope is recorded in before the driver gets it.
pub struct OpSealer {
    remote_team_id: String,
    protocol_version: u32,
    request: PrepareRequest,
    ledger: Ledger,
}

impl OpSealer {
    pub fn new(b: &Binding, request: &PrepareRequest, ledger: Ledger) -> OpSealer {
        OpSealer {
            remote_team_id: b.remote_team_id.clone(),
            protocol_version: b.protocol_version.parse().unwrap_or(0),
            request: request.clone(),
            ledger,
        }
    }

    fn seal_one(&self, m: &SealMessage) -> Result<(String, Envelope), SealFailure> {
        let wire_id = uuid::Uuid::new_v4().hyphenated().to_string();
        let created_at = seal::canonical_created_at(&m.created_at);
        let message = seal::Message { body: &m.body, created_at: &created_at, from_agent: &m.from_agent, to_agent: &m.to_agent };
        let (cipher, key_id, recipients): (&str, Option<&str>, &[String]) = match &self.request.profile {
            WriteProfile::None => ("none", None, &[]),
            WriteProfile::AgeV1 { key_id, recipients } => ("age-v1", Some(key_id), recipients),
        };
        let request = seal::SealRequest {
            envelope_v: self.request.envelope_v,
            cipher,
            key_id,
            recipients,
            max_blob_bytes: self.request.max_blob_bytes,
            team_id: &self.remote_team_id,
            wire_id: &wire_id,
            protocol_version: self.protocol_version,
        };
        let sealed = seal::seal(&message, &request).map_err(|e| match e.state {
            seal::SealState::Malformed => SealFailure::Malformed(e.to_string()),
            seal::SealState::UnsupportedCipher => SealFailure::Refused(e.to_string()),
        })?;
        let envelope = Envelope { v: sealed.v, cipher: sealed.cipher, key_id: sealed.key_id, blob: sealed.blob };
        Ok((wire_id, envelope))
    }
}

impl Sealer for OpSealer {
    fn seal(&mut self, message: SealMessage) -> Result<SealedMessage, SealFailure> {
        let (wire_id, envelope) = self.seal_one(&message)?;
        if envelope.cipher == "age-v1" {
            self.ledger.record(&wire_id, &envelope).map_err(|e| SealFailure::Refused(e.to_string()))?;
        }
        Ok(SealedMessage { wire_id, v: envelope.v, cipher: envelope.cipher, key_id: envelope.key_id, blob: envelope.blob })
    }
}
