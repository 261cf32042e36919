//! `RecordWrite`: the protocol's nine conditional writes (the breaker's six: trip, elect,
//! hand-over, close, reopen, suspect; the operator's three: override, release, reset), each knowing
//! its own condition and the record it leaves. The machine emits the breaker's, the
//! breaker carries them to the store, and every store applies them: `InMemoryStore`
//! through [`RecordWrite::allowed`] and [`RecordWrite::applied_to`], `DynamoDbStore` as the
//! same condition in DynamoDB's words.

use super::record::{CircuitRecord, Override, OverrideKind};
use super::state::CircuitState;

/// The result of a conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per store write, never on a call's path: boxing would cost an allocation per lost write"
)]
pub enum WriteOutcome {
    /// The condition held; the record now says what the write said.
    Won,
    /// The condition failed; this is the record that made it fail (`None`: no record).
    Lost(Option<CircuitRecord>),
}

/// The `opened_at` of a circuit forced open until released: 9999-12-31T23:59:59Z, so no
/// environment's recovery (breaker's or Powertools') elapses before the release. A forced
/// open with an end has `opened_at` = that end instead.
pub const OPENED_AT_UNTIL_RELEASED: u64 = 253_402_300_799;

/// One conditional write of the shared-state protocol.
///
/// A store applies a transition atomically: if [`allowed`](Self::allowed) holds for the
/// current record, the record becomes [`applied_to`](Self::applied_to) of it and the write
/// wins; otherwise nothing changes and the write loses, returning the current record.
/// The first six are the breaker's own; [`Override`](Self::Override),
/// [`Release`](Self::Release) and [`Reset`](Self::Reset) are an operator's (the `breaker`
/// CLI). None of the breaker's own writes erases a live override: a trip or an election
/// loses while one holds, and every override removes the probe owner, so a close or reopen
/// racing with it loses too. `#[non_exhaustive]`: later versions may add transitions.
///
/// ```
/// use breaker_runtime::CircuitState;
/// use breaker_runtime::store::implement::{CircuitRecord, RecordWrite};
///
/// let trip = RecordWrite::Trip { failure_count: 5, opened_at: 100, expiration: 3730, opened_by: None, open_until: None };
/// assert!(trip.allowed(None));
/// let opened = trip.applied_to(None);
/// assert_eq!(opened, CircuitRecord::open(100, 5));
/// // A second trip loses on the open record.
/// assert!(!trip.allowed(Some(&opened)));
///
/// let elect = RecordWrite::Elect {
///     owner: "env-1".into(),
///     expected_opened_at: Some(100),
///     expected_successes: 0,
///     now: 130,
///     lease_expiry: 160,
///     expiration: 3760,
/// };
/// assert!(elect.allowed(Some(&opened)));
/// assert_eq!(elect.applied_to(Some(&opened)).state, CircuitState::HalfOpen);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordWrite {
    /// CLOSED → OPEN. Allowed on an absent or `CLOSED` record without a live override.
    Trip {
        /// The probe owner id of the tripping environment, kept on the opening
        /// ([`CircuitRecord::opened_by`]): a trip whose answer was lost and whose retry met
        /// its own landed attempt recognises it by that (`None`: no writer named).
        opened_by: Option<String>,
        /// Consecutive failures that tripped it.
        failure_count: u32,
        /// Unix seconds, now: the new `opened_at`.
        opened_at: u64,
        /// TTL attribute value: now + recovery timeout + 3600.
        expiration: u64,
        /// Until when the downstream asked for no calls ([`CircuitRecord::open_until`]);
        /// `None`: the recovery timeout.
        open_until: Option<u64>,
    },
    /// OPEN → HALF_OPEN with `owner` as the prober, or a takeover of the next probe on
    /// HALF_OPEN. Allowed on `OPEN` with no owner and `opened_at == expected_opened_at`, or
    /// on `HALF_OPEN` with a lease that expired before `now` and the fleet's probe
    /// successes still `expected_successes` (so the taker counts on from what is stored);
    /// never while an override holds. Keeps `opened_at`, `failure_count`, the probe
    /// successes of a takeover and an override that has ended.
    Elect {
        /// The electing environment's id.
        owner: String,
        /// The `opened_at` the environment read.
        expected_opened_at: Option<u64>,
        /// The fleet's probe successes the environment read (0 on an `OPEN` record).
        expected_successes: u32,
        /// Unix seconds, now.
        now: u64,
        /// Unix seconds when the new lease expires.
        lease_expiry: u64,
        /// TTL attribute value.
        expiration: u64,
    },
    /// HALF_OPEN → HALF_OPEN: the owner's probe succeeded (or ended without counting), short
    /// of the successes that close. It records the fleet's probe successes so far and sets
    /// the lease: ended at once (the probe is handed over: the next may come from any
    /// environment, one at a time, each admitted by an [`Elect`](Self::Elect) takeover), or
    /// the owner's own lease kept (a busy owner probes again with its next call). Allowed
    /// only on `HALF_OPEN` owned by `owner`; keeps the owner, so the item stays one that
    /// Powertools reads as half-open.
    HandOver {
        /// The owner handing the probe over.
        owner: String,
        /// The fleet's probe successes in a row, this one included.
        probe_successes: u32,
        /// Unix seconds: the lease's expiry, already past when the probe is handed over.
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
    /// HALF_OPEN → OPEN after a failed probe, counting the reopen. Allowed only on
    /// `HALF_OPEN` owned by `owner`.
    Reopen {
        /// The reopening environment's id.
        owner: String,
        /// Unix seconds, now: the new `opened_at`.
        opened_at: u64,
        /// Failures to record (the failed probe).
        failure_count: u32,
        /// The reopens without a close this one makes: the record's count, plus one.
        reopen_count: u32,
        /// TTL attribute value.
        expiration: u64,
        /// Until when the downstream asked for no calls ([`CircuitRecord::open_until`]);
        /// `None`: the backed-off recovery.
        open_until: Option<u64>,
    },
    /// The fleet's counters look like an outage: every environment that reads the record
    /// reports its calls too, until `until`, to the counters of this suspicion, and only
    /// those may trip the circuit. Allowed on an absent or `CLOSED` record without a live
    /// override whose suspicion has ended by `now`; sets `suspected_until` and keeps the
    /// rest (an absent record becomes a closed one). Every write that leaves the closed
    /// state drops the suspicion, so its counters never outlive a trip.
    Suspect {
        /// Unix seconds, now.
        now: u64,
        /// Unix seconds: the suspicion's end (now + the fleet window).
        until: u64,
        /// TTL attribute value.
        expiration: u64,
    },
    /// An operator sets `set` (forced open or disabled), replacing the override it read
    /// (`replaces`; `None`: it read none). Allowed when the record's override is that one
    /// ([`Override::same_as`]), whatever the circuit's state; creates the record if there
    /// is none. Forced open leaves `OPEN` with `opened_at` = the override's end (or
    /// [`OPENED_AT_UNTIL_RELEASED`]) and keeps `failure_count`; disabled (or shadow) leaves
    /// `CLOSED` with no failures. Either removes the probe owner and lease.
    Override {
        /// The override to set.
        set: Override,
        /// The override the operator read, which this one replaces.
        replaces: Option<Override>,
        /// TTL attribute value: at least the override's end; `None` (an override until
        /// released) removes the TTL so the item cannot expire under it.
        expiration: Option<u64>,
    },
    /// An operator ends the override `released`. Allowed when the record's override is that
    /// one, and holds at `now` if and only if `released` does. A forced open that holds
    /// leaves the circuit `OPEN` as of `now` (its recovery starts: one probe decides, as
    /// after any opening); a disable, or a forced open that has already ended, leaves the
    /// state as it is (a probe that started after the end goes on).
    Release {
        /// The override the operator read.
        released: Override,
        /// Unix seconds, now.
        now: u64,
        /// TTL attribute value.
        expiration: u64,
    },
    /// An operator closes the circuit, as a successful probe would. Allowed on any record
    /// without an override that holds at `now`.
    Reset {
        /// Unix seconds, now.
        now: u64,
        /// TTL attribute value.
        expiration: u64,
    },
}

/// No override holds at `now` on `current`.
fn no_live_override(current: Option<&CircuitRecord>, now: u64) -> bool {
    current.is_none_or(|r| r.live_override(now).is_none())
}

/// `current`'s override is `expected` (or neither has one).
fn override_is(current: Option<&CircuitRecord>, expected: Option<&Override>) -> bool {
    let stored = current.and_then(|r| r.operator_override.as_ref());
    match (stored, expected) {
        (None, None) => true,
        (Some(stored), Some(expected)) => stored.same_as(expected),
        _ => false,
    }
}

impl RecordWrite {
    /// Whether the write wins on `current` (`None`: no record).
    pub fn allowed(&self, current: Option<&CircuitRecord>) -> bool {
        match self {
            Self::Trip { opened_at, .. } => {
                current.is_none_or(|r| r.state == CircuitState::Closed)
                    && no_live_override(current, *opened_at)
            }
            Self::Elect {
                expected_opened_at,
                expected_successes,
                now,
                ..
            } if no_live_override(current, *now) => current.is_some_and(|r| match r.state {
                // Only a takeover reads a count: an election from `OPEN` starts at 0.
                CircuitState::Open => {
                    *expected_successes == 0
                        && r.half_open_owner.is_none()
                        && r.opened_at == *expected_opened_at
                }
                CircuitState::HalfOpen => {
                    r.probe_lease_expiry.is_some_and(|lease| lease < *now)
                        && r.probe_successes == *expected_successes
                }
                CircuitState::Closed => false,
            }),
            Self::Elect { .. } => false,
            Self::Close { owner, .. }
            | Self::Reopen { owner, .. }
            | Self::HandOver { owner, .. } => current.is_some_and(|r| {
                r.state == CircuitState::HalfOpen && r.half_open_owner.as_deref() == Some(owner)
            }),
            Self::Override { replaces, .. } => override_is(current, replaces.as_ref()),
            Self::Release { released, now, .. } => {
                override_is(current, Some(released))
                    && current
                        .and_then(|r| r.operator_override.as_ref())
                        .is_some_and(|stored| stored.holds_at(*now) == released.holds_at(*now))
            }
            Self::Reset { now, .. } => no_live_override(current, *now),
            Self::Suspect { now, .. } => current.is_none_or(|r| {
                r.state == CircuitState::Closed
                    && r.live_override(*now).is_none()
                    && r.suspected_until.is_none_or(|until| until <= *now)
            }),
        }
    }

    /// The record a winning write leaves on `current`.
    pub fn applied_to(&self, current: Option<&CircuitRecord>) -> CircuitRecord {
        match self {
            Self::Trip {
                failure_count,
                opened_at,
                opened_by,
                open_until,
                ..
            } => CircuitRecord {
                opened_by: opened_by.clone(),
                open_until: *open_until,
                ..CircuitRecord::open(*opened_at, *failure_count)
            },
            Self::Reopen {
                failure_count,
                opened_at,
                reopen_count,
                open_until,
                ..
            } => CircuitRecord {
                reopen_count: *reopen_count,
                open_until: *open_until,
                ..CircuitRecord::open(*opened_at, *failure_count)
            },
            Self::Elect {
                owner,
                lease_expiry,
                ..
            } => {
                let current = current.cloned().unwrap_or_default();
                // A takeover keeps the fleet's successes; an election from OPEN starts at 0.
                let probe_successes = match current.state {
                    CircuitState::HalfOpen => current.probe_successes,
                    _ => 0,
                };
                CircuitRecord {
                    state: CircuitState::HalfOpen,
                    half_open_owner: Some(owner.clone()),
                    probe_lease_expiry: Some(*lease_expiry),
                    probe_successes,
                    ..current
                }
            }
            Self::HandOver {
                probe_successes,
                lease_expiry,
                ..
            } => CircuitRecord {
                probe_successes: *probe_successes,
                probe_lease_expiry: Some(*lease_expiry),
                ..current.cloned().unwrap_or_default()
            },
            Self::Close { .. } | Self::Reset { .. } => CircuitRecord::closed(),
            Self::Suspect { until, .. } => CircuitRecord {
                suspected_until: Some(*until),
                ..current.cloned().unwrap_or_default()
            },
            Self::Override { set, .. } => {
                let current = current.cloned().unwrap_or_default();
                let record = match set.kind {
                    OverrideKind::ForcedOpen => CircuitRecord::open(
                        set.until.unwrap_or(OPENED_AT_UNTIL_RELEASED),
                        current.failure_count,
                    ),
                    OverrideKind::Disabled | OverrideKind::Shadow => CircuitRecord::closed(),
                };
                CircuitRecord {
                    operator_override: Some(set.clone()),
                    ..record
                }
            }
            Self::Release { released, now, .. } => {
                let current = current.cloned().unwrap_or_default();
                match released.kind {
                    OverrideKind::ForcedOpen if released.holds_at(*now) => {
                        CircuitRecord::open(*now, current.failure_count)
                    }
                    _ => CircuitRecord {
                        operator_override: None,
                        ..current
                    },
                }
            }
        }
    }

    /// The state the write leads to (a released disable: `CLOSED`, the state it leaves
    /// unless a Powertools environment changed it).
    pub fn to_state(&self) -> CircuitState {
        match self {
            Self::Trip { .. } | Self::Reopen { .. } => CircuitState::Open,
            Self::Elect { .. } | Self::HandOver { .. } => CircuitState::HalfOpen,
            Self::Close { .. } | Self::Reset { .. } | Self::Suspect { .. } => CircuitState::Closed,
            Self::Override { set, .. } => set.kind.acts_as(),
            Self::Release { released, .. } => released.kind.acts_as(),
        }
    }

    /// The TTL attribute value the write sets (unix seconds); `None`: it removes the TTL.
    pub fn expiration(&self) -> Option<u64> {
        match self {
            Self::Trip { expiration, .. }
            | Self::Elect { expiration, .. }
            | Self::HandOver { expiration, .. }
            | Self::Close { expiration, .. }
            | Self::Reopen { expiration, .. }
            | Self::Release { expiration, .. }
            | Self::Reset { expiration, .. }
            | Self::Suspect { expiration, .. } => Some(*expiration),
            Self::Override { expiration, .. } => *expiration,
        }
    }
}

#[cfg(test)]
mod tests;
