//! A storage driver and its typed calls.
//!
//! Calls go through [`crate::runtime::Driver`] (deadline, output routing, trap mapping, poisoned instances
//! dropped). Driver output is checked here, in one place, before the CLI prints any of it: ids,
//! cursors and names as the contract says, `describe`'s values as one-line tokens and a path inside the
//! store, exported events as `import` would check them.

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use agmsg_contract::{check_name, is_transport_token};
use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::records::{ScanError, check_event, scan_import};
use super::sync::read_state::{self, Prepared, ReadApplyResult, ReadContext, Snapshot};
use super::sync::resync::{self, ResyncReport, ResyncRequest, ResyncResult};
use super::sync::sealing::{Ledger, OpSealer, SealedCheck};
use super::sync::{
    self, ApplyResult, Binding, PageKey, PrepareRequest, Projection, PullLine, PullMessage, PushAck, PushCandidate, ReprocessCandidate,
    ReprocessPage, ReprocessScope, SyncState,
};
use super::world::{self, Call, Offers, Optional, StorageWorld};
use crate::display;
use crate::runtime::sandbox::StoreDir;
use crate::runtime::{Driver, DriverSource, HostState, Runtime};

pub use super::types::{Description, Directive, Event, Message, Pair, ReadMark, ReceiptState, StorageError, StoreFile, Wake, WatchBatch};

/// Limits of `describe`'s values: a name, a capability or a store-file key; the backend text or the
/// store-file path; the number of capabilities.
const MAX_DESCRIBE_TOKEN: usize = 64;
const MAX_DESCRIBE_TEXT: usize = 1024;
const MAX_DESCRIBE_CAPABILITIES: usize = 64;

/// The most blob bytes the host asks of a sync resource per call, and sends in one pull slice: a page
/// of 1,000 envelopes of 1 MiB never sits whole in the host's memory or in one call.
const SYNC_SLICE_BYTES: u32 = 8 << 20;

/// An import or export page's bounds: this many events, or about this many bytes of them
/// ([`event_size`]), whichever comes first, so a page of large bodies never has to fit in the
/// driver's memory at once.
const PAGE_EVENTS: usize = 1000;
const PAGE_BYTES: u64 = 8 << 20;

/// A storage driver, loaded and ready for calls: the host's handle on one store through one driver.
pub struct Storage<'rt> {
    driver: Driver<'rt, StorageWorld>,
    /// The store it is granted (where the host keeps what it sealed for the driver).
    store: StoreDir,
    /// An installed driver: the host seals its remote-sync envelopes and checks what it answers
    /// against them (`sync::sealing`). A bundled one, the host's own code, seals inside.
    host_seals: bool,
}

impl<'rt> Storage<'rt> {
    /// Load a driver for the store `store_dir` (granted when its capabilities include `store`);
    /// instances are created on first call.
    pub fn open(runtime: &'rt Runtime, source: &DriverSource, store_dir: StoreDir) -> Result<Self, StorageError> {
        let driver = Driver::open(runtime, source, Some(store_dir.clone())).map_err(|failure| StorageError::runtime(failure.message))?;
        // By content: a plugin or file with a bundled driver's exact bytes is that driver.
        let bundled = crate::bundled::of(crate::axis::Axis::Storage).any(|d| d.sha256 == source.sha256);
        Ok(Storage { driver, store: store_dir, host_seals: !bundled })
    }

    pub fn name(&self) -> &str {
        self.driver.name()
    }

    /// Run one call into the driver.
    fn call<T>(
        &mut self,
        op: &str,
        f: impl FnOnce(&mut Store<HostState>, &StorageWorld) -> wasmtime::Result<T>,
    ) -> Result<T, StorageError> {
        self.driver.call(op, f).map_err(|failure| StorageError::runtime(failure.message))
    }

    /// A call whose result is the driver's own `result<T, driver-error>`.
    fn op<T>(&mut self, op: &str, f: impl FnOnce(&mut Store<HostState>, &StorageWorld) -> Call<T>) -> Result<T, StorageError> {
        self.call(op, f)?
    }

    fn checked_token(&self, what: &str, token: String) -> Result<String, StorageError> {
        check_token(self.name(), what, token)
    }

    fn checked_messages(&self, messages: Vec<Message>) -> Result<Vec<Message>, StorageError> {
        check_messages(self.name(), messages)
    }

    pub fn check(&mut self) -> Result<(), StorageError> {
        self.op("check", |s, b| b.check(s))
    }

    /// The driver's description, checked: agmsg parses `describe`'s `key=value` lines, so every value is
    /// one printable line (no control or bidi character) of bounded length, the name and capabilities
    /// are tokens, and the store file is a key of its own and a path inside the store.
    ///
    /// The capabilities that name an optional interface are the host's to say, from the component's
    /// exports: what the driver says of them is replaced, so a caller that trusts `capabilities=` (agmsg's
    /// sync engine looks for `stage1-sync`) never calls an op the driver lacks.
    pub fn describe(&mut self) -> Result<Description, StorageError> {
        let d = self.call("describe", |s, b| b.describe(s))?;
        let mut d = self.checked_description(d)?;
        d.capabilities.retain(|c| !Offers::WORDS.contains(&c.as_str()));
        d.capabilities.extend(self.offers().words().into_iter().map(str::to_owned));
        Ok(d)
    }

    fn checked_description(&self, d: Description) -> Result<Description, StorageError> {
        check_description(self.name(), d)
    }

    /// Where the store file of a checked description is: `store_dir` (absolute) joined with its path,
    /// refused if, with the symlinks that exist resolved, it lies outside the store.
    pub fn store_file_path(&self, store_dir: &Path, file: &StoreFile) -> Result<PathBuf, StorageError> {
        store_file_path(self.name(), store_dir, file)
    }

    pub fn init(&mut self) -> Result<(), StorageError> {
        self.op("init", |s, b| b.init(s))
    }

    pub fn store_exists(&mut self) -> Result<bool, StorageError> {
        self.op("store-exists", |s, b| b.store_exists(s))
    }

    pub fn send(&mut self, team: &str, from: &str, to: &str, body: &str) -> Result<String, StorageError> {
        let id = self.op("send", |s, b| b.send(s, team, from, to, body))?;
        self.checked_token("message id", id)
    }

    pub fn list_unread(&mut self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, StorageError> {
        let messages = self.op("list-unread", |s, b| b.list_unread(s, team, agent, limit))?;
        self.checked_messages(messages)
    }

    pub fn mark_read_batch(&mut self, team: &str, agent: &str, ids: &[String]) -> Result<(), StorageError> {
        self.op("mark-read-batch", |s, b| b.mark_read_batch(s, team, agent, ids))
    }

    pub fn read_cursor_get(&mut self, team: &str, agent: &str) -> Result<String, StorageError> {
        let cursor = self.op("read-cursor-get", |s, b| b.read_cursor_get(s, team, agent))?;
        self.checked_token("cursor", cursor)
    }

    pub fn read_cursor_consume(&mut self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), StorageError> {
        self.op("read-cursor-consume", |s, b| b.read_cursor_consume(s, team, agent, cursor, ids))
    }

    /// Make this driver's instance ready for a later op on the same store in this process, and keep it
    /// (a resident server's spare: [`crate::runtime::warm`]): the instance is made, and where the store
    /// exists the driver opens it with a read (`watch-tip` for `team`'s agent `warm`, whose answer is
    /// not used). Creates nothing: a store the driver does not find is left as it is.
    pub fn warm(mut self, team: &str) -> Result<(), StorageError> {
        if self.store_exists()? {
            self.watch_tip(&[Pair { team: team.to_owned(), agent: "warm".to_owned() }])?;
        }
        // Dropped here, and so kept (where instances are kept, dropping a driver keeps its instance).
        Ok(())
    }

    pub fn watch_tip(&mut self, pairs: &[Pair]) -> Result<String, StorageError> {
        let cursor = self.op("watch-tip", |s, b| b.watch_tip(s, pairs))?;
        self.checked_token("cursor", cursor)
    }

    pub fn watch_after(&mut self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, StorageError> {
        let batch = self.op("watch-after", |s, b| b.watch_after(s, cursor, pairs))?;
        check_watch_batch(self.name(), batch)
    }

    /// The optional interfaces the driver exports, found when it was loaded.
    pub fn offers(&self) -> Offers {
        self.driver.world_pre().offers()
    }

    /// The longest wait the host asks of a driver: half its call deadline, so that a driver honouring
    /// the timeout returns well before the deadline would stop it.
    pub fn max_wait(&self) -> Duration {
        self.driver.grants().limits.call_timeout / 2
    }

    /// `live.wait-after`: block until a message to `pairs` may have been written after `cursor`, or
    /// `timeout` (at most [`Storage::max_wait`]) passes. `None`: the driver does not offer it. A driver
    /// that does not return is stopped by the call deadline, as in any op.
    pub fn wait_after(&mut self, cursor: &str, pairs: &[Pair], timeout: Duration) -> Result<Option<Wake>, StorageError> {
        if !self.offers().live {
            return Ok(None);
        }
        let timeout_ms = u32::try_from(timeout.min(self.max_wait()).as_millis()).unwrap_or(u32::MAX);
        self.optional("wait-after", |s, l: &world::live::Exports| l.wait_after(s, cursor, pairs, timeout_ms)).map(Some)
    }

    /// An op of the optional interface `I` (named by its exports' type, `world::sync::Exports`): refused
    /// with `unsupported` (`runtime_error`) when the driver does not export it (its [`Offers`]), else
    /// called.
    fn optional<I: Optional, T>(&mut self, op: &str, f: impl FnOnce(&mut Store<HostState>, &I) -> Call<T>) -> Result<T, StorageError> {
        let interface = I::INTERFACE.split('@').next().unwrap_or(I::INTERFACE);
        if !I::offered(&self.offers()) {
            return Err(StorageError::runtime(format!(
                "unsupported: driver '{}' does not offer {op} (the optional {interface} interface)",
                self.name()
            )));
        }
        self.op(op, |s, w| match I::of(w) {
            Some(exports) => f(s, exports),
            None => Err(wasmtime::format_err!("the instance lost its {interface} exports")),
        })
    }

    /// `receipts.record-receipts`: `agent` of `team` was handed `ids`, with `evidence`.
    pub fn record_receipts(&mut self, team: &str, agent: &str, evidence: &str, ids: &[String]) -> Result<(), StorageError> {
        self.optional("record-receipts", |s, r: &world::receipts::Exports| r.record_receipts(s, team, agent, evidence, ids))
    }

    /// `receipts.receipt-status`: what the store knows of message `id`'s hand-off.
    pub fn receipt_status(&mut self, team: &str, id: &str) -> Result<ReceiptState, StorageError> {
        self.optional("receipt-status", |s, r: &world::receipts::Exports| r.receipt_status(s, team, id))
    }

    /// `rename.rename-agent`.
    pub fn rename_agent(&mut self, team: &str, old: &str, new: &str) -> Result<(), StorageError> {
        self.optional("rename-agent", |s, r: &world::rename::Exports| r.rename_agent(s, team, old, new))
    }

    /// `rename.rename-team`, on the new team's store.
    pub fn rename_team(&mut self, old: &str, new: &str) -> Result<(), StorageError> {
        self.optional("rename-team", |s, r: &world::rename::Exports| r.rename_team(s, old, new))
    }

    /// `purge.purge-store`: delete everything the granted store holds.
    pub fn purge_store(&mut self) -> Result<(), StorageError> {
        self.optional("purge-store", |s, p: &world::purge::Exports| p.purge_store(s))
    }

    /// `sync.prepare-push`: reserve and seal up to `limit` messages, then hand `on_state` the state and
    /// `on_candidate` every unacknowledged reservation in local order, read from the driver a bounded
    /// slice at a time (so a page of large envelopes is never whole in the host's memory either).
    pub fn sync_prepare_push(
        &mut self,
        b: &Binding,
        limit: u32,
        request: &PrepareRequest,
        on_state: impl FnOnce(&SyncState) -> Result<(), StorageError>,
        mut on_candidate: impl FnMut(&PushCandidate) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        const OP: &str = "sync-prepare-push";
        // The host seals for the whole op (a driver may seal while its answer is read) and for no other.
        let ledger = Ledger::new(&self.store, b);
        let sealer = OpSealer::new(b, request, ledger.clone());
        let mut sealed = self.host_seals.then(|| SealedCheck::new(ledger));
        let name = self.name().to_owned();
        let refused = |e: String| answered(&name, e);
        let result = (|| {
            let (state, candidates) = self.optional(OP, |s, y: &world::sync::Exports| {
                s.data_mut().set_sealer(Some(Box::new(sealer)));
                y.prepare_push(s, b, limit, request)
            })?;
            let result = sync::check_state(&state).map_err(refused).and_then(|()| on_state(&state)).and_then(|()| {
                self.sync_slices(
                    OP,
                    limit,
                    |s, y| y.push_candidates_page(s, candidates, SYNC_SLICE_BYTES),
                    |c| {
                        // Its shape first (the clearer refusal), then whether the host sealed it.
                        sync::check_candidate(c, request).map_err(refused)?;
                        if let Some(sealed) = sealed.as_mut() {
                            sealed.check(c).map_err(|e| StorageError::runtime(format!("driver '{name}' {}", e.message)))?;
                        }
                        on_candidate(c)
                    },
                )
            });
            self.drop_resource(candidates);
            result
        })();
        self.driver.cleanup(|s| {
            s.data_mut().set_sealer(None);
            Ok(())
        });
        result
    }

    /// Read a sync answer's resource to its end, a slice per call (`next`), each item to `each`;
    /// refused once it holds more than `limit` items.
    fn sync_slices<T>(
        &mut self,
        op: &str,
        limit: u32,
        next: impl Fn(&mut Store<HostState>, &world::sync::Exports) -> Call<Vec<T>>,
        mut each: impl FnMut(&T) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut seen = 0u64;
        // The whole answer is bounded, as an export is: each slice has the call deadline, but a driver
        // answering one item per slice just inside it would hold agmsg's engine for `limit` deadlines.
        let started = std::time::Instant::now();
        let op_timeout = self.driver.grants().limits.op_timeout;
        loop {
            let slice = self.optional(op, &next)?;
            if slice.is_empty() {
                return Ok(());
            }
            if started.elapsed() > op_timeout {
                return Err(StorageError::runtime(format!(
                    "driver '{}' was still answering {op} after {} ms (AGMSG_OP_TIMEOUT_MS); stopped",
                    self.name(),
                    op_timeout.as_millis()
                )));
            }
            seen += slice.len() as u64;
            if seen > u64::from(limit) {
                return Err(StorageError::runtime(format!("driver '{}' answered {op} with more than {limit} items", self.name())));
            }
            slice.iter().try_for_each(&mut each)?;
        }
    }

    /// `sync.reconcile-push`: record `acks` at once (a batch refused, or conflicts kept beside the valid
    /// acks, as the WIT's `reconcile-push` says for each driver); the push cursor.
    pub fn sync_reconcile_push(&mut self, b: &Binding, acks: &[PushAck]) -> Result<i64, StorageError> {
        let cursor = self.optional("sync-reconcile-push", |s, y: &world::sync::Exports| y.reconcile_push(s, b, acks))?;
        // An acknowledged reservation is never answered again: the host forgets what it sealed for it.
        if self.host_seals {
            Ledger::new(&self.store, b).forget(&acks.iter().map(|a| a.wire_id.as_str()).collect())?;
        }
        Ok(cursor)
    }

    /// `sync.apply-pull`: stage every message `lines` yields, in slices, then commit the page with its
    /// one cursor, wherever in the page it stands (as agmsg's sqlite driver takes it). A bad line, a
    /// missing or second cursor, or any failure drops the page uncommitted: nothing of it stays.
    pub fn sync_apply_pull(
        &mut self,
        b: &Binding,
        lines: impl Iterator<Item = Result<PullLine, StorageError>>,
    ) -> Result<ApplyResult, StorageError> {
        const OP: &str = "sync-apply-pull";
        let page = self.optional(OP, |s, y: &world::sync::Exports| y.apply_pull(s, b))?;
        // What the page held, to check the driver's outcomes against.
        let mut sent = sync::PageSent::default();
        let lines = lines.inspect(|line| {
            if let Ok(line) = line {
                sent.note(line)
            }
        });
        let result = (|| {
            let mut slice = Vec::new();
            let mut slice_bytes = 0u64;
            let mut cursor = None;
            for line in lines {
                match line? {
                    PullLine::Cursor(_) if cursor.is_some() => {
                        return Err(StorageError::runtime("apply-pull: a second sync_pull_cursor record"));
                    }
                    PullLine::Cursor(next_after) => cursor = Some(next_after),
                    PullLine::Message(message) => {
                        slice_bytes += pull_message_size(&message);
                        slice.push(*message);
                        if slice_bytes >= u64::from(SYNC_SLICE_BYTES) {
                            let full = std::mem::take(&mut slice);
                            slice_bytes = 0;
                            self.optional(OP, |s, y: &world::sync::Exports| y.pull_page_push(s, page, full))?;
                        }
                    }
                }
            }
            let next_after = cursor.ok_or_else(|| StorageError::runtime("apply-pull: no sync_pull_cursor record ends the page"))?;
            if !slice.is_empty() {
                self.optional(OP, |s, y: &world::sync::Exports| y.pull_page_push(s, page, slice))?;
            }
            self.optional(OP, |s, y: &world::sync::Exports| y.pull_page_commit(s, page, &next_after))
        })();
        self.drop_resource(page);
        let result = result?;
        sync::check_apply_result(&result, &sent).map_err(|e| self.answered(e))?;
        Ok(result)
    }

    /// A driver's answer the spec refuses (agmsg's engine would take it as given): never printed.
    fn answered(&self, e: String) -> StorageError {
        answered(self.name(), e)
    }

    /// `sync.reprocess`: one keyset page of quarantined envelopes: `on_state` gets the state,
    /// `on_candidate` each candidate (read in slices); the page's trailer is returned.
    pub fn sync_reprocess(
        &mut self,
        b: &Binding,
        limit: u32,
        after: Option<&PageKey>,
        scope: ReprocessScope,
        on_state: impl FnOnce(&SyncState) -> Result<(), StorageError>,
        mut on_candidate: impl FnMut(&ReprocessCandidate) -> Result<(), StorageError>,
    ) -> Result<ReprocessPage, StorageError> {
        const OP: &str = "sync-reprocess";
        let (page, candidates) = self.optional(OP, |s, y: &world::sync::Exports| y.reprocess(s, b, limit, after, scope))?;
        let name = self.name().to_owned();
        let refused = |e: String| answered(&name, e);
        let result = sync::check_state(&page.state).map_err(refused).and_then(|()| on_state(&page.state)).and_then(|()| {
            self.sync_slices(
                OP,
                limit,
                |s, y| y.reprocess_candidates_page(s, candidates, SYNC_SLICE_BYTES),
                |c| sync::check_reprocess_candidate(c, scope).map_err(refused).and_then(|()| on_candidate(c)),
            )
        });
        self.drop_resource(candidates);
        result?;
        sync::check_reprocess_page(&page).map_err(|e| self.answered(e))?;
        Ok(page)
    }

    /// `resync.resync-status`: read only; `None` for a binding the store does not have.
    pub fn sync_resync_status(&mut self, b: &Binding, accepted_floor: &str) -> Result<Option<ResyncReport>, StorageError> {
        let report = self.optional("sync-resync-status", |s, r: &world::resync::Exports| r.resync_status(s, b, accepted_floor))?;
        if let Some(report) = &report {
            resync::check_report(report, accepted_floor).map_err(|e| self.answered(e))?;
        }
        Ok(report)
    }

    /// `resync.resync`: record the accepted gap and move the transport cursor, in one transaction.
    pub fn sync_resync(&mut self, b: &Binding, request: &ResyncRequest) -> Result<ResyncResult, StorageError> {
        let result = self.optional("sync-resync", |s, r: &world::resync::Exports| r.resync(s, b, request))?;
        resync::check_result(&result, request).map_err(|e| self.answered(e))?;
        Ok(result)
    }

    /// `read-state.prepare`.
    pub fn sync_prepare_read_state(&mut self, b: &Binding, context: &ReadContext) -> Result<Prepared, StorageError> {
        let prepared = self.optional("sync-prepare-read-state", |s, r: &world::read_state::Exports| r.prepare(s, b, context))?;
        read_state::check_prepared(&prepared, context).map_err(|e| self.answered(e))?;
        Ok(prepared)
    }

    /// `read-state.apply`.
    pub fn sync_apply_read_state(&mut self, b: &Binding, page: &Snapshot) -> Result<ReadApplyResult, StorageError> {
        let result = self.optional("sync-apply-read-state", |s, r: &world::read_state::Exports| r.apply(s, b, page))?;
        read_state::check_apply_result(&result, page).map_err(|e| self.answered(e))?;
        Ok(result)
    }

    /// `read-state.block` (`unblock` when `block` is false).
    pub fn sync_block_read_state(&mut self, b: &Binding, member_id: &str, block: bool) -> Result<(), StorageError> {
        let op = if block { "sync-block-read-state" } else { "sync-unblock-read-state" };
        self.optional(op, |s, r: &world::read_state::Exports| if block { r.block(s, b, member_id) } else { r.unblock(s, b, member_id) })
    }

    pub fn history(&mut self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, StorageError> {
        let messages = self.op("history", |s, b| b.history(s, team, agent, limit))?;
        self.checked_messages(messages)
    }

    pub fn compact(&mut self) -> Result<(), StorageError> {
        self.op("compact", |s, b| b.compact(s))
    }

    /// Stream the whole v1 event log, page by page, to `sink`; every event is checked as `import` checks
    /// it ([`check_event`]).
    pub fn export_events(&mut self, mut sink: impl FnMut(&[Event]) -> Result<(), StorageError>) -> Result<(), StorageError> {
        // Pages are bounded by bytes as well as count: the driver builds a whole page in its memory, so
        // a page of 1,000 large bodies would pass its cap. The driver only takes a count, so the first
        // page is small and each next one is sized from the last one's bytes per event.
        const FIRST_PAGE: u32 = 16;
        let mut max = FIRST_PAGE;
        let limits = self.driver.runtime().limits;
        let started = std::time::Instant::now();
        let exporter = self.op("export", |s, b| b.export_events(s))?;
        let mut exported = 0u64;
        let mut bytes = 0u64;
        let result = (|| loop {
            let page = self.op("export", |s, b| b.next_page(s, exporter, max))?;
            if page.is_empty() {
                return Ok(());
            }
            // The whole export is bounded too: each call has a deadline, but an exporter that never
            // ends would otherwise run (and fill the disk or memory) for ever.
            let page_bytes = page.iter().map(event_size).sum::<u64>();
            bytes += page_bytes;
            if bytes > limits.max_export_bytes {
                return Err(StorageError::runtime(format!(
                    "driver '{}' exported more than {} MiB (AGMSG_EXPORT_MAX_MB); stopped",
                    self.name(),
                    limits.max_export_bytes >> 20
                )));
            }
            if started.elapsed() > limits.op_timeout {
                return Err(StorageError::runtime(format!(
                    "driver '{}' was still exporting after {} ms (AGMSG_OP_TIMEOUT_MS); stopped",
                    self.name(),
                    limits.op_timeout.as_millis()
                )));
            }
            if page.len() > max as usize {
                return Err(StorageError::runtime(format!("driver '{}' returned an oversized export page", self.name())));
            }
            // An export is an import file: each event passes the rules `import` applies, or the export
            // fails here, before the sink writes it.
            for event in &page {
                exported += 1;
                check_event(event).map_err(|e| {
                    StorageError::runtime(format!(
                        "driver '{}' exported an event that import would refuse (event {exported}): {e}",
                        self.name()
                    ))
                })?;
            }
            sink(&page)?;
            max = (PAGE_BYTES / (page_bytes / page.len() as u64).max(1)).clamp(1, PAGE_EVENTS as u64) as u32;
        })();
        self.drop_resource(exporter);
        result
    }

    /// Apply `events` all or nothing.
    /// Export the store's event log to `file`, atomically: a failure or a kill leaves the target as it
    /// was and no temporary file behind.
    pub fn export_to_file(&mut self, file: &Path) -> Result<(), StorageError> {
        let io_error = |e: std::io::Error| StorageError::runtime(format!("export failed: {}: {e}", file.display()));
        crate::atomic_file::write_atomically(file, io_error, |writer| {
            self.export_events(|page| {
                for event in page {
                    writeln!(writer, "{}", super::records::event_line(event)).map_err(io_error)?;
                }
                Ok(())
            })
        })
    }

    /// Import the v1 event log in `file`, all or nothing, in bounded memory: a first pass reads and
    /// checks every line (a bad one fails the import, naming its number, before the driver sees
    /// anything); a second pass reads the file again and streams its events to the driver in pages,
    /// which stages them until the commit. Returns how many events the file held.
    pub fn import_file(&mut self, file: &Path) -> Result<u64, StorageError> {
        const PAGE: usize = PAGE_EVENTS;
        let open = || {
            std::fs::File::open(file)
                .map(|f| std::io::BufReader::with_capacity(1 << 16, f))
                .map_err(|e| StorageError::runtime(format!("import failed: cannot read {}: {e}", file.display())))
        };
        let refused = |e: ScanError<StorageError>| match e {
            ScanError::Visit(e) => StorageError { message: format!("import failed; nothing was imported: {}", e.message), ..e },
            other => StorageError::runtime(format!("import failed: {}: {other}; nothing was imported", file.display())),
        };
        let checked = scan_import(open()?, |_| Ok::<(), StorageError>(())).map_err(refused)?;
        let mut import = self.begin_import().map_err(|e| refused(ScanError::Visit(e)))?;
        let mut page = Vec::with_capacity(PAGE);
        let mut page_bytes = 0u64;
        let staged = scan_import(open()?, |event| {
            page_bytes += event_size(&event);
            page.push(event);
            if page.len() == PAGE || page_bytes >= PAGE_BYTES {
                page_bytes = 0;
                import.push_page(std::mem::replace(&mut page, Vec::with_capacity(PAGE)))?;
            }
            Ok(())
        })
        .map_err(refused)?;
        if staged != checked {
            // Dropping the import rolls it back.
            return Err(StorageError::runtime(format!(
                "import failed: {} changed while it was imported ({checked} events, then {staged}); nothing was imported",
                file.display()
            )));
        }
        if !page.is_empty() {
            import.push_page(page).map_err(|e| refused(ScanError::Visit(e)))?;
        }
        import.commit().map_err(|e| refused(ScanError::Visit(e)))?;
        Ok(staged)
    }

    pub fn import_events(&mut self, events: &[Event]) -> Result<(), StorageError> {
        let mut import = self.begin_import()?;
        import.push(events)?;
        import.commit()
    }

    /// Start an import: pages pushed into it are staged, all or nothing, until [`Import::commit`];
    /// dropped without a commit, it rolls back. Lets a caller stream events in (a convert) without
    /// holding them all.
    pub fn begin_import(&mut self) -> Result<Import<'_, 'rt>, StorageError> {
        let importer = self.op("import", |s, b| b.import_events(s))?;
        Ok(Import { driver: self, importer })
    }

    fn drop_resource(&mut self, resource: ResourceAny) {
        self.driver.cleanup(|store| resource.resource_drop(store));
    }
}

// ---- the checks of what a driver answers, as plain functions (the fuzz targets call them) ----

fn malformed(driver: &str, what: &str, value: &str) -> StorageError {
    StorageError::runtime(format!("driver '{driver}' returned a malformed {what}: {value:?}"))
}

/// A message id, timestamp or cursor driver `driver` answered: one transport token (agmsg reads it as
/// one word of one line).
pub fn check_token(driver: &str, what: &str, token: String) -> Result<String, StorageError> {
    if is_transport_token(&token) { Ok(token) } else { Err(malformed(driver, what, &token)) }
}

/// The messages driver `driver` answered (list-unread, history, a watch's batch): ids and timestamps
/// are tokens, team, sender and recipient names.
pub fn check_messages(driver: &str, messages: Vec<Message>) -> Result<Vec<Message>, StorageError> {
    for m in &messages {
        if !is_transport_token(&m.id) {
            return Err(malformed(driver, "message id", &m.id));
        }
        if !is_transport_token(&m.at) {
            return Err(malformed(driver, "timestamp", &m.at));
        }
        for (what, name) in [("team", &m.team), ("sender", &m.from), ("recipient", &m.to)] {
            if check_name(what, name).is_err() {
                return Err(malformed(driver, what, name));
            }
        }
    }
    Ok(messages)
}

/// A watch's batch driver `driver` answered: its messages ([`check_messages`]) and its cursor
/// ([`check_token`]), as `watch-after` checks them.
pub fn check_watch_batch(driver: &str, batch: WatchBatch) -> Result<WatchBatch, StorageError> {
    Ok(WatchBatch { messages: check_messages(driver, batch.messages)?, cursor: check_token(driver, "cursor", batch.cursor)? })
}

/// Driver `driver`'s description, checked (see [`Storage::describe`]).
pub fn check_description(driver: &str, d: Description) -> Result<Description, StorageError> {
    let refuse = |what: &str, value: &str, why: &str| {
        StorageError::runtime(format!("driver '{driver}' returned a malformed describe {what} {value:?}: {why}"))
    };
    let token = |what: &str, value: &str, max: usize| {
        if value.is_empty() || value.contains(char::is_whitespace) || value.contains(',') || !display::is_printable_line(value, max) {
            return Err(refuse(what, value, &format!("expected 1 to {max} printable characters, no whitespace or ','")));
        }
        Ok(())
    };
    token("name", &d.name, MAX_DESCRIBE_TOKEN)?;
    if !display::is_printable_line(&d.backend, MAX_DESCRIBE_TEXT) {
        return Err(refuse("backend", &d.backend, &format!("expected one printable line of at most {MAX_DESCRIBE_TEXT} characters")));
    }
    if d.capabilities.len() > MAX_DESCRIBE_CAPABILITIES {
        return Err(StorageError::runtime(format!(
            "driver '{driver}' returned a malformed describe: {} capabilities (at most {MAX_DESCRIBE_CAPABILITIES})",
            d.capabilities.len()
        )));
    }
    for capability in &d.capabilities {
        token("capability", capability, MAX_DESCRIBE_TOKEN)?;
    }
    if let Some(file) = &d.store_file {
        let key_ok = !file.key.is_empty()
            && file.key.len() <= MAX_DESCRIBE_TOKEN
            && file.key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && !["name", "backend", "capabilities"].contains(&file.key.as_str());
        if !key_ok {
            return Err(refuse("store-file key", &file.key, "expected [A-Za-z0-9_-]+, not name, backend or capabilities"));
        }
        let path = std::path::Path::new(&file.path);
        let inside = !file.path.is_empty()
            && display::is_printable_line(&file.path, MAX_DESCRIBE_TEXT)
            && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
            && path.components().any(|c| matches!(c, Component::Normal(_)));
        if !inside {
            return Err(refuse("store-file path", &file.path, "expected a path relative to the store, inside it"));
        }
    }
    Ok(d)
}

/// Where the store file of a checked description is (see [`Storage::store_file_path`]).
pub fn store_file_path(driver: &str, store_dir: &Path, file: &StoreFile) -> Result<PathBuf, StorageError> {
    let path = store_dir.join(&file.path);
    let outside = || {
        StorageError::runtime(format!(
            "driver '{driver}' returned a malformed describe store-file path {:?}: it lies outside the store",
            file.path
        ))
    };
    if !path.starts_with(store_dir) {
        return Err(outside());
    }
    if let Ok(root) = std::fs::canonicalize(store_dir) {
        // The deepest part of the path that exists, resolved.
        let resolved = path.ancestors().find_map(|p| std::fs::canonicalize(p).ok().map(|r| (p, r)));
        if let Some((existing, resolved)) = resolved
            && existing.starts_with(store_dir)
            && !resolved.starts_with(&root)
        {
            return Err(outside());
        }
    }
    Ok(path)
}

/// `driver` answered a value the spec refuses (`e` says which): the op fails, and nothing of the answer
/// is printed.
fn answered(driver: &str, e: String) -> StorageError {
    StorageError::runtime(format!("driver '{driver}' answered {e}"))
}

/// An import being staged in a driver (see [`Storage::begin_import`]).
pub struct Import<'d, 'rt> {
    driver: &'d mut Storage<'rt>,
    importer: ResourceAny,
}

impl Import<'_, '_> {
    /// Stage `events` (sent to the driver in pages bounded by count and bytes).
    pub fn push(&mut self, events: &[Event]) -> Result<(), StorageError> {
        let mut rest = events;
        while !rest.is_empty() {
            let mut bytes = 0u64;
            let mut take = 0;
            while take < rest.len().min(PAGE_EVENTS) && (take == 0 || bytes < PAGE_BYTES) {
                bytes += event_size(&rest[take]);
                take += 1;
            }
            let (page, more) = rest.split_at(take);
            self.push_page(page.to_vec())?;
            rest = more;
        }
        Ok(())
    }

    /// Stage one page of at most 1000 events, taken by value (nothing copied on the way to the driver).
    pub fn push_page(&mut self, page: Vec<Event>) -> Result<(), StorageError> {
        let importer = self.importer;
        self.driver.op("import", |s, b| b.push_page(s, importer, page))
    }

    /// Publish everything staged, at once.
    pub fn commit(self) -> Result<(), StorageError> {
        let importer = self.importer;
        self.driver.op("import", |s, b| b.commit(s, importer))
    }
}

impl Drop for Import<'_, '_> {
    fn drop(&mut self) {
        self.driver.drop_resource(self.importer);
    }
}

/// An event's size as the strings it carries (what an export writes, give or take the JSON around it).
fn event_size(event: &Event) -> u64 {
    let fields: &[&str] = match event {
        Event::MessageSent(m) => &[&m.id, &m.team, &m.from, &m.to, &m.body, &m.at],
        Event::MessageRead(r) => &[&r.id, &r.msg_id, &r.team, &r.agent, &r.at],
    };
    fields.iter().map(|f| f.len() as u64 + 16).sum()
}

/// A pulled message's size as the strings it carries (what one pull slice is bounded by).
fn pull_message_size(m: &PullMessage) -> u64 {
    let body = match &m.projection {
        Some(Projection::Message(chat)) => chat.body.len(),
        _ => 0,
    };
    (m.envelope.blob.len() + body + 256) as u64
}
