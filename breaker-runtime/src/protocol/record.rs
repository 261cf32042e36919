//! `CircuitRecord`: the shared state of one circuit, as a store keeps it.

use super::state::CircuitState;

/// The shared state of one circuit, as stored.
///
/// `#[non_exhaustive]`: later versions may add fields. Build a record with [`closed`](Self::closed), [`open`](Self::open) or
/// [`half_open`](Self::half_open), or from a [`RecordWrite`](super::RecordWrite) with
/// [`applied_to`](super::RecordWrite::applied_to); every field is public to read and set.
///
/// ```
/// use breaker_runtime::CircuitState;
/// use breaker_runtime::store::implement::CircuitRecord;
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
    /// While half-open: the probe successes in a row the fleet has seen since the circuit
    /// opened, whichever environments made them (0 otherwise, and when absent).
    pub probe_successes: u32,
    /// While open or half-open: the reopens (failed probes) since the circuit last closed
    /// or tripped from closed, which lengthen the next wait
    /// ([`RecoveryBackoff`](crate::RecoveryBackoff)); 0 otherwise, and when absent.
    pub reopen_count: u32,
    /// An operator's override (`breaker open` / `breaker disable`), if one was set.
    pub operator_override: Option<Override>,
    /// While closed: until when (unix seconds) the fleet's counters are suspicious, so every
    /// environment reports its calls (sampled) as well as its failures to the counters of
    /// this suspicion ([`RecordWrite::Suspect`](super::RecordWrite::Suspect)). `None`: not
    /// suspected. Every write that leaves the closed state drops it.
    pub suspected_until: Option<u64>,
    /// While open or half-open after a breaker's trip: the probe owner id of the environment
    /// whose trip wrote this opening, so that a trip whose answer was lost recognises its own
    /// landed attempt; `None` on a breaker's reopen, an operator's forced open, a Powertools
    /// trip, and whenever closed. A Powertools reopen (an `UpdateItem`) keeps the name of
    /// the trip before it, with a new `opened_at`.
    pub opened_by: Option<String>,
    /// While open after a failure that said how long the downstream wants no calls (a
    /// `Retry-After`, [`Outcome::OpenFor`](crate::Outcome::OpenFor)): unix seconds until
    /// which every environment rejects, and from which the first probe may come, instead of
    /// the recovery timeout (backed off or not). Written by that trip or reopen, kept by an
    /// election and a hand-over, dropped by every other breaker write; honoured only while
    /// later than `opened_at` (a Powertools reopen keeps the attribute but opens anew).
    pub open_until: Option<u64>,
}

impl CircuitRecord {
    /// The record of a circuit that was never written (or was closed).
    pub fn closed() -> Self {
        Self::default()
    }

    /// An open circuit, opened at `opened_at` (unix seconds) after `failure_count` failures.
    ///
    /// ```
    /// let record = breaker_runtime::store::implement::CircuitRecord::open(1_700_000_000, 5);
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
            probe_successes: 0,
            reopen_count: 0,
            operator_override: None,
            suspected_until: None,
            opened_by: None,
            open_until: None,
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

    /// The operator's override, if one is set and holds at `now` (unix seconds).
    ///
    /// ```
    /// use breaker_runtime::store::implement::{CircuitRecord, Override, OverrideKind};
    /// let mut record = CircuitRecord::closed();
    /// record.operator_override = Some(Override::new(OverrideKind::Disabled, "ops", 100).until(200));
    /// assert!(record.live_override(150).is_some());
    /// assert!(record.live_override(200).is_none(), "it ends at its `until` second");
    /// ```
    pub fn live_override(&self, now: u64) -> Option<&Override> {
        self.operator_override.as_ref().filter(|o| o.holds_at(now))
    }

    /// The end of an opening the downstream asked for ([`open_until`](Self::open_until)):
    /// while open or half-open (an election and a hand-over keep the opening), if later than
    /// the opening itself.
    ///
    /// ```
    /// use breaker_runtime::store::implement::CircuitRecord;
    /// let mut record = CircuitRecord::open(100, 5);
    /// record.open_until = Some(120);
    /// assert_eq!(record.asked_open_until(), Some(120));
    /// record.opened_at = Some(130); // a Powertools reopen that kept the attribute
    /// assert_eq!(record.asked_open_until(), None);
    /// ```
    pub fn asked_open_until(&self) -> Option<u64> {
        let opened_at = self.opened_at?;
        self.open_until
            .filter(|until| *until > opened_at && self.state != CircuitState::Closed)
    }

    /// The end of the fleet's suspicion (unix seconds) if the circuit is closed and the
    /// suspicion holds at `now` (unix seconds).
    ///
    /// ```
    /// use breaker_runtime::store::implement::CircuitRecord;
    /// let mut record = CircuitRecord::closed();
    /// record.suspected_until = Some(110);
    /// assert_eq!(record.live_suspicion(100), Some(110));
    /// assert_eq!(record.live_suspicion(110), None, "it ends at its second");
    /// ```
    pub fn live_suspicion(&self, now: u64) -> Option<u64> {
        self.suspected_until
            .filter(|until| now < *until && self.state == CircuitState::Closed)
    }

    /// The state the fleet's breakers act on at `now` (unix seconds): an override that
    /// holds decides ([`OverrideKind::acts_as`]), else the stored state. They differ when a
    /// Powertools environment, which ignores overrides, wrote the state under one.
    ///
    /// ```
    /// use breaker_runtime::CircuitState;
    /// use breaker_runtime::store::implement::{CircuitRecord, Override, OverrideKind};
    /// let mut record = CircuitRecord::closed();
    /// record.operator_override = Some(Override::new(OverrideKind::ForcedOpen, "ops", 100).until(200));
    /// assert_eq!(record.effective_state(150), CircuitState::Open);
    /// assert_eq!(record.effective_state(200), CircuitState::Closed, "ended: the stored state");
    /// ```
    pub fn effective_state(&self, now: u64) -> CircuitState {
        self.live_override(now)
            .map_or(self.state, |o| o.kind.acts_as())
    }
}

/// What an operator's override does to a circuit, in every environment of the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OverrideKind {
    /// `breaker open`: every call is rejected, nobody probes.
    ForcedOpen,
    /// `breaker disable`: every call runs, failures never trip the circuit.
    Disabled,
    /// `breaker shadow`: every call runs, and every breaker of the fleet reports what it
    /// would have done (rejected, opened, probed) without writing a trip.
    Shadow,
}

impl OverrideKind {
    /// How the item stores it: `OPEN`, `DISABLED` or `SHADOW`.
    ///
    /// ```
    /// use breaker_runtime::store::implement::OverrideKind;
    /// assert_eq!(OverrideKind::ForcedOpen.as_str(), "OPEN");
    /// assert_eq!(OverrideKind::parse("DISABLED"), Some(OverrideKind::Disabled));
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ForcedOpen => "OPEN",
            Self::Disabled => "DISABLED",
            Self::Shadow => "SHADOW",
        }
    }

    /// The state a breaker acts on while it holds: forced open, `Open`; disabled or
    /// shadow, `Closed` (a shadow's would-be decisions are each environment's own).
    ///
    /// ```
    /// use breaker_runtime::CircuitState;
    /// use breaker_runtime::store::implement::OverrideKind;
    /// assert_eq!(OverrideKind::ForcedOpen.acts_as(), CircuitState::Open);
    /// assert_eq!(OverrideKind::Disabled.acts_as(), CircuitState::Closed);
    /// ```
    pub fn acts_as(self) -> CircuitState {
        match self {
            Self::ForcedOpen => CircuitState::Open,
            Self::Disabled | Self::Shadow => CircuitState::Closed,
        }
    }

    /// The kind an item's `OPEN`, `DISABLED` or `SHADOW` names; `None` for anything else.
    pub fn parse(stored: &str) -> Option<Self> {
        match stored {
            "OPEN" => Some(Self::ForcedOpen),
            "DISABLED" => Some(Self::Disabled),
            "SHADOW" => Some(Self::Shadow),
            _ => None,
        }
    }
}

impl std::fmt::Display for OverrideKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ForcedOpen => "forced open",
            Self::Disabled => "disabled",
            Self::Shadow => "shadowed",
        })
    }
}

/// An operator's override of one circuit: what, until when, who set it, when and why.
///
/// It holds from `at` while `now < until` (forever without `until`, until released).
/// Two overrides are the same one when kind, `at` and `by` match
/// ([`same_as`](Self::same_as)): a release or a replacement names the one it read.
///
/// ```
/// use breaker_runtime::store::implement::{Override, OverrideKind};
/// let forced = Override::new(OverrideKind::ForcedOpen, "alice", 1_700_000_000)
///     .until(1_700_001_800)
///     .reason("payments incident 42");
/// assert!(forced.holds_at(1_700_001_799));
/// assert!(!forced.holds_at(1_700_001_800));
/// assert!(Override::new(OverrideKind::Disabled, "bob", 5).holds_at(u64::MAX));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Override {
    /// Forced open, disabled or shadowed.
    pub kind: OverrideKind,
    /// Unix seconds when it ends by itself; `None`: when released.
    pub until: Option<u64>,
    /// Who set it (an operator's name or AWS identity).
    pub by: String,
    /// Why, if the operator said.
    pub reason: Option<String>,
    /// Unix seconds when it was set.
    pub at: u64,
}

impl Override {
    /// An override of `kind` set by `by` at `at` (unix seconds), until released.
    pub fn new(kind: OverrideKind, by: impl Into<String>, at: u64) -> Self {
        Self {
            kind,
            until: None,
            by: by.into(),
            reason: None,
            at,
        }
    }

    /// Ends by itself at `until` (unix seconds).
    pub fn until(mut self, until: u64) -> Self {
        self.until = Some(until);
        self
    }

    /// Records why.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Whether it holds at `now` (unix seconds).
    pub fn holds_at(&self, now: u64) -> bool {
        self.until.is_none_or(|until| now < until)
    }

    /// Whether `other` is this override (same kind, set at the same second by the same
    /// operator), whatever its end or reason.
    pub fn same_as(&self, other: &Override) -> bool {
        self.kind == other.kind && self.at == other.at && self.by == other.by
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suspicion_holds_on_a_closed_record_until_its_second() {
        let mut record = CircuitRecord::closed();
        assert_eq!(record, CircuitRecord::default());
        assert_eq!(record.live_suspicion(100), None, "none written");
        record.suspected_until = Some(110);
        assert_eq!(record.live_suspicion(100), Some(110));
        assert_eq!(record.live_suspicion(109), Some(110));
        assert_eq!(record.live_suspicion(110), None, "it ends at its second");
        assert_eq!(record.live_suspicion(111), None);
        record.state = CircuitState::Open;
        assert_eq!(
            record.live_suspicion(100),
            None,
            "an open circuit suspects nothing"
        );
    }
}
