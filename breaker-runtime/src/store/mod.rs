//! Where the shared state of a circuit lives.
//!
//! A [`StateStore`] holds one [`CircuitRecord`] per circuit and offers exactly the protocol's
//! operations: a read and four conditional writes. Each write either wins (the condition held
//! and the record was written) or loses and returns the record that made it lose, so the
//! caller can adopt it without another read.
//!
//! [`InMemoryStore`] keeps the records in the process (state is per environment);
//! `DynamoDbStore` (feature `dynamodb`) shares them across a fleet.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::CircuitState;

mod memory;
pub use memory::InMemoryStore;

#[cfg(feature = "dynamodb")]
mod dynamodb;
#[cfg(feature = "dynamodb")]
pub use dynamodb::{DynamoDbStore, DynamoDbStoreBuilder};

/// The future a store operation returns: boxed so the trait stays object safe.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The shared state of one circuit, as stored.
///
/// ```
/// use breaker_runtime::CircuitState;
/// use breaker_runtime::store::CircuitRecord;
/// let record = CircuitRecord::closed();
/// assert_eq!(record.state, CircuitState::Closed);
/// assert_eq!(record.opened_at, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CircuitRecord {
    /// `CLOSED`, `OPEN` or `HALF_OPEN`.
    pub state: CircuitState,
    /// Consecutive failures of the environment that tripped the circuit.
    pub failure_count: u32,
    /// Unix seconds when the circuit opened; `None` when closed.
    pub opened_at: Option<u64>,
    /// Id of the environment that won the probe election.
    pub half_open_owner: Option<String>,
    /// Unix seconds after which another environment may take the probe over.
    pub probe_lease_expiry: Option<u64>,
}

impl CircuitRecord {
    /// The record of a circuit that was never written (or was closed).
    pub fn closed() -> Self {
        Self::default()
    }
}

/// Trip CLOSED → OPEN. Wins only if the record is absent or `CLOSED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trip {
    /// Consecutive failures that tripped it.
    pub failure_count: u32,
    /// Unix seconds, now.
    pub opened_at: u64,
    /// TTL attribute value: now + recovery timeout + 3600.
    pub expiration: u64,
}

/// Elect this environment to probe (OPEN → HALF_OPEN). Wins only if the record is `OPEN`
/// with no owner and `opened_at == expected_opened_at`, or `HALF_OPEN` with a lease that
/// expired before `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeElection {
    /// This environment's id.
    pub owner: String,
    /// The `opened_at` this environment read.
    pub expected_opened_at: Option<u64>,
    /// Unix seconds, now.
    pub now: u64,
    /// Unix seconds when the new lease expires.
    pub lease_expiry: u64,
    /// TTL attribute value.
    pub expiration: u64,
}

/// Close (HALF_OPEN → CLOSED). Wins only if the record is `HALF_OPEN` owned by `owner`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    /// This environment's id.
    pub owner: String,
    /// TTL attribute value.
    pub expiration: u64,
}

/// Reopen after a failed probe (HALF_OPEN → OPEN). Wins only if the record is `HALF_OPEN`
/// owned by `owner`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reopen {
    /// This environment's id.
    pub owner: String,
    /// Unix seconds, now: the new `opened_at`.
    pub opened_at: u64,
    /// Failures to record (the failed probe).
    pub failure_count: u32,
    /// TTL attribute value.
    pub expiration: u64,
}

/// The result of a conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The condition held; the record now says what the write said.
    Won,
    /// The condition failed; this is the record that made it fail (`None`: no record).
    Lost(Option<CircuitRecord>),
}

/// A store that could not answer: unreachable, throttled, timed out, or broken.
///
/// The breaker never hands it to the protected call: it logs it and fails open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// A store error with a message for the logs.
    ///
    /// ```
    /// let err = breaker_runtime::store::StoreError::new("table not found");
    /// assert_eq!(err.to_string(), "table not found");
    /// ```
    pub fn new(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
        }
    }
}

/// The operations of the shared-state protocol. Implement it to keep circuits somewhere else.
///
/// Every write is conditional, exactly as documented on its request type; an implementation
/// must evaluate the condition and the write atomically. The breaker runs every call on its
/// own small runtime, with the configured store timeout around it.
///
/// ```
/// use breaker_runtime::store::{
///     CircuitRecord, Close, InMemoryStore, ProbeElection, Reopen, StateStore, StoreFuture, Trip,
///     WriteOutcome,
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
///     fn trip<'a>(&'a self, circuit: &'a str, trip: &'a Trip) -> StoreFuture<'a, WriteOutcome> {
///         self.0.trip(circuit, trip)
///     }
///     fn elect_probe<'a>(&'a self, circuit: &'a str, e: &'a ProbeElection) -> StoreFuture<'a, WriteOutcome> {
///         self.0.elect_probe(circuit, e)
///     }
///     fn close_if_owner<'a>(&'a self, circuit: &'a str, c: &'a Close) -> StoreFuture<'a, WriteOutcome> {
///         self.0.close_if_owner(circuit, c)
///     }
///     fn reopen_if_owner<'a>(&'a self, circuit: &'a str, r: &'a Reopen) -> StoreFuture<'a, WriteOutcome> {
///         self.0.reopen_if_owner(circuit, r)
///     }
/// }
/// ```
pub trait StateStore: fmt::Debug + Send + Sync {
    /// The record of `circuit`, or `None` if there is none. May be eventually consistent.
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>>;

    /// CLOSED → OPEN; see [`Trip`].
    fn trip<'a>(&'a self, circuit: &'a str, trip: &'a Trip) -> StoreFuture<'a, WriteOutcome>;

    /// OPEN → HALF_OPEN with this environment as owner; see [`ProbeElection`].
    fn elect_probe<'a>(
        &'a self,
        circuit: &'a str,
        election: &'a ProbeElection,
    ) -> StoreFuture<'a, WriteOutcome>;

    /// HALF_OPEN → CLOSED by the owner; see [`Close`].
    fn close_if_owner<'a>(
        &'a self,
        circuit: &'a str,
        close: &'a Close,
    ) -> StoreFuture<'a, WriteOutcome>;

    /// HALF_OPEN → OPEN by the owner; see [`Reopen`].
    fn reopen_if_owner<'a>(
        &'a self,
        circuit: &'a str,
        reopen: &'a Reopen,
    ) -> StoreFuture<'a, WriteOutcome>;
}

impl<S: StateStore + ?Sized> StateStore for Arc<S> {
    fn read<'a>(&'a self, circuit: &'a str) -> StoreFuture<'a, Option<CircuitRecord>> {
        (**self).read(circuit)
    }
    fn trip<'a>(&'a self, circuit: &'a str, trip: &'a Trip) -> StoreFuture<'a, WriteOutcome> {
        (**self).trip(circuit, trip)
    }
    fn elect_probe<'a>(
        &'a self,
        circuit: &'a str,
        election: &'a ProbeElection,
    ) -> StoreFuture<'a, WriteOutcome> {
        (**self).elect_probe(circuit, election)
    }
    fn close_if_owner<'a>(
        &'a self,
        circuit: &'a str,
        close: &'a Close,
    ) -> StoreFuture<'a, WriteOutcome> {
        (**self).close_if_owner(circuit, close)
    }
    fn reopen_if_owner<'a>(
        &'a self,
        circuit: &'a str,
        reopen: &'a Reopen,
    ) -> StoreFuture<'a, WriteOutcome> {
        (**self).reopen_if_owner(circuit, reopen)
    }
}

/// The conditions of the protocol, shared by every store that evaluates them in memory
/// (and by tests that check a remote store against them).
pub mod conditions {
    use super::{CircuitRecord, ProbeElection};
    use crate::CircuitState;

    /// Trip wins on an absent or `CLOSED` record.
    pub fn trip_allowed(current: Option<&CircuitRecord>) -> bool {
        current.is_none_or(|r| r.state == CircuitState::Closed)
    }

    /// Election wins on `OPEN`, no owner, the expected `opened_at`; or `HALF_OPEN` with an
    /// expired lease.
    pub fn election_allowed(current: Option<&CircuitRecord>, election: &ProbeElection) -> bool {
        let Some(r) = current else { return false };
        match r.state {
            CircuitState::Open => {
                r.half_open_owner.is_none() && r.opened_at == election.expected_opened_at
            }
            CircuitState::HalfOpen => r
                .probe_lease_expiry
                .is_some_and(|lease| lease < election.now),
            CircuitState::Closed => false,
        }
    }

    /// Close and reopen win only for the owner of a `HALF_OPEN` record.
    pub fn owned_by(current: Option<&CircuitRecord>, owner: &str) -> bool {
        current.is_some_and(|r| {
            r.state == CircuitState::HalfOpen && r.half_open_owner.as_deref() == Some(owner)
        })
    }
}
