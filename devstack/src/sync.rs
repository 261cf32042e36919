//! A mutex that a panicking test thread poisoned still guards data worth reading: the
//! harnesses lock through [`lock`], which takes the guard either way.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `mutex`'s guard, poisoned or not.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
