//! `persistence_store = expr`: an `Arc` of a store is used as is (so call sites sharing it
//! share one circuit), any other store value is put in a new `Arc`.

use std::sync::Arc;

use crate::store::StateStore;

/// An `Arc` of a store.
pub trait ArcOfStore {
    /// As a trait object, same allocation.
    fn into_dyn(self) -> Arc<dyn StateStore>;
}

impl ArcOfStore for Arc<dyn StateStore> {
    fn into_dyn(self) -> Arc<dyn StateStore> {
        self
    }
}

impl<S: StateStore + 'static> ArcOfStore for Arc<S> {
    fn into_dyn(self) -> Arc<dyn StateStore> {
        self
    }
}

/// Tag: the store expression is already an `Arc`.
#[derive(Debug)]
pub struct ArcStoreTag;

impl ArcStoreTag {
    /// The `Arc` as a trait object.
    pub fn into_store(self, store: impl ArcOfStore) -> Arc<dyn StateStore> {
        store.into_dyn()
    }
}

/// Tag: the store expression is a store value.
#[derive(Debug)]
pub struct ValueStoreTag;

impl ValueStoreTag {
    /// The value, in a new `Arc`.
    pub fn into_store(self, store: impl StateStore + 'static) -> Arc<dyn StateStore> {
        Arc::new(store)
    }
}

/// Picked when the store expression is an `Arc`.
pub trait StoreIsArc {
    /// The tag.
    fn __breaker_store_kind(&self) -> ArcStoreTag {
        ArcStoreTag
    }
}
impl<A: ArcOfStore> StoreIsArc for A {}

/// Picked otherwise (autoref).
pub trait StoreIsValue {
    /// The tag.
    fn __breaker_store_kind(&self) -> ValueStoreTag {
        ValueStoreTag
    }
}
// Unbounded, so a value that is not a store fails at `into_store` with a plain
// "`X: StateStore` is not satisfied" instead of a method-resolution error.
impl<T> StoreIsValue for &T {}
