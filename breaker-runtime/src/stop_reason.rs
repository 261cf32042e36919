//! Why a guarded call ended without running its body to the end: the one answer the
//! `on_circuit_open` callback, a [`CircuitBreakerOpenError`](crate::CircuitBreakerOpenError)
//! and a [`CallAbandonedError`](crate::CallAbandonedError) all give.

use crate::events::FailureKind;
use crate::protocol::CircuitState;

/// Why a call did not run, or did not run to its end.
///
/// A callback reads it from [`CircuitInfo::reason`](crate::CircuitInfo::reason) (it runs
/// only for rejections); an error from
/// [`CircuitBreakerOpenError::reason`](crate::CircuitBreakerOpenError::reason) or
/// [`CallAbandonedError::reason`](crate::CallAbandonedError::reason).
///
/// `#[non_exhaustive]`: later versions add reasons (a match needs a `_` arm).
///
/// ```
/// use breaker_runtime::{CircuitInfo, CircuitState, StopReason};
/// let info = CircuitInfo::new("payments", CircuitState::HalfOpen, 5, Some(1_700_000_000));
/// assert_eq!(info.reason(), Some(StopReason::ProbeBusy));
/// assert!(StopReason::ProbeBusy.is_rejection() && !StopReason::CallTimeout.is_rejection());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// Rejected without running: the circuit is open.
    Open,
    /// Rejected without running: the circuit is half-open and its one probe is another
    /// call's.
    ProbeBusy,
    /// Rejected without running: the circuit closed a moment ago and its slow start
    /// admits only a share of the calls yet
    /// ([`slow_start`](crate::CircuitBreakerConfigBuilder::slow_start)).
    SlowStart,
    /// Rejected without running: the circuit is closed and its adaptive policy shed this
    /// call, one of a share it computes from the recent successes and failures
    /// ([`adaptive`](crate::CircuitBreakerConfigBuilder::adaptive)).
    Shed,
    /// Admitted, then abandoned at the circuit's `call_timeout`; counted as a failure. The
    /// call may have reached the downstream.
    CallTimeout,
    /// Admitted, then abandoned at the invocation's deadline less the circuit's margin;
    /// counted as a failure. The call may have reached the downstream.
    InvocationDeadline,
}

impl StopReason {
    /// True when the call never ran (nothing reached the downstream), false when it was
    /// admitted and abandoned (it may have).
    pub fn is_rejection(self) -> bool {
        matches!(
            self,
            Self::Open | Self::ProbeBusy | Self::SlowStart | Self::Shed
        )
    }

    /// Why a circuit in `state` rejects a call; `None` for a closed one, which rejects
    /// nothing.
    pub(crate) fn rejected_in(state: CircuitState) -> Option<Self> {
        match state {
            CircuitState::Open => Some(Self::Open),
            CircuitState::HalfOpen => Some(Self::ProbeBusy),
            CircuitState::Closed => None,
        }
    }

    /// Why a call abandoned as a failure of `kind` was.
    pub(crate) fn abandoned_for(kind: FailureKind) -> Self {
        match kind {
            FailureKind::InvocationDeadline => Self::InvocationDeadline,
            _ => Self::CallTimeout,
        }
    }
}
