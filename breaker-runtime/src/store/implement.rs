//! What a store implementer needs: the [`StateStore`] trait, the record it keeps per
//! circuit and the writes it applies, and the optional extensions' types (the fleet
//! counters, the suspicion epochs, the key index of a keyed circuit), which a store that
//! keeps none of them never meets (each method has a default).
//!
//! A user who only picks a store needs none of this: [`InMemoryStore`](super::InMemoryStore)
//! or `DynamoDbStore` (feature `dynamodb`) from [`store`](super). Check an implementation
//! with the contract suite (feature `contract`, `breaker_runtime::testing::contract`), which
//! runs every case against a fresh store of yours.
//!
//! ```
//! use breaker_runtime::store::implement::{CircuitRecord, RecordWrite, StateStore, WriteOutcome};
//! use breaker_runtime::store::InMemoryStore;
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let store = InMemoryStore::new();
//! let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
//! assert_eq!(store.apply("ce", &trip).await.unwrap(), WriteOutcome::Won);
//! assert_eq!(store.read("ce").await.unwrap(), Some(CircuitRecord::open(100, 5)));
//! # }
//! ```
//!
//! The protocol's own numbers (the sample weight of a suspicion, the slices of an epoch)
//! and the ids of a keyed circuit's items are not part of it: the breaker fills them in.
//!
//! ```compile_fail
//! use breaker_runtime::store::SAMPLE_WEIGHT;
//! ```

pub use super::key_index::{KeyIndex, KeyIndexOutcome, KeyIndexWrite};
pub use super::{StateStore, StoreError, StoreErrorKind, StoreFuture};
pub use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, Override, OverrideKind, RecordWrite,
    SuspectReport, WriteOutcome,
};
