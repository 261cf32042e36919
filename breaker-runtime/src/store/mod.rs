//! Where the shared state of a circuit lives.
//!
//! A [`StateStore`] holds one [`implement::CircuitRecord`] per circuit and
//! offers exactly the protocol's operations: a read, and [`apply`](StateStore::apply) of one
//! conditional [`implement::RecordWrite`].
//! Each write either wins (the condition held and the record was written) or loses and
//! returns the record that made it lose, so the caller can adopt it without another read.
//!
//! [`InMemoryStore`] keeps the records in the process (state is per environment);
//! `DynamoDbStore` (feature `dynamodb`) shares them across a fleet. Anyone implementing the
//! trait finds everything it needs in [`implement`], and can check their store with the
//! contract suite (feature `contract`, `breaker_runtime::testing::contract`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) mod key_ids;
mod key_index;
mod memory;

pub mod implement;

// The implementer's types at their first home, kept so code naming them here still builds;
// `implement` is where they are documented.
#[doc(hidden)]
pub use implement::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, KeyIndex, KeyIndexOutcome, KeyIndexWrite,
    Override, OverrideKind, RecordWrite, SuspectReport, WriteOutcome,
};
pub(crate) use key_ids::{decode_key, encode_key, key_item_id, key_item_id_encoded};
#[cfg(feature = "dynamodb")]
pub(crate) use key_ids::{key_index_id, split_key_item_id};
pub use memory::InMemoryStore;

#[cfg(feature = "dynamodb")]
pub(crate) mod dynamodb;
#[cfg(feature = "dynamodb")]
#[cfg_attr(docsrs, doc(cfg(feature = "dynamodb")))]
pub use dynamodb::{DynamoDbStore, DynamoDbStoreBuilder};

/// The same store object: the same allocation, whatever the vtable.
pub(crate) fn same_store(a: &Arc<dyn StateStore>, b: &Arc<dyn StateStore>) -> bool {
    Arc::as_ptr(a).cast::<()>() == Arc::as_ptr(b).cast::<()>()
}

/// The future a store operation returns: boxed so the trait stays object safe.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store that could not answer: unreachable, throttled, timed out, refused, or broken.
///
/// The breaker never hands it to the protected call: it logs it, counts it by its
/// [`kind`](Self::kind), and fails open.
///
/// ```
/// use breaker_runtime::store::{StoreError, StoreErrorKind};
/// let err = StoreError::with_kind(StoreErrorKind::AccessDenied, "not authorized to GetItem");
/// assert_eq!((err.kind(), err.to_string().as_str()), (StoreErrorKind::AccessDenied, "not authorized to GetItem"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    message: String,
    kind: StoreErrorKind,
}

/// Why a store could not answer, as operators act on it: the kinds of
/// `circuitbreaker_store_errors_total` and of the EMF metric `StoreErrors`.
///
/// `#[non_exhaustive]`: later versions may tell more kinds apart.
///
/// ```
/// use breaker_runtime::store::StoreErrorKind;
/// assert_eq!(StoreErrorKind::AccessDenied.as_str(), "access_denied");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store answered, but refused the request for its throughput (DynamoDB's
    /// `ProvisionedThroughputExceededException`, `ThrottlingException`): it can be
    /// reached, so the breaker does not act as if it could not.
    Throttled,
    /// The store refused the caller's credentials or permissions.
    AccessDenied,
    /// The table (or what stands for it) does not exist.
    NotFound,
    /// No answer within the store timeout.
    Timeout,
    /// Anything else: unreachable, a malformed item, a broken store.
    Other,
}

impl StoreErrorKind {
    /// The kind's label in metrics: `throttled`, `access_denied`, `not_found`, `timeout`,
    /// `other`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Throttled => "throttled",
            Self::AccessDenied => "access_denied",
            Self::NotFound => "not_found",
            Self::Timeout => "timeout",
            Self::Other => "other",
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl StoreError {
    /// A store error of kind [`Other`](StoreErrorKind::Other), with a message for the logs.
    ///
    /// ```
    /// let err = breaker_runtime::store::StoreError::new("connection reset");
    /// assert_eq!(err.to_string(), "connection reset");
    /// ```
    pub fn new(message: impl fmt::Display) -> Self {
        Self::with_kind(StoreErrorKind::Other, message)
    }

    /// A store error of `kind`, with a message for the logs.
    pub fn with_kind(kind: StoreErrorKind, message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
            kind,
        }
    }

    /// A store error of kind [`Throttled`](StoreErrorKind::Throttled).
    ///
    /// ```
    /// let err = breaker_runtime::store::StoreError::throttled("too many writes");
    /// assert!(err.is_throttled());
    /// assert!(!breaker_runtime::store::StoreError::new("timed out").is_throttled());
    /// ```
    pub fn throttled(message: impl fmt::Display) -> Self {
        Self::with_kind(StoreErrorKind::Throttled, message)
    }

    /// Why the store could not answer.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// Whether the store refused the request for its throughput.
    pub fn is_throttled(&self) -> bool {
        self.kind == StoreErrorKind::Throttled
    }
}

/// The operations of the shared-state protocol. Implement it to keep circuits somewhere else.
///
/// `apply` must evaluate the transition's condition ([`RecordWrite::allowed`]) and the write
/// ([`RecordWrite::applied_to`]) atomically. The breaker runs every call on its own small
/// runtime, with the configured store timeout around it.
///
/// ```
/// use breaker_runtime::store::InMemoryStore;
/// use breaker_runtime::store::implement::{
///     CircuitRecord, RecordWrite, StateStore, StoreFuture, WriteOutcome,
/// };
///
/// /// A store that logs each operation and delegates to an in-memory one.
/// #[derive(Debug, Default)]
/// struct Logged(InMemoryStore);
///
/// impl StateStore for Logged {
///     fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
///         println!("read {circuit}");
///         self.0.read(circuit)
///     }
///     fn apply<'a>(&'a self, circuit: &'a str, transition: &'a RecordWrite) -> StoreFuture<'a, WriteOutcome> {
///         println!("{circuit}: write towards {}", transition.to_state());
///         self.0.apply(circuit, transition)
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = Logged::default();
/// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
/// assert_eq!(store.apply("ce", &trip).await.unwrap(), WriteOutcome::Won);
/// assert_eq!(store.read("ce").await.unwrap(), Some(CircuitRecord::open(100, 5)));
/// # }
/// ```
pub trait StateStore: fmt::Debug + Send + Sync {
    /// The record of `circuit`, or `None` if there is none. May be eventually consistent.
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>>;

    /// The record of `circuit`, reflecting every write that succeeded before the read: the
    /// breaker reads this way before an election it has no first right to. The default is
    /// [`read`](Self::read), right for a store whose reads are always consistent.
    fn read_consistent<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        self.read(circuit)
    }

    /// The records of `circuits`, in their order, as [`read`](Self::read) would return
    /// each: the warm-up at init ([`warm_up`](crate::warm_up)) reads every circuit of a
    /// function with it. The default reads one after another; a store that can should
    /// answer in one request (`DynamoDbStore`: one `BatchGetItem`).
    ///
    /// ```
    /// use breaker_runtime::store::InMemoryStore;
    /// use breaker_runtime::store::implement::{CircuitRecord, RecordWrite, StateStore};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let store = InMemoryStore::new();
    /// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
    /// store.apply("b", &trip).await.unwrap();
    /// let records = store.read_many(&["a", "b"]).await.unwrap();
    /// assert_eq!(records, vec![None, Some(CircuitRecord::open(100, 5))]);
    /// # }
    /// ```
    fn read_many<'a>(
        &'a self,
        circuits: &'a [&'a str],
    ) -> StoreFuture<'a, Vec<Option<CircuitRecord>>> {
        Box::pin(async move {
            let mut records = Vec::with_capacity(circuits.len());
            for circuit in circuits {
                records.push(self.read(circuit).await?);
            }
            Ok(records)
        })
    }

    /// Applies `transition` to `circuit`'s record if its condition holds, atomically.
    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        transition: &'a RecordWrite,
    ) -> StoreFuture<'a, WriteOutcome>;

    /// Whether this store may keep fleet counters ([`report`](Self::report)); `false`
    /// spares the circuits of a store that cannot (an environment's own
    /// `InMemoryStore`) even the first report. Default `true`: a store without counters
    /// answers the first report with `None`, and no more are sent.
    fn keeps_fleet_counters(&self) -> bool {
        true
    }

    /// Adds `report` to `circuit`'s counters for the report's fleet window, atomically,
    /// and returns the window's totals after it; `Ok(None)` if this store keeps no fleet
    /// counters (the default), and the circuit then trips on each environment's own counts
    /// only. The counters live apart from the circuit's record, which a report never
    /// creates or changes.
    fn report<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a FailureReport,
    ) -> StoreFuture<'a, Option<FleetTally>> {
        let _ = (circuit, report);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Adds `report` to the counters of `circuit`'s suspicion ending at `report.epoch`,
    /// atomically, and returns the epoch's totals after it; `Ok(None)` if this store keeps
    /// no fleet counters (the default). Like [`report`](Self::report), never touches the
    /// circuit's record.
    fn report_suspected<'a>(
        &'a self,
        circuit: &'a str,
        report: &'a SuspectReport,
    ) -> StoreFuture<'a, Option<EpochTally>> {
        let _ = (circuit, report);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Whether this store keeps the index of a keyed circuit
    /// ([`KeyedCircuitBreaker`](crate::KeyedCircuitBreaker)): the item naming the keys whose
    /// items must be read. Default `false`: a keyed circuit on such a store reads every
    /// key's own item (one read per key and cache age) and has no cap on its open keys.
    fn keeps_key_index(&self) -> bool {
        false
    }

    /// The index of the keyed circuit `circuit` (`{circuit}#keys`), strongly consistently
    /// if `consistent`; `None` if there is none. The default: `Ok(None)`.
    fn read_key_index<'a>(
        &'a self,
        circuit: &'a str,
        consistent: bool,
    ) -> StoreFuture<'a, Option<KeyIndex>> {
        let _ = (circuit, consistent);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Applies `write` to the index of the keyed circuit `circuit` if its condition holds,
    /// atomically ([`KeyIndexWrite::apply`] is the reference). The default fails: a store
    /// that keeps no index is never asked (see [`keeps_key_index`](Self::keeps_key_index)).
    ///
    /// ```
    /// use breaker_runtime::store::InMemoryStore;
    /// use breaker_runtime::store::implement::{KeyIndexOutcome, KeyIndexWrite, StateStore};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let store = InMemoryStore::new();
    /// let add = KeyIndexWrite::Add { key: "shop-17".into(), token: 7, cap: Some(1_000) };
    /// assert_eq!(store.apply_key_index("webhooks", &add).await.unwrap(), KeyIndexOutcome::Won);
    /// let index = store.read_key_index("webhooks", false).await.unwrap().unwrap();
    /// assert_eq!((index.token("shop-17"), index.open_keys), (Some(7), 1));
    /// # }
    /// ```
    fn apply_key_index<'a>(
        &'a self,
        circuit: &'a str,
        write: &'a KeyIndexWrite,
    ) -> StoreFuture<'a, KeyIndexOutcome> {
        let _ = write;
        Box::pin(std::future::ready(Err(StoreError::new(format!(
            "{circuit}: this store keeps no key index"
        )))))
    }
}

/// Store methods, each `fn name(args) -> T;` answering a `StoreFuture<'a, T>`, that call
/// the same method of `**self`.
macro_rules! forward_to_inner {
    ($(fn $method:ident($($arg:ident: $type:ty),*) -> $answer:ty;)*) => {$(
        fn $method<'a>(&'a self, $($arg: $type),*) -> StoreFuture<'a, $answer> {
            (**self).$method($($arg),*)
        }
    )*};
}

/// `Arc<S>` is the store `S`: each method forwards to it. A method added to [`StateStore`]
/// is one line here.
impl<S: StateStore + ?Sized> StateStore for Arc<S> {
    forward_to_inner! {
        fn read(circuit: &'a str) -> Option<CircuitRecord>;
        fn read_consistent(circuit: &'a str) -> Option<CircuitRecord>;
        fn read_many(circuits: &'a [&'a str]) -> Vec<Option<CircuitRecord>>;
        fn apply(circuit: &'a str, transition: &'a RecordWrite) -> WriteOutcome;
        fn report(circuit: &'a str, report: &'a FailureReport) -> Option<FleetTally>;
        fn report_suspected(circuit: &'a str, report: &'a SuspectReport) -> Option<EpochTally>;
        fn read_key_index(circuit: &'a str, consistent: bool) -> Option<KeyIndex>;
        fn apply_key_index(circuit: &'a str, write: &'a KeyIndexWrite) -> KeyIndexOutcome;
    }

    fn keeps_fleet_counters(&self) -> bool {
        (**self).keeps_fleet_counters()
    }

    fn keeps_key_index(&self) -> bool {
        (**self).keeps_key_index()
    }
}
