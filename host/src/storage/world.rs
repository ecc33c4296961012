//! The storage axis's version seam: the bindings of `agmsg:storage/storage-driver` and of its optional
//! interfaces (one file each in `world/`), generated from the list below, and the typed calls the host
//! makes on them, in the host's own types ([`super::types`]). This file and `world/` are the only ones
//! that name a generated type; the conversions are here, where a value enters or leaves a driver.
//!
//! A component built against 1.0.0 exports `agmsg:storage/driver@1.0.0` and none of the optional
//! interfaces: wasmtime finds exports by semver-compatible name (`driver@1.2.0` is looked up as
//! `driver@1`), so it loads, and `StorageWorld::live()` is `None`; likewise the 1.2.0 interfaces for
//! 1.0.0 and 1.1.0 drivers. A new optional interface is a file `world/<name>.rs` and a line in
//! `optional` (see `runtime/src/world.rs`, the `agmsg-runtime` crate).

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::types::{Description, Directive, Event, Message, Pair, ReadMark, Status, StorageError, StoreFile, WatchBatch};
use crate::runtime::HostState;

/// `fn binding(&Binding) -> wit::Binding` in an optional interface's file, `wit` being its generated
/// module: each interface that takes a binding declares its own `binding` record (an optional interface
/// stands alone in the WIT), so bindgen makes one type per interface, all with these fields. Defined
/// before the `mod`s below so that they see it.
macro_rules! wit_binding {
    () => {
        fn binding(b: &$crate::storage::sync::Binding) -> wit::Binding {
            wit::Binding {
                local_team: b.local_team.clone(),
                server_instance_id: b.server_instance_id.clone(),
                remote_team_id: b.remote_team_id.clone(),
                protocol_version: b.protocol_version.clone(),
            }
        }
    };
}

crate::runtime::world::driver_world! {
    /// A storage driver's instance: its `driver` exports, and each optional interface it exports.
    world StorageWorld, pre StoragePre, axis Storage;
    bindings "agmsg:storage/storage-driver@1.2.0" in "../wit/storage" as StorageDriver, StorageDriverIndices;
    host {
        "agmsg:host/log" => log,
        "agmsg:host/lock" => lock,
        "agmsg:host/file-lock" => file_lock,
        "agmsg:host/seal" => seal,
    }
    // `describe`'s `capabilities=` lists these in this order: agmsg's own words first, in agmsg's order
    // (its suites match `capabilities=stage1-sync…` as a prefix), then the host's additions.
    optional {
        sync => "agmsg:storage/sync@1.2.0" as "stage1-sync",
        resync => "agmsg:storage/resync@1.2.0" as "stage1-resync",
        read_state => "agmsg:storage/read-state@1.2.0" as "stage2-read-state",
        live => "agmsg:storage/live@1.1.0" as "live",
        receipts => "agmsg:storage/receipts@1.2.0" as "receipts",
        rename => "agmsg:storage/rename@1.2.0" as "rename",
        purge => "agmsg:storage/purge@1.2.0" as "purge",
    }
}

/// The contract's shared types as generated (the optional interfaces' bindings reuse them).
use bindings::agmsg::storage::types as wit;

/// A call's outcome: a trap (`Err`), or the driver's own answer, its error in the host's type.
pub type Call<T> = wasmtime::Result<Result<T, StorageError>>;

/// The driver's answer with its value and error converted.
fn answer<T, U>(result: wasmtime::Result<Result<T, wit::DriverError>>, convert: impl FnOnce(T) -> U) -> Call<U> {
    result.map(|answer| answer.map(convert).map_err(StorageError::from))
}

fn same<T>(value: T) -> T {
    value
}

impl StorageWorld {
    fn driver(&self) -> &bindings::exports::agmsg::storage::driver::Guest {
        self.core.agmsg_storage_driver()
    }

    pub fn check(&self, s: &mut Store<HostState>) -> Call<()> {
        answer(self.driver().call_check(s), same)
    }

    pub fn describe(&self, s: &mut Store<HostState>) -> wasmtime::Result<Description> {
        self.driver().call_describe(s).map(Description::from)
    }

    pub fn init(&self, s: &mut Store<HostState>) -> Call<()> {
        answer(self.driver().call_init(s), same)
    }

    pub fn store_exists(&self, s: &mut Store<HostState>) -> Call<bool> {
        answer(self.driver().call_store_exists(s), same)
    }

    pub fn send(&self, s: &mut Store<HostState>, team: &str, from: &str, to: &str, body: &str) -> Call<String> {
        answer(self.driver().call_send(s, team, from, to, body), same)
    }

    pub fn list_unread(&self, s: &mut Store<HostState>, team: &str, agent: &str, limit: Option<u32>) -> Call<Vec<Message>> {
        answer(self.driver().call_list_unread(s, team, agent, limit), messages)
    }

    pub fn mark_read_batch(&self, s: &mut Store<HostState>, team: &str, agent: &str, ids: &[String]) -> Call<()> {
        answer(self.driver().call_mark_read_batch(s, team, agent, ids), same)
    }

    pub fn read_cursor_get(&self, s: &mut Store<HostState>, team: &str, agent: &str) -> Call<String> {
        answer(self.driver().call_read_cursor_get(s, team, agent), same)
    }

    pub fn read_cursor_consume(&self, s: &mut Store<HostState>, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Call<()> {
        answer(self.driver().call_read_cursor_consume(s, team, agent, cursor, ids), same)
    }

    pub fn watch_tip(&self, s: &mut Store<HostState>, pairs: &[Pair]) -> Call<String> {
        answer(self.driver().call_watch_tip(s, &wit_pairs(pairs)), same)
    }

    pub fn watch_after(&self, s: &mut Store<HostState>, cursor: &str, pairs: &[Pair]) -> Call<WatchBatch> {
        answer(self.driver().call_watch_after(s, cursor, &wit_pairs(pairs)), |b| WatchBatch {
            messages: messages(b.messages),
            cursor: b.cursor,
        })
    }

    pub fn history(&self, s: &mut Store<HostState>, team: &str, agent: Option<&str>, limit: Option<u32>) -> Call<Vec<Message>> {
        answer(self.driver().call_history(s, team, agent, limit), messages)
    }

    pub fn compact(&self, s: &mut Store<HostState>) -> Call<()> {
        answer(self.driver().call_compact(s), same)
    }

    /// A new `exporter` resource.
    pub fn export_events(&self, s: &mut Store<HostState>) -> Call<ResourceAny> {
        answer(self.driver().call_export_events(s), same)
    }

    pub fn next_page(&self, s: &mut Store<HostState>, exporter: ResourceAny, max: u32) -> Call<Vec<Event>> {
        answer(self.driver().exporter().call_next_page(s, exporter, max), |page| page.into_iter().map(Event::from).collect())
    }

    /// A new `importer` resource.
    pub fn import_events(&self, s: &mut Store<HostState>) -> Call<ResourceAny> {
        answer(self.driver().call_import_events(s), same)
    }

    /// Stage `page` (taken by value: its strings move into the call, never copied).
    pub fn push_page(&self, s: &mut Store<HostState>, importer: ResourceAny, page: Vec<Event>) -> Call<()> {
        let page: Vec<wit::Event> = page.into_iter().map(wit::Event::from).collect();
        answer(self.driver().importer().call_push_page(s, importer, &page), same)
    }

    pub fn commit(&self, s: &mut Store<HostState>, importer: ResourceAny) -> Call<()> {
        answer(self.driver().importer().call_commit(s, importer), same)
    }
}

/// Pairs as the bindings take them (shared by the optional interfaces that take pairs).
fn wit_pairs(pairs: &[Pair]) -> Vec<wit::Pair> {
    pairs.iter().map(|p| wit::Pair { team: p.team.clone(), agent: p.agent.clone() }).collect()
}

fn messages(messages: Vec<wit::Message>) -> Vec<Message> {
    messages.into_iter().map(Message::from).collect()
}

impl From<wit::DriverError> for StorageError {
    fn from(e: wit::DriverError) -> StorageError {
        let status = match e.status {
            wit::Status::MissingDeps => Status::MissingDeps,
            wit::Status::CorruptState => Status::CorruptState,
            wit::Status::RuntimeError => Status::RuntimeError,
        };
        let directive = e.directive.map(|d| Directive { kind: d.kind, commands: d.commands, reason: d.reason });
        StorageError { status, message: e.message, directive }
    }
}

impl From<wit::Message> for Message {
    fn from(m: wit::Message) -> Message {
        Message { id: m.id, team: m.team, from: m.from, to: m.to, body: m.body, at: m.at }
    }
}

impl From<wit::Event> for Event {
    fn from(e: wit::Event) -> Event {
        match e {
            wit::Event::MessageSent(m) => Event::MessageSent(m.into()),
            wit::Event::MessageRead(r) => {
                Event::MessageRead(ReadMark { id: r.id, msg_id: r.msg_id, team: r.team, agent: r.agent, at: r.at })
            }
        }
    }
}

impl From<Event> for wit::Event {
    fn from(e: Event) -> wit::Event {
        match e {
            Event::MessageSent(m) => {
                wit::Event::MessageSent(wit::Message { id: m.id, team: m.team, from: m.from, to: m.to, body: m.body, at: m.at })
            }
            Event::MessageRead(r) => {
                wit::Event::MessageRead(wit::ReadMark { id: r.id, msg_id: r.msg_id, team: r.team, agent: r.agent, at: r.at })
            }
        }
    }
}

impl From<wit::Description> for Description {
    fn from(d: wit::Description) -> Description {
        Description {
            name: d.name,
            backend: d.backend,
            capabilities: d.capabilities,
            store_file: d.store_file.map(|f| StoreFile { key: f.key, path: f.path }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The SDK's list (guest-sdk/src/storage.rs, `optional_interfaces!`) and this world's `optional`
    /// list name the same interfaces, each with its `storage-<name>` world in the WIT: a driver author
    /// can export exactly what the host looks for, and nothing the host would never call.
    #[test]
    fn the_sdk_and_the_host_know_the_same_optional_interfaces() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let sdk = std::fs::read_to_string(root.join("guest-sdk/src/storage.rs")).unwrap();
        let list = sdk.split("\noptional_interfaces! {").nth(1).and_then(|rest| rest.split('}').next()).expect("the SDK's list");
        let mut in_sdk: Vec<String> = list
            .lines()
            .filter_map(|line| line.trim().split_once(" => "))
            .map(|(name, world)| {
                let kebab = name.replace('_', "-");
                assert!(world.starts_with(&format!("\"agmsg:storage/storage-{kebab}@")), "{name} => {world}");
                name.to_owned()
            })
            .collect();
        let mut in_host: Vec<String> = super::Offers::NAMES.iter().map(|n| n.to_string()).collect();
        in_sdk.sort();
        in_host.sort();
        assert_eq!(in_sdk, in_host);
        let wit = std::fs::read_to_string(root.join("wit/storage/storage.wit")).unwrap();
        for name in in_host {
            let kebab = name.replace('_', "-");
            assert!(wit.contains(&format!("world storage-{kebab} {{\n  export {kebab};\n}}")), "no world storage-{kebab} in the WIT");
        }
    }
}
