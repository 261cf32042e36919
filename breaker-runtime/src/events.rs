//! What a circuit tells its users: the snapshot a rejected call sees ([`CircuitInfo`]) and
//! the events hooks receive ([`CircuitTransition`], [`ShadowEvent`]), with the causes they
//! carry.

use std::fmt;
use std::sync::Arc;

use crate::protocol::CircuitState;

/// What a rejected call (and an `on_circuit_open` callback) learns about the circuit.
///
/// `#[non_exhaustive]`: later versions may add fields; every field is public to read. Build
/// one (to test a callback) with [`new`](Self::new).
///
/// ```
/// use breaker_runtime::{CircuitInfo, CircuitState};
/// let info = CircuitInfo::new("payment-backend", CircuitState::Open, 5, Some(1_700_000_000));
/// assert_eq!(info.name(), "payment-backend");
/// assert_eq!((info.state, info.failure_count), (CircuitState::Open, 5));
/// let info = info.with_retry_after_unix_secs(Some(1_700_000_030));
/// assert_eq!(info.retry_after_unix_secs, Some(1_700_000_030));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CircuitInfo {
    /// The circuit's id (the `name` of the attribute). Shared with the circuit, so a
    /// rejection neither allocates nor copies it.
    pub name: Arc<str>,
    /// The state this environment believes the circuit is in.
    pub state: CircuitState,
    /// Consecutive failures: of the environment that tripped it while open, local ones while closed.
    pub failure_count: u32,
    /// Unix seconds when the circuit opened; `None` while closed.
    pub opened_at_unix_secs: Option<u64>,
    /// Unix seconds from which the circuit may next admit a call: the first right's due
    /// time. That is the end of the recovery wait (the recovery timeout, backed off by the
    /// circuit's reopens) for an open circuit, the end of the probe's lease for a
    /// half-open one, and for a forced open with an end the later of that end and the
    /// wait. It is the time of the environment that committed the opening (or holds the
    /// lease): that one probes first; every other environment may elect itself only
    /// after its busy fallback (its cache age, a second and its recovery jitter) more,
    /// unless it is quiet, and learns of the probe from its next read. A closed circuit
    /// gives one only for a call it turned away: the slow start's end, or the next second
    /// for a shed call. `None` when no such time is known: closed, disabled or shadowed
    /// (calls run), or forced open until released. An absolute time, so two reports of
    /// one state compare equal.
    pub retry_after_unix_secs: Option<u64>,
    /// The key of a keyed circuit's call ([`KeyedCircuitBreaker`](crate::KeyedCircuitBreaker)),
    /// whose own circuit this is; `None` for a plain circuit. [`name`](Self::name) stays the
    /// keyed circuit's name.
    pub key: Option<Arc<str>>,
    /// The call was turned away by the slow start after a close (the state is closed):
    /// [`reason`](Self::reason) says [`StopReason::SlowStart`](crate::StopReason::SlowStart),
    /// and [`retry_after_unix_secs`](Self::retry_after_unix_secs) is the ramp's end, from
    /// which every call is admitted.
    #[cfg_attr(feature = "serde", serde(default))]
    pub slow_start: bool,
    /// The call was shed by the adaptive policy (the state is closed):
    /// [`reason`](Self::reason) says [`StopReason::Shed`](crate::StopReason::Shed), and
    /// [`retry_after_unix_secs`](Self::retry_after_unix_secs) is the next second, when the
    /// share is drawn again.
    #[cfg_attr(feature = "serde", serde(default))]
    pub shed: bool,
}

impl CircuitInfo {
    /// What circuit `name` in `state` tells a rejected call: `failure_count` failures,
    /// opened at `opened_at_unix_secs` (unix seconds; `None` while closed).
    pub fn new(
        name: impl Into<Arc<str>>,
        state: CircuitState,
        failure_count: u32,
        opened_at_unix_secs: Option<u64>,
    ) -> Self {
        Self {
            name: name.into(),
            state,
            failure_count,
            opened_at_unix_secs,
            retry_after_unix_secs: None,
            key: None,
            slow_start: false,
            shed: false,
        }
    }

    /// This report with [`retry_after_unix_secs`](Self::retry_after_unix_secs) set.
    pub fn with_retry_after_unix_secs(mut self, retry_after_unix_secs: Option<u64>) -> Self {
        self.retry_after_unix_secs = retry_after_unix_secs;
        self
    }

    /// The old name of [`with_retry_after_unix_secs`](Self::with_retry_after_unix_secs).
    #[deprecated(note = "renamed `with_retry_after_unix_secs`: the name says the unit")]
    pub fn with_retry_after(self, retry_after_unix_secs: Option<u64>) -> Self {
        self.with_retry_after_unix_secs(retry_after_unix_secs)
    }

    /// This report with [`key`](Self::key) set: a keyed circuit's.
    ///
    /// ```
    /// use breaker_runtime::{CircuitInfo, CircuitState};
    /// let info = CircuitInfo::new("webhooks", CircuitState::Open, 5, Some(1)).with_key(Some("shop-17"));
    /// assert_eq!((info.name(), info.key()), ("webhooks", Some("shop-17")));
    /// ```
    pub fn with_key(mut self, key: Option<impl Into<Arc<str>>>) -> Self {
        self.key = key.map(Into::into);
        self
    }

    /// The circuit's id.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key of a keyed circuit's call, `None` for a plain circuit.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Why a call that got this report was rejected (what an `on_circuit_open` callback
    /// answers for): the circuit is open, or half-open with its probe busy, or closed a
    /// moment ago and slow-starting, or closed and shedding a share of its calls; `None`
    /// for a closed circuit that turned nothing away. Read from the state and the
    /// slow-start and shed flags. An abandoned call's reason is
    /// [`CallAbandonedError::reason`](crate::CallAbandonedError::reason).
    ///
    /// ```
    /// use breaker_runtime::{CircuitInfo, CircuitState, StopReason};
    /// let info = CircuitInfo::new("payments", CircuitState::Open, 5, Some(1_700_000_000));
    /// assert_eq!(info.reason(), Some(StopReason::Open));
    /// ```
    pub fn reason(&self) -> Option<crate::StopReason> {
        match (self.slow_start, self.shed) {
            (true, _) => Some(crate::StopReason::SlowStart),
            (_, true) => Some(crate::StopReason::Shed),
            _ => crate::StopReason::rejected_in(self.state),
        }
    }
}

/// A state change committed by this environment, handed to `on_transition` hooks.
///
/// `#[non_exhaustive]`: later versions may add fields; every field is public to read. Build
/// one (to test a hook) with [`new`](Self::new).
///
/// ```
/// use breaker_runtime::{CircuitState, CircuitTransition};
/// use breaker_runtime::{FailureKind, TransitionCause};
/// let cause = TransitionCause::Failures { kind: FailureKind::CallTimeout, count: 5 };
/// let t = CircuitTransition::new(
///     "ce",
///     CircuitState::Closed,
///     CircuitState::Open,
///     Some(1_700_000_000),
///     Some(cause),
/// );
/// assert_eq!((t.name(), t.to_state), ("ce", CircuitState::Open));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CircuitTransition {
    /// The circuit's id.
    pub name: String,
    /// The state before the transition.
    pub from_state: CircuitState,
    /// The state after the transition.
    pub to_state: CircuitState,
    /// Unix seconds when the circuit (last) opened; `None` once closed.
    pub opened_at_unix_secs: Option<u64>,
    /// What opened the circuit, for a trip or a reopen; `None` for other transitions.
    pub cause: Option<TransitionCause>,
    /// The key whose circuit made the transition, in a keyed circuit
    /// ([`KeyedCircuitBreaker`](crate::KeyedCircuitBreaker)); `None` for a plain circuit.
    /// [`name`](Self::name) stays the keyed circuit's name.
    pub key: Option<Arc<str>>,
}

impl CircuitTransition {
    /// Circuit `name` went from `from_state` to `to_state`; `opened_at_unix_secs` (unix seconds) is
    /// when it (last) opened, `cause` what opened it.
    pub fn new(
        name: impl Into<String>,
        from_state: CircuitState,
        to_state: CircuitState,
        opened_at_unix_secs: Option<u64>,
        cause: Option<TransitionCause>,
    ) -> Self {
        Self {
            name: name.into(),
            from_state,
            to_state,
            opened_at_unix_secs,
            cause,
            key: None,
        }
    }

    /// This transition with [`key`](Self::key) set: a keyed circuit's.
    ///
    /// ```
    /// use breaker_runtime::{CircuitState, CircuitTransition};
    /// let t = CircuitTransition::new("webhooks", CircuitState::Closed, CircuitState::Open, Some(1), None)
    ///     .with_key(Some("shop-17"));
    /// assert_eq!((t.name(), t.key()), ("webhooks", Some("shop-17")));
    /// ```
    pub fn with_key(mut self, key: Option<impl Into<Arc<str>>>) -> Self {
        self.key = key.map(Into::into);
        self
    }

    /// The circuit's id.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key whose circuit made the transition, `None` for a plain circuit.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }
}

/// How a call that counts against the circuit failed.
///
/// ```
/// use breaker_runtime::FailureKind;
/// assert_eq!(FailureKind::InvocationDeadline.as_str(), "invocation_deadline");
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The call returned an error the classifier counts (or a response it rejects).
    Error,
    /// The call panicked.
    Panic,
    /// The call took at least the slow-call duration of a slow-call policy.
    Slow,
    /// The call was still running at its `call_timeout` and was abandoned (or, blocking,
    /// returned after it).
    CallTimeout,
    /// The call was still running near the invocation's deadline and was abandoned.
    InvocationDeadline,
}

impl FailureKind {
    /// How logs and EMF name it: `error`, `panic`, `slow`, `call_timeout`,
    /// `invocation_deadline`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Panic => "panic",
            Self::Slow => "slow",
            Self::CallTimeout => "call_timeout",
            Self::InvocationDeadline => "invocation_deadline",
        }
    }

    /// Whether the breaker abandoned (or timed out) the call rather than the call failing.
    pub const fn is_deadline(self) -> bool {
        matches!(self, Self::CallTimeout | Self::InvocationDeadline)
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What opened a circuit.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "cause", rename_all = "snake_case"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransitionCause {
    /// This environment's own policy (or its probe) saw `count` failures; the last was of
    /// this `kind`.
    Failures {
        /// How the last counted call failed.
        kind: FailureKind,
        /// The failures counted (consecutive, or in the window; 1 for a failed probe).
        count: u32,
    },
    /// The fleet-wide policy: one fleet window held `failures` failures out of `calls`
    /// reported calls.
    Fleet {
        /// Failures the fleet reported in the window.
        failures: u64,
        /// Calls reported with them.
        calls: u64,
    },
}

impl TransitionCause {
    /// How logs and EMF name it: the failure kind, or `fleet`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Failures { kind, .. } => kind.as_str(),
            Self::Fleet { .. } => "fleet",
        }
    }
}

/// What a circuit in shadow would have done, had it not been in shadow: the verdicts of
/// its own would-be state machine, which writes nothing to the shared record.
///
/// ```
/// use breaker_runtime::ShadowDecision;
/// assert_eq!(ShadowDecision::WouldReject.as_str(), "would_reject");
/// assert_eq!(ShadowDecision::WouldOpen.would_be_state(), breaker_runtime::CircuitState::Open);
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShadowDecision {
    /// The call would have been rejected; it ran.
    WouldReject,
    /// The policies would have opened the circuit (from closed, or after a failed
    /// would-be probe); the shared record stays as it is.
    WouldOpen,
    /// After the recovery timeout this call would have been the probe; it ran like any
    /// other.
    WouldProbe,
    /// The would-be probes succeeded: the circuit would have closed.
    WouldClose,
}

impl ShadowDecision {
    /// How logs and EMF name it: `would_reject`, `would_open`, `would_probe`,
    /// `would_close`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::WouldReject => "would_reject",
            Self::WouldOpen => "would_open",
            Self::WouldProbe => "would_probe",
            Self::WouldClose => "would_close",
        }
    }

    /// The state the would-be state machine is in after it.
    pub const fn would_be_state(self) -> CircuitState {
        match self {
            Self::WouldReject | Self::WouldOpen => CircuitState::Open,
            Self::WouldProbe => CircuitState::HalfOpen,
            Self::WouldClose => CircuitState::Closed,
        }
    }
}

impl fmt::Display for ShadowDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One verdict of a circuit in shadow, handed to `on_shadow` hooks
/// ([`CircuitBreaker::with_on_shadow`](crate::CircuitBreaker::with_on_shadow)).
///
/// `#[non_exhaustive]`: later versions may add fields; every field is public to read. Build
/// one (to test a hook) with [`new`](Self::new).
///
/// ```
/// use breaker_runtime::{ShadowDecision, ShadowEvent};
/// let event = ShadowEvent::new("payment-backend", ShadowDecision::WouldOpen, Some(1_700_000_000), None);
/// assert_eq!((event.name(), event.decision.as_str()), ("payment-backend", "would_open"));
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShadowEvent {
    /// The circuit's id.
    pub name: Arc<str>,
    /// What the circuit would have done.
    pub decision: ShadowDecision,
    /// Unix seconds when the would-be circuit (last) opened; `None` once it would be
    /// closed.
    pub opened_at_unix_secs: Option<u64>,
    /// What would have opened it, for a would-be opening; `None` otherwise.
    pub cause: Option<TransitionCause>,
}

impl ShadowEvent {
    /// Circuit `name` in shadow would have made `decision`; `opened_at_unix_secs` (unix seconds) is
    /// when the would-be circuit (last) opened, `cause` what would have opened it.
    pub fn new(
        name: impl Into<Arc<str>>,
        decision: ShadowDecision,
        opened_at_unix_secs: Option<u64>,
        cause: Option<TransitionCause>,
    ) -> Self {
        Self {
            name: name.into(),
            decision,
            opened_at_unix_secs,
            cause,
        }
    }

    /// The circuit's id.
    pub fn name(&self) -> &str {
        &self.name
    }
}
