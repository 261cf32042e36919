//! `Transition`: the protocol's four conditional writes, each knowing its own condition and
//! the record it leaves. The machine emits them, the breaker carries them to the store, and
//! every store applies them: `InMemoryStore` through [`Transition::allowed`] and
//! [`Transition::applied_to`], `DynamoDbStore` as the same condition in DynamoDB's words.

use super::CircuitRecord;
use crate::CircuitState;

/// One conditional write of the shared-state protocol.
///
/// A store applies a transition atomically: if [`allowed`](Self::allowed) holds for the
/// current record, the record becomes [`applied_to`](Self::applied_to) of it and the write
/// wins; otherwise nothing changes and the write loses, returning the current record.
/// `#[non_exhaustive]`: later versions add transitions (operator overrides, for one).
///
/// ```
/// use breaker_runtime::CircuitState;
/// use breaker_runtime::store::{CircuitRecord, Transition};
///
/// let trip = Transition::Trip { failure_count: 5, opened_at: 100, expiration: 3730 };
/// assert!(trip.allowed(None));
/// let opened = trip.applied_to(None);
/// assert_eq!(opened, CircuitRecord::open(100, 5));
/// // A second trip loses on the open record.
/// assert!(!trip.allowed(Some(&opened)));
///
/// let elect = Transition::Elect {
///     owner: "env-1".into(),
///     expected_opened_at: Some(100),
///     now: 130,
///     lease_expiry: 160,
///     expiration: 3760,
/// };
/// assert!(elect.allowed(Some(&opened)));
/// assert_eq!(elect.applied_to(Some(&opened)).state, CircuitState::HalfOpen);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transition {
    /// CLOSED → OPEN. Allowed on an absent or `CLOSED` record.
    Trip {
        /// Consecutive failures that tripped it.
        failure_count: u32,
        /// Unix seconds, now: the new `opened_at`.
        opened_at: u64,
        /// TTL attribute value: now + recovery timeout + 3600.
        expiration: u64,
    },
    /// OPEN → HALF_OPEN with `owner` as the prober. Allowed on `OPEN` with no owner and
    /// `opened_at == expected_opened_at`, or on `HALF_OPEN` with a lease that expired
    /// before `now`. Keeps `opened_at` and `failure_count`.
    Elect {
        /// The electing environment's id.
        owner: String,
        /// The `opened_at` the environment read.
        expected_opened_at: Option<u64>,
        /// Unix seconds, now.
        now: u64,
        /// Unix seconds when the new lease expires.
        lease_expiry: u64,
        /// TTL attribute value.
        expiration: u64,
    },
    /// HALF_OPEN → CLOSED after enough probe successes. Allowed only on `HALF_OPEN` owned
    /// by `owner`.
    Close {
        /// The closing environment's id.
        owner: String,
        /// TTL attribute value.
        expiration: u64,
    },
    /// HALF_OPEN → OPEN after a failed probe. Allowed only on `HALF_OPEN` owned by `owner`.
    Reopen {
        /// The reopening environment's id.
        owner: String,
        /// Unix seconds, now: the new `opened_at`.
        opened_at: u64,
        /// Failures to record (the failed probe).
        failure_count: u32,
        /// TTL attribute value.
        expiration: u64,
    },
}

impl Transition {
    /// Whether the write wins on `current` (`None`: no record).
    pub fn allowed(&self, current: Option<&CircuitRecord>) -> bool {
        match self {
            Self::Trip { .. } => current.is_none_or(|r| r.state == CircuitState::Closed),
            Self::Elect {
                expected_opened_at,
                now,
                ..
            } => current.is_some_and(|r| match r.state {
                CircuitState::Open => {
                    r.half_open_owner.is_none() && r.opened_at == *expected_opened_at
                }
                CircuitState::HalfOpen => r.probe_lease_expiry.is_some_and(|lease| lease < *now),
                CircuitState::Closed => false,
            }),
            Self::Close { owner, .. } | Self::Reopen { owner, .. } => current.is_some_and(|r| {
                r.state == CircuitState::HalfOpen && r.half_open_owner.as_deref() == Some(owner)
            }),
        }
    }

    /// The record a winning write leaves on `current`.
    pub fn applied_to(&self, current: Option<&CircuitRecord>) -> CircuitRecord {
        match self {
            Self::Trip {
                failure_count,
                opened_at,
                ..
            }
            | Self::Reopen {
                failure_count,
                opened_at,
                ..
            } => CircuitRecord::open(*opened_at, *failure_count),
            Self::Elect {
                owner,
                lease_expiry,
                ..
            } => CircuitRecord {
                state: CircuitState::HalfOpen,
                half_open_owner: Some(owner.clone()),
                probe_lease_expiry: Some(*lease_expiry),
                ..current.cloned().unwrap_or_default()
            },
            Self::Close { .. } => CircuitRecord::closed(),
        }
    }

    /// The state the write leads to.
    pub fn to_state(&self) -> CircuitState {
        match self {
            Self::Trip { .. } | Self::Reopen { .. } => CircuitState::Open,
            Self::Elect { .. } => CircuitState::HalfOpen,
            Self::Close { .. } => CircuitState::Closed,
        }
    }

    /// The TTL attribute value the write sets (unix seconds).
    pub fn expiration(&self) -> u64 {
        match self {
            Self::Trip { expiration, .. }
            | Self::Elect { expiration, .. }
            | Self::Close { expiration, .. }
            | Self::Reopen { expiration, .. } => *expiration,
        }
    }
}
