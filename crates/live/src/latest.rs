//! [`Latest`]: the newest value of something one thread folds and others read (the
//! live view's snapshot, the Prometheus metrics): published with one lock per update,
//! read as a copy.

use std::sync::{Arc, Mutex, PoisonError};

/// The newest `T`, shared: clones read the same value.
#[derive(Debug, Clone, Default)]
pub struct Latest<T>(Arc<Mutex<T>>);

impl<T: Clone> Latest<T> {
    /// A copy of the newest value (the lock is held for the copy only).
    pub fn get(&self) -> T {
        self.lock().clone()
    }

    /// Replaces the value, reusing its allocations.
    pub(crate) fn publish(&self, value: &T) {
        self.lock().clone_from(value);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
