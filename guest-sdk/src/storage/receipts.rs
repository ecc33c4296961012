//! The optional `receipts` interface (`agmsg:storage` 1.2.0): agmsg's hand-off evidence per message.

use super::optional_bindings::receipts::exports::agmsg::storage::receipts::Guest as ReceiptsGuest;
use super::{Component, DriverError, StorageDriver, check_team_agent, with_driver};

/// What [`ReceiptsDriver::receipt_status`] answers for one message: a [`ReceiptState::Receipt`] was
/// recorded, or none was but the legacy store marks it read ([`ReceiptState::LegacyRead`]), or neither
/// ([`ReceiptState::None`]).
pub use super::optional_bindings::receipts::exports::agmsg::storage::receipts::ReceiptState;

/// The optional `receipts` interface (`agmsg:storage` 1.2.0): the hand-off evidence agmsg's legacy
/// readers keep per message (agmsg's sqlite `message_receipts` table). Register it with
/// [`export_storage_receipts!`](crate::export_storage_receipts) next to
/// [`export_storage_driver!`](crate::export_storage_driver). A driver without it offers no receipt ops,
/// and agmsg's callers, which look for the functions first, skip them.
///
/// ```
/// use std::cell::RefCell;
/// use std::collections::BTreeMap;
/// use agmsg_guest_sdk::storage::{DriverError, ReceiptState, ReceiptsDriver};
///
/// #[derive(Default)]
/// struct Receipts(RefCell<BTreeMap<String, String>>);
///
/// impl ReceiptsDriver for Receipts {
///     fn record_receipts(&self, _team: &str, agent: &str, _evidence: &str, ids: &[String]) -> Result<(), DriverError> {
///         for id in ids {
///             self.0.borrow_mut().entry(id.clone()).or_insert_with(|| agent.to_owned()); // the first one stays
///         }
///         Ok(())
///     }
///     fn receipt_status(&self, _team: &str, id: &str) -> Result<ReceiptState, DriverError> {
///         Ok(if self.0.borrow().contains_key(id) { ReceiptState::Receipt } else { ReceiptState::None })
///     }
/// }
/// let r = Receipts::default();
/// r.record_receipts("dev", "bob", "inbox", &["7".into()])?;
/// assert_eq!(r.receipt_status("dev", "7")?, ReceiptState::Receipt);
/// # Ok::<(), DriverError>(())
/// ```
pub trait ReceiptsDriver {
    /// Record that `agent` of `team` was handed the messages `ids`, with `evidence`. Ids the store does
    /// not know are skipped; a message keeps its first receipt.
    fn record_receipts(&self, team: &str, agent: &str, evidence: &str, ids: &[String]) -> Result<(), DriverError>;
    /// The hand-off state of message `id` of `team`.
    fn receipt_status(&self, team: &str, id: &str) -> Result<ReceiptState, DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`ReceiptsDriver`]) as this component's `agmsg:storage/receipts` export (1.2.0).
#[macro_export]
macro_rules! export_storage_receipts {
    ($driver:ty) => {
        $crate::__export_storage_optional!($driver, receipts);
    };
}

impl<D: StorageDriver + ReceiptsDriver + Default + 'static> ReceiptsGuest for Component<D> {
    fn record_receipts(team: String, agent: String, evidence: String, ids: Vec<String>) -> Result<(), DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver::<D, _>(|d| d.record_receipts(&team, &agent, &evidence, &ids))
    }
    fn receipt_status(team: String, id: String) -> Result<ReceiptState, DriverError> {
        crate::check_name("team", &team)?;
        with_driver::<D, _>(|d| d.receipt_status(&team, &id))
    }
}
