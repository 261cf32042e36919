//! The errors breaker hands to its users.

use std::fmt;
use std::time::Duration;

use crate::events::{CircuitInfo, FailureKind};

/// Returned (converted into the protected function's error type) when the circuit rejected
/// a call without running it: the circuit is open (or half-open with its probe elsewhere)
/// and no `on_circuit_open` callback is set.
///
/// `#[non_exhaustive]`: later versions may add fields; [`circuit`](Self::circuit) is public
/// to read. Code that works with `Box<dyn Error>` finds it with `downcast_ref`:
///
/// ```
/// use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState};
/// let circuit = CircuitInfo::new("ce", CircuitState::Open, 5, Some(1));
/// let err: Box<dyn std::error::Error + Send + Sync> = CircuitBreakerOpenError::new(circuit).into();
/// assert_eq!(err.to_string(), "circuit 'ce' is open");
/// assert!(err.downcast_ref::<CircuitBreakerOpenError>().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("circuit '{}' {}", circuit.name, match circuit.reason() {
    Some(crate::StopReason::SlowStart) => "is slow-starting after a close: this call was turned away",
    Some(crate::StopReason::Shed) => "is shedding calls in a brownout: this call was shed",
    _ => "is open",
})]
#[non_exhaustive]
pub struct CircuitBreakerOpenError {
    /// The circuit that rejected the call.
    pub circuit: CircuitInfo,
}

impl CircuitBreakerOpenError {
    /// A call rejected by `circuit`.
    pub fn new(circuit: CircuitInfo) -> Self {
        Self { circuit }
    }

    /// Unix seconds from which the circuit may next admit a call, if known: the
    /// circuit's [`CircuitInfo::retry_after_unix_secs`] (whose due time it is is said there).
    /// A caller that defers work until then (a queue's delay) meets the open circuit no sooner.
    ///
    /// ```
    /// use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState};
    /// let circuit = CircuitInfo::new("ce", CircuitState::Open, 5, Some(1_700_000_000))
    ///     .with_retry_after_unix_secs(Some(1_700_000_060));
    /// assert_eq!(CircuitBreakerOpenError::new(circuit).retry_after_unix_secs(), Some(1_700_000_060));
    /// ```
    pub fn retry_after_unix_secs(&self) -> Option<u64> {
        self.circuit.retry_after_unix_secs
    }

    /// The old name of [`retry_after_unix_secs`](Self::retry_after_unix_secs).
    #[deprecated(note = "renamed `retry_after_unix_secs`: the name says the unit")]
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after_unix_secs()
    }

    /// Why the call was rejected: [`StopReason::Open`](crate::StopReason::Open),
    /// [`ProbeBusy`](crate::StopReason::ProbeBusy) while half-open, or
    /// [`SlowStart`](crate::StopReason::SlowStart) in a slow start's ramp after a close,
    /// [`Shed`](crate::StopReason::Shed) by the adaptive policy.
    ///
    /// ```
    /// use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState, StopReason};
    /// let circuit = CircuitInfo::new("ce", CircuitState::Open, 5, Some(1));
    /// assert_eq!(CircuitBreakerOpenError::new(circuit).reason(), StopReason::Open);
    /// ```
    pub fn reason(&self) -> crate::StopReason {
        self.circuit.reason().unwrap_or(crate::StopReason::Open)
    }
}

/// Returned (converted into the protected function's error type) when the breaker admitted
/// an async call, then abandoned it at its deadline: its `call_timeout`, or the invocation's
/// deadline ([`deadline::scope`](crate::deadline::scope)). The call counts as a failure; it
/// may have reached the downstream. A blocking call is never abandoned. A call with an
/// `on_circuit_open` callback is abandoned too, and answered with this error, not the
/// callback: the callback answers rejections, calls that reached nothing.
///
/// `#[non_exhaustive]`: later versions may add fields; every field is public to read.
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::{CallAbandonedError, CircuitInfo, CircuitState, FailureKind};
/// let circuit = CircuitInfo::new("ce", CircuitState::Closed, 1, None);
/// let err = CallAbandonedError::new(circuit, FailureKind::CallTimeout, Duration::from_millis(2500));
/// assert_eq!(err.to_string(), "circuit 'ce': call abandoned after 2.5s (call timeout)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct CallAbandonedError {
    /// The circuit that abandoned the call, as it was then (still closed, unless the
    /// abandonment tripped it).
    pub circuit: CircuitInfo,
    /// [`FailureKind::CallTimeout`] or [`FailureKind::InvocationDeadline`].
    pub kind: FailureKind,
    /// How long the call had run.
    pub after: Duration,
}

impl CallAbandonedError {
    /// A call `circuit` abandoned after it ran for `after`, for `kind`
    /// ([`FailureKind::CallTimeout`] or [`FailureKind::InvocationDeadline`]).
    pub fn new(circuit: CircuitInfo, kind: FailureKind, after: Duration) -> Self {
        Self {
            circuit,
            kind,
            after,
        }
    }

    /// Why the call was abandoned: [`StopReason::CallTimeout`](crate::StopReason::CallTimeout)
    /// or [`InvocationDeadline`](crate::StopReason::InvocationDeadline).
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::{CallAbandonedError, CircuitInfo, CircuitState, FailureKind, StopReason};
    /// let circuit = CircuitInfo::new("ce", CircuitState::Closed, 1, None);
    /// let err = CallAbandonedError::new(circuit, FailureKind::InvocationDeadline, Duration::from_secs(2));
    /// assert_eq!(err.reason(), StopReason::InvocationDeadline);
    /// ```
    pub fn reason(&self) -> crate::StopReason {
        crate::StopReason::abandoned_for(self.kind)
    }

    pub(crate) fn from_parts(circuit: CircuitInfo, abandoned: Abandoned) -> Self {
        Self::new(circuit, abandoned.kind, abandoned.after)
    }
}

impl fmt::Display for CallAbandonedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let abandoned = Abandoned {
            kind: self.kind,
            after: self.after,
        };
        write!(f, "circuit '{}': {abandoned}", self.circuit.name)
    }
}

/// Why and when a running call was abandoned, before the circuit's info is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abandoned {
    /// [`FailureKind::CallTimeout`] or [`FailureKind::InvocationDeadline`].
    pub(crate) kind: FailureKind,
    /// How long the call had run.
    pub(crate) after: Duration,
}

impl fmt::Display for Abandoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.kind {
            FailureKind::InvocationDeadline => "the invocation deadline was near",
            _ => "call timeout",
        };
        write!(f, "call abandoned after {:?} ({why})", self.after)
    }
}

/// An invalid configuration: a value out of range or a store built without what it needs.
///
/// ```
/// use breaker_runtime::CircuitBreakerConfig;
/// let err = CircuitBreakerConfig::builder().failure_threshold(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "failure_threshold must be at least 1, got 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CircuitBreakerConfigError {
    /// A numeric field is below its minimum.
    #[error("{field} must be at least {minimum}, got {value}")]
    OutOfRange {
        /// The field's name, as in the builder.
        field: &'static str,
        /// The smallest accepted value, with its unit.
        minimum: String,
        /// The value given, with its unit.
        value: String,
    },
    /// A numeric field is above its maximum (durations beyond it would overflow the
    /// protocol's arithmetic, or outlive the record's TTL).
    #[error("{field} must be at most {maximum}, got {value}")]
    TooLarge {
        /// The field's name, as in the builder.
        field: &'static str,
        /// The largest accepted value, with its unit.
        maximum: String,
        /// The value given, with its unit.
        value: String,
    },
    /// A required setting was not given.
    #[error("{0} is required")]
    Missing(&'static str),
    /// Two settings contradict each other.
    #[error("{0}")]
    Conflict(String),
}
