//! Write agmsg drivers in Rust: WebAssembly components (`wasm32-wasip2`) that `agmsg-host` loads into
//! its sandbox.
//!
//! A driver implements one axis of agmsg's driver contract, storage or terminal. You write a `cdylib`
//! crate, implement that axis' trait, register the type with the axis' export macro, and build for
//! `wasm32-wasip2`. The SDK does the rest: it generates the component's exports, checks every team and
//! agent name before your code sees it, and turns each of the host's calls into a call on your trait.
//!
//! # The axes
//!
//! Every axis is always built; what a component exports is decided by the export macro it invokes: it
//! exports that one axis' world and nothing of the others. (The `storage`, `terminal` and `agent` cargo
//! features are still accepted, for drivers that name them, and change nothing.)
//!
//! | axis       | trait and export macro                                  | host helpers                       |
//! |------------|---------------------------------------------------------|------------------------------------|
//! | storage    | `storage::StorageDriver`, `export_storage_driver!`      | `lock` (`StoreLock`), `file_lock`  |
//! | (optional) | `storage::LiveDriver`, `export_storage_live!`           |                                    |
//! | (optional) | `storage::ReceiptsDriver`, `export_storage_receipts!`   |                                    |
//! | (optional) | `storage::RenameDriver`, `export_storage_rename!`       |                                    |
//! | (optional) | `storage::SyncDriver`, `export_storage_sync!`           |                                    |
//! | (optional) | `storage::ResyncDriver`, `export_storage_resync!`       |                                    |
//! | (optional) | `storage::ReadStateDriver`, `export_storage_read_state!` |                                   |
//! | (optional) | `storage::PurgeDriver`, `export_storage_purge!`         |                                    |
//! | terminal   | `terminal::TerminalDriver`, `export_terminal_driver!`   | `process`                          |
//! | agent      | `agent::DeliveryPlug`, `export_agent_plug!`             |                                    |
//! | every one  |                                                         | `log`, `ids`, name rules, `STORE_DIR` |
//!
//! A driver crate invokes exactly one of the axes' export macros; a storage driver that can wake
//! watchers also invokes `export_storage_live!` (see `storage::LiveDriver`). (An `agent` plug is an agent type's
//! delivery plug, agmsg's `_delivery.sh` as a component: see the `agent` module.)
//!
//!
//! `Cargo.toml` of a driver:
//!
//! ```toml
//! [package]
//! name = "my-store"
//! edition = "2024"
//!
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! agmsg-guest-sdk = { path = "../agmsg-host/guest-sdk", features = ["storage"] }
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2` (after `rustup target add
//! wasm32-wasip2`), try it with `agmsg-host storage --driver target/wasm32-wasip2/release/my_store.wasm
//! init`, and run the contract suite on it with `agmsg-host driver test <the .wasm>`. `agmsg-host driver
//! new storage|terminal <name>` writes such a project for you, one that builds and passes the suite as
//! generated.
//!
//! # A minimal storage driver
//!
//! A complete storage driver, small rather than fast: the whole store is one tab-separated event log in
//! the store directory, every op takes the store lock and reads the log from the start, and the delivery
//! cursor of a message is its position among the messages. `drivers/storage-jsonl` in this repository
//! is the same idea with an index.
//!
//! ```rust,standalone_crate
//! use std::fs::{self, OpenOptions};
//! use std::io::{ErrorKind, Write};
//!
//! use agmsg_guest_sdk::STORE_DIR;
//! use agmsg_guest_sdk::ids::{new_id, now_utc};
//! use agmsg_guest_sdk::storage::{
//!     Description, DriverError, Event, EventExporter, EventImporter, Message, Pair, ReadMark, StorageDriver,
//!     StoreFile, StoreLock, WatchBatch,
//! };
//!
//! #[derive(Default)]
//! struct TsvStore;
//!
//! agmsg_guest_sdk::export_storage_driver!(TsvStore);
//!
//! const LOG: &str = "events.tsv";
//!
//! fn log_path() -> String {
//!     format!("{STORE_DIR}/{LOG}")
//! }
//!
//! fn io(e: std::io::Error) -> DriverError {
//!     DriverError::runtime(format!("{LOG}: {e}"))
//! }
//!
//! fn lock() -> Result<StoreLock, DriverError> {
//!     Ok(StoreLock::acquire_default()?)
//! }
//!
//! /// Names never hold control characters; a body may, so it is escaped onto one line.
//! fn escape(body: &str) -> String {
//!     body.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n").replace('\r', "\\r")
//! }
//!
//! fn unescape(field: &str) -> String {
//!     let mut body = String::new();
//!     let mut chars = field.chars();
//!     while let Some(c) = chars.next() {
//!         if c != '\\' {
//!             body.push(c);
//!             continue;
//!         }
//!         match chars.next() {
//!             Some('t') => body.push('\t'),
//!             Some('n') => body.push('\n'),
//!             Some('r') => body.push('\r'),
//!             Some(other) => body.push(other),
//!             None => {}
//!         }
//!     }
//!     body
//! }
//!
//! fn to_line(event: &Event) -> String {
//!     match event {
//!         Event::MessageSent(m) => {
//!             format!("sent\t{}\t{}\t{}\t{}\t{}\t{}\n", m.id, m.team, m.from, m.to, m.at, escape(&m.body))
//!         }
//!         Event::MessageRead(r) => format!("read\t{}\t{}\t{}\t{}\t{}\n", r.id, r.msg_id, r.team, r.agent, r.at),
//!     }
//! }
//!
//! fn parse(number: usize, line: &str) -> Result<Event, DriverError> {
//!     let own = |field: &&str| field.to_string();
//!     match line.split('\t').collect::<Vec<_>>().as_slice() {
//!         ["sent", id, team, from, to, at, body] => Ok(Event::MessageSent(Message {
//!             id: own(id),
//!             team: own(team),
//!             from: own(from),
//!             to: own(to),
//!             at: own(at),
//!             body: unescape(body),
//!         })),
//!         ["read", id, msg_id, team, agent, at] => Ok(Event::MessageRead(ReadMark {
//!             id: own(id),
//!             msg_id: own(msg_id),
//!             team: own(team),
//!             agent: own(agent),
//!             at: own(at),
//!         })),
//!         _ => Err(DriverError::corrupt(format!("{LOG} line {number}: not an event"))),
//!     }
//! }
//!
//! /// The whole log; a store that was never written is empty.
//! fn load() -> Result<Vec<Event>, DriverError> {
//!     match fs::read_to_string(log_path()) {
//!         Ok(text) => text.lines().enumerate().map(|(n, line)| parse(n + 1, line)).collect(),
//!         Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
//!         Err(e) => Err(io(e)),
//!     }
//! }
//!
//! fn append(events: &[Event]) -> Result<(), DriverError> {
//!     let text: String = events.iter().map(to_line).collect();
//!     let mut log = OpenOptions::new().create(true).append(true).open(log_path()).map_err(io)?;
//!     log.write_all(text.as_bytes()).map_err(io)
//! }
//!
//! /// Every message with its delivery position, 1 for the first.
//! fn messages(events: &[Event]) -> impl Iterator<Item = (u64, &Message)> {
//!     let sent = events.iter().filter_map(|e| match e {
//!         Event::MessageSent(m) => Some(m),
//!         Event::MessageRead(_) => None,
//!     });
//!     (1..).zip(sent)
//! }
//!
//! fn tip(events: &[Event]) -> u64 {
//!     messages(events).count() as u64
//! }
//!
//! fn is_read(events: &[Event], m: &Message) -> bool {
//!     events.iter().any(|e| matches!(e, Event::MessageRead(r) if r.msg_id == m.id && r.team == m.team && r.agent == m.to))
//! }
//!
//! fn unread<'a>(events: &'a [Event], team: &'a str, agent: &'a str) -> impl Iterator<Item = (u64, &'a Message)> {
//!     messages(events).filter(move |(_, m)| m.team == team && m.to == agent && !is_read(events, m))
//! }
//!
//! /// A read mark for each of `ids` that is an unread message to `team:agent`.
//! fn marks(events: &[Event], team: &str, agent: &str, ids: &[String]) -> Vec<Event> {
//!     unread(events, team, agent)
//!         .filter(|(_, m)| ids.contains(&m.id))
//!         .map(|(_, m)| {
//!             let (team, agent, at) = (team.to_owned(), agent.to_owned(), now_utc());
//!             Event::MessageRead(ReadMark { id: new_id(), msg_id: m.id.clone(), team, agent, at })
//!         })
//!         .collect()
//! }
//!
//! fn position(cursor: &str) -> Result<u64, DriverError> {
//!     cursor.parse().map_err(|_| DriverError::runtime(format!("not a cursor of this store: {cursor:?}")))
//! }
//!
//! impl StorageDriver for TsvStore {
//!     fn describe(&self) -> Description {
//!         Description {
//!             name: "tsv".into(),
//!             backend: "one tab-separated event log".into(),
//!             capabilities: Vec::new(),
//!             store_file: Some(StoreFile { key: "log".into(), path: LOG.into() }),
//!         }
//!     }
//!
//!     fn init(&self) -> Result<(), DriverError> {
//!         let _lock = lock()?;
//!         append(&[]) // creates the log, keeps one that exists
//!     }
//!
//!     fn store_exists(&self) -> Result<bool, DriverError> {
//!         fs::exists(log_path()).map_err(io)
//!     }
//!
//!     fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError> {
//!         let _lock = lock()?;
//!         let id = new_id();
//!         let (team, from, to, body) = (team.into(), from.into(), to.into(), body.into());
//!         append(&[Event::MessageSent(Message { id: id.clone(), team, from, to, body, at: now_utc() })])?;
//!         Ok(id)
//!     }
//!
//!     fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
//!         let _lock = lock()?;
//!         let events = load()?;
//!         let limit = limit.map_or(usize::MAX, |n| n as usize);
//!         Ok(unread(&events, team, agent).take(limit).map(|(_, m)| m.clone()).collect())
//!     }
//!
//!     fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError> {
//!         let _lock = lock()?;
//!         let events = load()?;
//!         append(&marks(&events, team, agent, ids))
//!     }
//!
//!     // This store keeps no frontier of its own: a pair's frontier is the position just before its first
//!     // unread message (the tip when it has none), so recording reads is all a consume has to do.
//!     fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError> {
//!         let _lock = lock()?;
//!         let events = load()?;
//!         let frontier = unread(&events, team, agent).next().map_or(tip(&events), |(n, _)| n - 1);
//!         Ok(frontier.to_string())
//!     }
//!
//!     fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError> {
//!         position(cursor)?;
//!         self.mark_read_batch(team, agent, ids)
//!     }
//!
//!     fn watch_tip(&self, _pairs: &[Pair]) -> Result<String, DriverError> {
//!         let _lock = lock()?;
//!         Ok(tip(&load()?).to_string())
//!     }
//!
//!     fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
//!         let after = position(cursor)?;
//!         let _lock = lock()?;
//!         let events = load()?;
//!         let wanted = |m: &Message| pairs.iter().any(|p| p.team == m.team && p.agent == m.to);
//!         let messages = messages(&events)
//!             .filter(|(n, m)| *n > after && wanted(m) && !is_read(&events, m))
//!             .map(|(_, m)| m.clone())
//!             .collect();
//!         Ok(WatchBatch { messages, cursor: tip(&events).max(after).to_string() })
//!     }
//!
//!     fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
//!         let _lock = lock()?;
//!         let events = load()?;
//!         let mut found: Vec<Message> = messages(&events)
//!             .map(|(_, m)| m)
//!             .filter(|m| m.team == team && agent.is_none_or(|a| m.from == a || m.to == a))
//!             .cloned()
//!             .collect();
//!         let keep = limit.map_or(found.len(), |n| found.len().min(n as usize));
//!         found.drain(..found.len() - keep);
//!         Ok(found)
//!     }
//!
//!     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> {
//!         let _lock = lock()?;
//!         Ok(Box::new(Snapshot(load()?.into_iter())))
//!     }
//!
//!     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
//!         Ok(Box::new(Staged(Vec::new())))
//!     }
//!
//!     // Nothing redundant is ever written (a message is marked read at most once), so there is nothing
//!     // to collapse.
//!     fn compact(&self) -> Result<(), DriverError> {
//!         Ok(())
//!     }
//! }
//!
//! /// The log as it was when the export started, handed out page by page.
//! struct Snapshot(std::vec::IntoIter<Event>);
//!
//! impl EventExporter for Snapshot {
//!     fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
//!         Ok(self.0.by_ref().take(max as usize).collect())
//!     }
//! }
//!
//! /// Pages held in memory until `commit`: an importer dropped before it is committed writes nothing.
//! struct Staged(Vec<Event>);
//!
//! impl EventImporter for Staged {
//!     fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
//!         self.0.extend(events);
//!         Ok(())
//!     }
//!
//!     // Events already in the store (by id), and reads of messages already read, are skipped, so
//!     // importing the same file twice changes nothing.
//!     fn commit(&mut self) -> Result<(), DriverError> {
//!         let _lock = lock()?;
//!         let mut events = load()?;
//!         let id_of = |e: &Event| match e {
//!             Event::MessageSent(m) => m.id.clone(),
//!             Event::MessageRead(r) => r.id.clone(),
//!         };
//!         let mut new = Vec::new();
//!         for event in self.0.drain(..) {
//!             let known = events.iter().any(|e| id_of(e) == id_of(&event));
//!             let already_read = match &event {
//!                 Event::MessageRead(r) => events
//!                     .iter()
//!                     .any(|e| matches!(e, Event::MessageRead(o) if o.msg_id == r.msg_id && o.team == r.team && o.agent == r.agent)),
//!                 Event::MessageSent(_) => false,
//!             };
//!             if !known && !already_read {
//!                 events.push(event.clone());
//!                 new.push(event);
//!             }
//!         }
//!         append(&new)
//!     }
//! }
//! ```
//!
//! # A minimal terminal driver
//!
//! A terminal driver reaches its terminal only through the programs its manifest declares. This one
//! reads and types into tmux panes and answers "unsupported" (exit 13, never a failure) for everything
//! else; every optional op keeps its default, which is unsupported too. `drivers/terminal-tmux` is the
//! whole thing.
//!
//! ```rust,standalone_crate
//! use agmsg_guest_sdk::process::{self, Output};
//! use agmsg_guest_sdk::terminal::{
//!     ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermError,
//!     TerminalDriver,
//! };
//!
//! #[derive(Default)]
//! struct PeekPoke;
//!
//! agmsg_guest_sdk::export_terminal_driver!(PeekPoke);
//!
//! /// The one id grammar, checked before anything runs: `%` and digits, a tmux pane id.
//! fn pane(id: &str) -> Result<&str, TermError> {
//!     match id.strip_prefix('%') {
//!         Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Ok(id),
//!         _ => Err(TermError::unsupported(format!("not a tmux pane id: {id:?}"))),
//!     }
//! }
//!
//! /// No answer from tmux is "could not ask" (10); an answer with a failure status is "failed" (12).
//! fn tmux(args: &[&str]) -> Result<Output, TermError> {
//!     let out = process::run("tmux", args).map_err(|e| TermError::unreachable(format!("tmux: {e:?}")))?;
//!     if out.success() {
//!         Ok(out)
//!     } else {
//!         Err(TermError::failed(format!("tmux {}: {}", args[0], out.stderr_text().trim())))
//!     }
//! }
//!
//! fn cannot<T>(op: &str) -> Result<T, TermError> {
//!     Err(TermError::unsupported(format!("peek-poke cannot {op}")))
//! }
//!
//! impl TerminalDriver for PeekPoke {
//!     fn check(&self) -> Result<(), TermError> {
//!         if process::available("tmux") {
//!             Ok(())
//!         } else {
//!             Err(TermError::MissingDeps("tmux is not installed".into()))
//!         }
//!     }
//!
//!     /// Must agree with `terminal.conf`.
//!     fn describe(&self) -> Description {
//!         Description {
//!             name: "peek-poke".into(),
//!             priority: 50,
//!             backend: "tmux pane".into(),
//!             capabilities: vec!["peek".into(), "poke".into()],
//!             hints: Vec::new(),
//!         }
//!     }
//!
//!     /// tmux tells its panes where they are through the environment (declared in `env=`).
//!     fn detect(&self, _session_id: &str) -> Detection {
//!         if std::env::var_os("TMUX").is_none() {
//!             return Detection::Absent;
//!         }
//!         match std::env::var("TMUX_PANE") {
//!             Ok(id) if pane(&id).is_ok() => Detection::Resolved(id),
//!             _ => Detection::Unresolved("$TMUX_PANE is not a pane id".into()),
//!         }
//!     }
//!
//!     fn peek(&self, id: &str, lines: Option<u32>) -> Result<String, TermError> {
//!         let start = lines.map(|n| format!("-{n}"));
//!         let mut args = vec!["capture-pane", "-p", "-t", pane(id)?];
//!         if let Some(start) = &start {
//!             args.extend(["-S", start.as_str()]);
//!         }
//!         Ok(tmux(&args)?.stdout_text())
//!     }
//!
//!     fn poke(&self, id: &str, text: &str) -> Result<(), TermError> {
//!         let id = pane(id)?;
//!         tmux(&["send-keys", "-l", "-t", id, "--", text])?;
//!         tmux(&["send-keys", "-t", id, "Enter"])?;
//!         Ok(())
//!     }
//!
//!     fn spawn(&self, _name: &str, _project: &str, _target: SpawnTarget, _boot: &[String]) -> Result<String, TermError> {
//!         cannot("spawn")
//!     }
//!     fn despawn(&self, _id: &str) -> Result<(), TermError> {
//!         cannot("despawn")
//!     }
//!     fn pane_state(&self, _id: &str) -> Result<PanePresence, TermError> {
//!         cannot("tell pane state")
//!     }
//!     fn where_is(&self, _id: &str) -> Result<String, TermError> {
//!         cannot("locate panes")
//!     }
//!     fn arrange(&self, _source: &str, _intent: Intent, _target: &str) -> Result<ArrangeOutcome, TermError> {
//!         cannot("arrange")
//!     }
//!     fn name(&self, _id: &str, _team: &str, _agent: &str, _mode: NamingMode) -> Result<(), TermError> {
//!         cannot("name panes")
//!     }
//!     // Every optional op (capability, team_observe, ...) keeps its default: unsupported.
//! }
//! ```
//!
//! It ships as a directory holding the built component as `driver.wasm` beside its manifest,
//! `terminal.conf`, whose `programs=` and `env=` keys are its grants:
//!
//! ```text
//! name=peek-poke
//! priority=50
//! backend=tmux pane
//! capabilities=peek poke
//! programs=tmux
//! env=TMUX TMUX_PANE
//! ```
//!
//! # What a driver may touch
//!
//! Exactly what the host grants, and nothing else. A storage driver sees its store directory at
//! [`STORE_DIR`] and no other file, has no environment, logs through [`log`], and serializes its ops with
//! the store lock (`lock`, or `file_lock` for byte-range locks that native processes see too). A
//! terminal driver has no filesystem, reads only the environment variables its manifest declares, and
//! runs only the programs its manifest declares, through `process`. Neither has a network. A trap, a
//! panic, a call past the deadline or memory past the cap ends the call with an error that names the
//! driver and the op, and the next call gets a fresh instance.
//!
//! # Outside a component
//!
//! The crate also compiles for the machine you build on, so a driver's own logic can be unit-tested
//! natively, and the examples in these docs are tested that way. The functions that call the host
//! ([`log`], `lock`, `file_lock`, `process`) only work inside a component: called natively, they panic
//! and abort the program. That is why their examples are marked `no_run`.

// Every public item carries docs, with an example that `scripts/test` runs.
#![deny(missing_docs)]

/// The wit-bindgen output for every world, one module per axis. Internal, not part of the API: drivers
/// use what the axis modules and the helper modules re-export.
///
/// Each world's exports are generated by its `export!` macro (`pub_export_macro`), which the SDK's
/// export macro expands in the driver crate. That expansion is what carries the world's type information
/// (the `component-type` custom section with the world's exports) into the driver's wasm, so a component
/// exports the one world whose macro it invokes. What the SDK's own code compiles is a section for each
/// world with its imports only, and `wit-component` keeps only the imports the component really calls.
#[doc(hidden)]
pub mod bindings {
    /// `agmsg:storage/storage-driver`.
    pub mod storage {
        wit_bindgen::generate!({
            world: "agmsg:storage/storage-driver@1.2.0",
            path: ["wit/host", "wit/storage"],
            generate_all,
            pub_export_macro: true,
            default_bindings_module: "$crate::bindings::storage",
        });
    }

    // The storage axis's optional interfaces' bindings are generated from their list, in `storage`
    // (`storage::optional_bindings`).

    /// `agmsg:terminal/terminal-driver`.
    pub mod terminal {
        wit_bindgen::generate!({
            world: "agmsg:terminal/terminal-driver@1.0.0",
            path: ["wit/host", "wit/terminal"],
            generate_all,
            pub_export_macro: true,
            default_bindings_module: "$crate::bindings::terminal",
        });
    }

    /// `agmsg:agent/agent-plug`.
    pub mod agent {
        wit_bindgen::generate!({
            world: "agmsg:agent/agent-plug@1.0.0",
            path: ["wit/host", "wit/agent"],
            generate_all,
            pub_export_macro: true,
            default_bindings_module: "$crate::bindings::agent",
        });
    }

    /// `agmsg:host/log`, which every world imports: one world's binding of it.
    pub use storage::agmsg::host::log;
    /// `agmsg:host/seal` (host 1.1.0), which the storage world imports.
    pub use storage::agmsg::host::seal;
}

pub mod agent;
pub mod crash;
pub mod file_lock;
pub mod ids;
pub mod lock;
pub mod log;
pub mod process;
pub mod seal;
pub mod storage;
pub mod terminal;

/// Why a team or agent name was refused: the position it held (`what`: `team`, `agent`, `sender`,
/// `recipient`), the `name` itself, and the rule it broke (`reason`).
///
/// `?` turns it into the axis' error: a `runtime_error` `storage::DriverError` in a storage driver, an
/// unsupported `terminal::TermError` in a terminal driver.
///
/// ```
/// use agmsg_guest_sdk::{NameError, check_name};
///
/// let refused: NameError = check_name("agent", "../etc").unwrap_err();
/// assert_eq!(refused.what, "agent");
/// assert_eq!(refused.name, "../etc");
/// assert!(refused.to_string().starts_with("invalid agent name"));
/// ```
pub use agmsg_contract::NameError;

/// Check a team or agent name against the contract's name rules, the ones the host enforces too.
///
/// The SDK already checks every name the host passes to a driver op, so a driver needs this only for
/// names that reach it some other way, such as names it reads back from its own files.
///
/// ```
/// use agmsg_guest_sdk::check_name;
///
/// assert!(check_name("team", "dev").is_ok());
/// for bad in ["", "dev:ops", "a/b", "a\\b", "..", "tab\there"] {
///     assert!(check_name("team", bad).is_err(), "{bad:?}");
/// }
/// ```
pub use agmsg_contract::check_name;

/// Whether a string may travel as a message id or a delivery cursor: the host refuses any other id or
/// cursor a driver returns, so a driver's cursors must pass this.
///
/// ```
/// use agmsg_guest_sdk::is_transport_token;
///
/// assert!(is_transport_token("42"));
/// assert!(is_transport_token("0196f3a2-7c1e-7000-8000-000000000000"));
/// assert!(!is_transport_token(""));
/// assert!(!is_transport_token("4 2"));
/// assert!(!is_transport_token("42\n"));
/// ```
pub use agmsg_contract::is_transport_token;

/// Split a `<team>:<agent>` pair at its first `:` and check both names; the error is a message for
/// the user.
///
/// The storage watch ops already receive their pairs split and checked (as `storage::Pair`s); this is
/// for pairs a driver meets as text.
///
/// ```
/// use agmsg_guest_sdk::split_pair;
///
/// assert_eq!(split_pair("dev:alice"), Ok(("dev", "alice")));
/// assert!(split_pair("dev").is_err());
/// assert!(split_pair("dev:").is_err());
/// ```
pub use agmsg_contract::split_pair;

/// Where a storage driver's store directory appears inside the sandbox: the only path it can open.
///
/// The host decides which directory on the machine that is (a shared store or a team's partition), so a
/// driver never takes a store path as an argument. A terminal driver has no filesystem at all.
///
/// ```
/// use agmsg_guest_sdk::STORE_DIR;
///
/// let log = format!("{STORE_DIR}/events.jsonl");
/// assert_eq!(log, "/store/events.jsonl");
/// ```
pub const STORE_DIR: &str = "/store";
