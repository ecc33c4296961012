//! A driver instance made ready ahead of the op that uses it: the resident server's spare process
//! instantiates the driver its last op used (and lets the driver open its store) while it waits for the
//! next request, so that an op through the server starts on a warm instance instead of a fresh one.
//!
//! One instance at most, in the thread that made it (the spare's main thread, which then runs the op).
//! It is taken only by a [`crate::Driver`] of the same axis, component bytes (by sha256) and grants,
//! all compared whole: the store directory by device and inode as the op opened it now, the granted
//! environment's values, programs, endpoints and limits. Anything else (another store, a plugin whose
//! file changed, a grant re-trusted differently) finds nothing and instantiates as any process does.
//! The instance is used for one op and dropped with the process. Only a spare ([`enable`]) makes keys:
//! every other process pays one flag check per driver.

use std::any::Any;
use std::cell::{Cell, RefCell};

thread_local! {
    static PARKED: RefCell<Option<(String, Box<dyn Any>)>> = const { RefCell::new(None) };
    static TAKEN: Cell<bool> = const { Cell::new(false) };
    static STORE_OPENED: Cell<bool> = const { Cell::new(false) };
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

/// Note that a driver of an axis with stores was opened in this thread (its op is one worth warming
/// for: see [`store_opened`]).
pub(crate) fn note_store_opened() {
    STORE_OPENED.with(|o| o.set(true));
}

/// Whether this thread opened a driver of an axis with stores (a storage op, which a spare can make
/// ready ahead of time; a terminal or types op leaves nothing to warm).
pub fn store_opened() -> bool {
    STORE_OPENED.with(Cell::get)
}

/// Keep `instance`, under `key`, for the next driver opened with the same key (replacing any kept).
pub(crate) fn park(key: String, instance: Box<dyn Any>) {
    PARKED.with(|p| *p.borrow_mut() = Some((key, instance)));
}

/// The kept instance, if it was kept under `key` and is a `T` (then no longer kept).
pub(crate) fn take<T: 'static>(key: &str) -> Option<T> {
    let instance = PARKED.with(|p| {
        let mut parked = p.borrow_mut();
        match parked.as_ref() {
            Some((kept, instance)) if kept == key && instance.is::<T>() => parked.take().map(|(_, instance)| instance),
            _ => None,
        }
    })?;
    let instance = instance.downcast::<T>().ok()?;
    TAKEN.with(|t| t.set(true));
    Some(*instance)
}

/// Whether this thread's op ran on a kept instance (what the server counts as a warm op).
pub fn taken() -> bool {
    TAKEN.with(Cell::get)
}

/// Drop the kept instance, if any (a spare whose op will not use it frees its memory first).
pub fn discard() {
    PARKED.with(|p| p.borrow_mut().take());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept under one key, taken under that key and type only, once; a new park replaces the old.
    #[test]
    fn an_instance_is_taken_only_by_its_key_and_type_once() {
        park("a".into(), Box::new(1u32));
        assert_eq!(take::<u32>("b"), None, "another key");
        assert_eq!(take::<u64>("a"), None, "another type");
        assert!(!taken());
        assert_eq!(take::<u32>("a"), Some(1), "left kept by the misses");
        park("a".into(), Box::new(2u32));
        assert_eq!(take::<u32>("a"), Some(2));
        assert!(taken());
        assert_eq!(take::<u32>("a"), None, "taken once");
        park("c".into(), Box::new(3u32));
        discard();
        assert_eq!(take::<u32>("c"), None, "discarded");
    }
}
