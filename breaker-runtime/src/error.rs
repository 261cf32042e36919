//! The errors breaker hands to its users.

use std::fmt;
use std::time::Duration;

use crate::events::{CircuitInfo, FailureKind};

/// Returned (converted into the protected function's error type) when the breaker did not
/// let a call complete: it was rejected because the circuit is open and no
/// `on_circuit_open` callback is set, or it was abandoned at its deadline
/// ([`abandoned`](Self::abandoned) says which and when).
///
/// Code that works with `Box<dyn Error>` finds it with `downcast_ref`:
///
/// ```
/// use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState};
/// let err: Box<dyn std::error::Error + Send + Sync> = CircuitBreakerOpenError::rejected(
///     CircuitInfo { name: "ce".into(), state: CircuitState::Open, failure_count: 5, opened_at: Some(1) },
/// )
/// .into();
/// assert_eq!(err.to_string(), "circuit 'ce' is open");
/// assert!(err.downcast_ref::<CircuitBreakerOpenError>().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CircuitBreakerOpenError {
    /// The circuit that rejected (or abandoned) the call.
    pub circuit: CircuitInfo,
    /// `Some` when the call was admitted, then abandoned at its deadline; `None` for a
    /// rejection.
    pub abandoned: Option<Abandoned>,
}

impl CircuitBreakerOpenError {
    /// A call rejected by `circuit`.
    pub fn rejected(circuit: CircuitInfo) -> Self {
        Self {
            circuit,
            abandoned: None,
        }
    }

    /// A call `circuit` abandoned.
    pub fn abandoned(circuit: CircuitInfo, abandoned: Abandoned) -> Self {
        Self {
            circuit,
            abandoned: Some(abandoned),
        }
    }

    /// Whether the call was rejected without running (rather than abandoned).
    pub fn is_rejection(&self) -> bool {
        self.abandoned.is_none()
    }
}

impl fmt::Display for CircuitBreakerOpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.circuit.name;
        match &self.abandoned {
            None => write!(f, "circuit '{name}' is open"),
            Some(abandoned) => write!(f, "circuit '{name}': {abandoned}"),
        }
    }
}

/// Why and when a running call was abandoned.
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::{Abandoned, FailureKind};
/// let a = Abandoned { kind: FailureKind::CallTimeout, after: Duration::from_millis(2500) };
/// assert_eq!(a.to_string(), "call abandoned after 2.5s (call timeout)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abandoned {
    /// [`FailureKind::CallTimeout`] or [`FailureKind::InvocationDeadline`].
    pub kind: FailureKind,
    /// How long the call had run.
    pub after: Duration,
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
