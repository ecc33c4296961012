//! Driver instances made ready ahead of the op that uses them: the resident server's spare process
//! instantiates the drivers its last ops used (a storage driver, which also opens its store, and a
//! terminal driver) while it waits for the next request, so that an op through the server starts on a
//! warm instance instead of a fresh one.
//!
//! One instance at most per axis, in the thread that made it (the spare's main thread, which then runs
//! the op). It is taken only by a [`crate::Driver`] of the same axis, component bytes (by sha256) and
//! grants, all compared whole: the store directory by device and inode as the op opened it now, the
//! granted environment's values, programs, endpoints and limits. Anything else (another store, a plugin
//! whose file changed, a grant re-trusted differently) finds nothing and instantiates as any process
//! does. A driver dropped in such a thread parks its instance again (`Drop` for [`crate::Driver`]), so
//! a server's child that serves op after op keeps it warm between them. Only a spare ([`enable`]) makes
//! keys: every other process pays one flag check per driver.

use std::any::Any;
use std::cell::{Cell, RefCell};

use crate::axis::Axis;

/// The axes a spare makes instances ready for: storage (whose instance also holds its store open) and
/// terminal. An agent-types op runs no driver call worth making ahead (a manifest read, a plug text).
pub const WARMED: [Axis; 2] = [Axis::Storage, Axis::Terminal];

/// A kept instance: its driver's axis, its key, and the instance.
type Parked = (Axis, String, Box<dyn Any>);

thread_local! {
    static PARKED: RefCell<Vec<Parked>> = const { RefCell::new(Vec::new()) };
    static TAKEN: Cell<bool> = const { Cell::new(false) };
    /// The [`WARMED`] axes whose drivers this thread opened (see [`opened`]).
    static OPENED: Cell<u8> = const { Cell::new(0) };
    static ENABLED: Cell<bool> = const { Cell::new(false) };
}

/// Make this thread one that keeps and takes instances (a spare's): drivers opened from now on note
/// their key. Elsewhere no key is made, and nothing is ever kept or taken.
pub fn enable() {
    ENABLED.with(|e| e.set(true));
}

pub(crate) fn enabled() -> bool {
    ENABLED.with(Cell::get)
}

/// Every bit [`opened`] can set: one per [`WARMED`] axis.
pub const WARMED_BITS: u8 = (1 << WARMED.len()) - 1;

/// Note that a driver of `axis` was opened in this thread (see [`opened`]).
pub(crate) fn note_opened(axis: Axis) {
    if let Some(place) = WARMED.iter().position(|warmed| *warmed == axis) {
        OPENED.with(|o| o.set(o.get() | 1 << place));
    }
}

/// The [`WARMED`] axes this thread opened drivers of, one bit each by its place in [`WARMED`]: an op
/// of one of them is one a spare can make ready for.
pub fn opened() -> u8 {
    OPENED.with(Cell::get)
}

/// The warm-ups are done, or the op before this one in the same process: the drivers they opened and
/// the instances they took are not the next op's (which [`opened`] and [`taken`] then tell alone).
pub fn warmed_up() {
    OPENED.with(|o| o.set(0));
    TAKEN.with(|t| t.set(false));
}

/// Keep `instance`, of a driver of `axis`, under `key`, for the next driver opened with the same key
/// (replacing any kept for that axis).
pub(crate) fn park(axis: Axis, key: String, instance: Box<dyn Any>) {
    PARKED.with(|p| {
        let mut parked = p.borrow_mut();
        parked.retain(|(kept, ..)| *kept != axis);
        parked.push((axis, key, instance));
    });
}

/// The kept instance, if it was kept under `key` and is a `T` (then no longer kept).
pub(crate) fn take<T: 'static>(key: &str) -> Option<T> {
    let instance = PARKED.with(|p| {
        let mut parked = p.borrow_mut();
        let at = parked.iter().position(|(_, kept, instance)| kept == key && instance.is::<T>())?;
        Some(parked.swap_remove(at).2)
    })?;
    let instance = instance.downcast::<T>().ok()?;
    TAKEN.with(|t| t.set(true));
    Some(*instance)
}

/// Whether this thread's op ran on a kept instance (what the server counts as a warm op).
pub fn taken() -> bool {
    TAKEN.with(Cell::get)
}

/// Drop the kept instances (a spare whose op will not use them frees their memory first).
pub fn discard() {
    PARKED.with(|p| p.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept under one key, taken under that key and type only, once; a new park replaces the old one of
    /// its axis only.
    #[test]
    fn an_instance_is_taken_only_by_its_key_and_type_once() {
        park(Axis::Storage, "a".into(), Box::new(1u32));
        assert_eq!(take::<u32>("b"), None, "another key");
        assert_eq!(take::<u64>("a"), None, "another type");
        assert!(!taken());
        assert_eq!(take::<u32>("a"), Some(1), "left kept by the misses");
        park(Axis::Storage, "a".into(), Box::new(2u32));
        assert_eq!(take::<u32>("a"), Some(2));
        assert!(taken());
        assert_eq!(take::<u32>("a"), None, "taken once");
        park(Axis::Storage, "c".into(), Box::new(3u32));
        park(Axis::Terminal, "d".into(), Box::new(4u32));
        park(Axis::Storage, "e".into(), Box::new(5u32));
        assert_eq!(take::<u32>("c"), None, "replaced by the next of its axis");
        assert_eq!(take::<u32>("d"), Some(4), "one per axis: another axis's stays");
        park(Axis::Terminal, "d".into(), Box::new(6u32));
        discard();
        assert_eq!((take::<u32>("d"), take::<u32>("e")), (None, None), "discarded");
    }

    /// Each warmed axis has its own bit; an axis not warmed sets none; the warm-ups' marks are cleared.
    #[test]
    fn opened_names_the_warmed_axes_by_their_place() {
        warmed_up();
        note_opened(Axis::Types);
        assert_eq!(opened(), 0, "agent types are not warmed");
        note_opened(Axis::Terminal);
        assert_eq!(opened(), 0b10);
        note_opened(Axis::Storage);
        assert_eq!(opened(), WARMED_BITS);
        warmed_up();
        assert_eq!(opened(), 0);
    }
}
