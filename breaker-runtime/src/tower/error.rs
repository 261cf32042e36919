//! The error of a guarded service, and how a rejection becomes one.

use crate::error::CircuitBreakerOpenError;
use crate::events::CircuitInfo;

/// The error of a guarded service: the inner service's error, or a
/// [`CircuitBreakerOpenError`] when the circuit rejected the request.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A rejection, as the service's error.
pub(super) fn open_error(circuit: CircuitInfo) -> BoxError {
    Box::new(CircuitBreakerOpenError::new(circuit))
}
