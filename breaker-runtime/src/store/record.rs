//! `CircuitRecord`: the shared state of one circuit, as a store keeps it.

use crate::CircuitState;

/// The shared state of one circuit, as stored.
///
/// `#[non_exhaustive]`: later versions add fields (operator overrides, for one). Build a
/// record with [`closed`](Self::closed), [`open`](Self::open) or
/// [`half_open`](Self::half_open), or from a [`Transition`](super::Transition) with
/// [`applied_to`](super::Transition::applied_to); every field is public to read and set.
///
/// ```
/// use breaker_runtime::CircuitState;
/// use breaker_runtime::store::CircuitRecord;
/// let record = CircuitRecord::closed();
/// assert_eq!(record.state, CircuitState::Closed);
/// assert_eq!(record.opened_at, None);
///
/// let probing = CircuitRecord::half_open(1_700_000_000, 5, "env-1", 1_700_000_060);
/// assert_eq!(probing.half_open_owner.as_deref(), Some("env-1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
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

    /// An open circuit, opened at `opened_at` (unix seconds) after `failure_count` failures.
    ///
    /// ```
    /// let record = breaker_runtime::store::CircuitRecord::open(1_700_000_000, 5);
    /// assert_eq!(record.opened_at, Some(1_700_000_000));
    /// assert_eq!(record.half_open_owner, None);
    /// ```
    pub fn open(opened_at: u64, failure_count: u32) -> Self {
        Self {
            state: CircuitState::Open,
            failure_count,
            opened_at: Some(opened_at),
            half_open_owner: None,
            probe_lease_expiry: None,
        }
    }

    /// A half-open circuit whose probe `owner` holds until `lease_expiry` (unix seconds).
    pub fn half_open(opened_at: u64, failure_count: u32, owner: &str, lease_expiry: u64) -> Self {
        Self {
            state: CircuitState::HalfOpen,
            half_open_owner: Some(owner.to_owned()),
            probe_lease_expiry: Some(lease_expiry),
            ..Self::open(opened_at, failure_count)
        }
    }
}
