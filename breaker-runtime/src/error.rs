//! The errors breaker hands to its users.

use crate::state::CircuitInfo;

/// Returned (converted into the protected function's error type) when a call is rejected
/// because the circuit is open and no `on_circuit_open` callback is set.
///
/// Code that works with `Box<dyn Error>` finds it with `downcast_ref`:
///
/// ```
/// use breaker_runtime::{CircuitBreakerOpenError, CircuitInfo, CircuitState};
/// let err: Box<dyn std::error::Error + Send + Sync> = CircuitBreakerOpenError {
///     circuit: CircuitInfo { name: "ce".into(), state: CircuitState::Open, failure_count: 5, opened_at: Some(1) },
/// }
/// .into();
/// assert_eq!(err.to_string(), "circuit 'ce' is open");
/// assert!(err.downcast_ref::<CircuitBreakerOpenError>().is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("circuit '{}' is open", circuit.name)]
pub struct CircuitBreakerOpenError {
    /// The circuit that rejected the call.
    pub circuit: CircuitInfo,
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
