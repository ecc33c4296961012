//! The optional `live` interface (`agmsg:storage` 1.1.0): wake a watcher when something may have
//! been written, instead of being polled.

use super::optional_bindings::live::exports::agmsg::storage::live::Guest as LiveGuest;
use super::{Component, DriverError, Pair, StorageDriver, check_pairs, with_driver};

/// What [`LiveDriver::wait_after`] answers: [`Wake::Changed`] (a message may have arrived: the host reads
/// now) or [`Wake::TimedOut`] (the timeout passed with no sign of one).
///
/// ```
/// use agmsg_guest_sdk::storage::Wake;
///
/// fn woke(notified: bool) -> Wake {
///     if notified { Wake::Changed } else { Wake::TimedOut }
/// }
/// assert_eq!(woke(false), Wake::TimedOut);
/// ```
pub use super::optional_bindings::live::exports::agmsg::storage::live::Wake;

/// The optional `live` interface (`agmsg:storage` 1.1.0): a driver whose store can tell it that something
/// was written (PostgreSQL's LISTEN/NOTIFY, a file watch) lets `agmsg-host watch` sleep until then
/// instead of polling. Implement it on the driver type and register it with
/// [`export_storage_live!`](crate::export_storage_live) next to
/// [`export_storage_driver!`](crate::export_storage_driver). A driver without it is polled, as every
/// 1.0.0 driver is.
///
/// It is a hint: after every wait the host reads through [`StorageDriver::watch_after`] from the
/// watcher's cursor. A wake with nothing new costs one read; a missed one delays the message until the
/// timeout, never loses it. `changed` when in doubt is always correct.
///
/// ```
/// use std::time::{Duration, Instant};
/// use agmsg_guest_sdk::storage::{DriverError, LiveDriver, Pair, Wake};
///
/// #[derive(Default)]
/// struct MyStore;
///
/// # fn messages_after(_: &str, _: &[Pair]) -> Result<bool, DriverError> { Ok(false) }
/// impl LiveDriver for MyStore {
///     fn wait_after(&self, cursor: &str, pairs: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError> {
///         // Here: a store that can only be asked. Subscribe first, then look, then block on the
///         // subscription, so a write between the look and the block still wakes.
///         let until = Instant::now() + Duration::from_millis(timeout_ms.into());
///         while Instant::now() < until {
///             if messages_after(cursor, pairs)? {
///                 return Ok(Wake::Changed);
///             }
///             std::thread::sleep(Duration::from_millis(10).min(until - Instant::now()));
///         }
///         Ok(Wake::TimedOut)
///     }
/// }
/// # assert_eq!(MyStore.wait_after("0", &[], 1)?, Wake::TimedOut);
/// # Ok::<(), DriverError>(())
/// ```
pub trait LiveDriver {
    /// Block until a message to one of `pairs` (all of one team, checked by the SDK) may have been
    /// written after `cursor` (a cursor [`StorageDriver::watch_after`] returned), or until `timeout_ms`
    /// passes. A message already there answers [`Wake::Changed`] at once.
    ///
    /// Return within `timeout_ms` (plus the little an answer takes): the host asks for a timeout well
    /// inside its call deadline, and a call that outlives the deadline is stopped with an error.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, LiveDriver, Pair, Wake};
    ///
    /// struct Never;
    ///
    /// impl LiveDriver for Never {
    ///     fn wait_after(&self, _: &str, _: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError> {
    ///         std::thread::sleep(std::time::Duration::from_millis(timeout_ms.into()));
    ///         Ok(Wake::TimedOut)
    ///     }
    /// }
    /// assert_eq!(Never.wait_after("0", &[], 1)?, Wake::TimedOut);
    /// # Ok::<(), DriverError>(())
    /// ```
    fn wait_after(&self, cursor: &str, pairs: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`LiveDriver`]) as this component's `agmsg:storage/live` export, the optional
/// interface of `agmsg:storage` 1.1.0.
///
/// Call it once, at the top level, next to `export_storage_driver!` and with the same type: both
/// exports reach one driver value per instance.
///
/// ```rust,standalone_crate
/// use agmsg_guest_sdk::storage::{DriverError, LiveDriver, Pair, StorageDriver, Wake};
/// # use agmsg_guest_sdk::storage::*;
///
/// #[derive(Default)]
/// struct MyStore;
///
/// impl StorageDriver for MyStore {
///     // ... every op of the contract
/// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
/// #     fn describe(&self) -> Description { unimplemented!() }
/// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
/// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
/// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
/// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
/// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
/// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
/// }
///
/// impl LiveDriver for MyStore {
///     fn wait_after(&self, _cursor: &str, _pairs: &[Pair], _timeout_ms: u32) -> Result<Wake, DriverError> {
///         Ok(Wake::Changed) // always correct, if no better than polling
///     }
/// }
///
/// agmsg_guest_sdk::export_storage_driver!(MyStore);
/// agmsg_guest_sdk::export_storage_live!(MyStore);
/// ```
#[macro_export]
macro_rules! export_storage_live {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, live);
    };
}

impl<D: StorageDriver + LiveDriver + Default + 'static> LiveGuest for Component<D> {
    fn wait_after(cursor: String, pairs: Vec<Pair>, timeout_ms: u32) -> Result<Wake, DriverError> {
        check_pairs(&pairs)?;
        with_driver::<D, _>(|d| d.wait_after(&cursor, &pairs, timeout_ms))
    }
}
