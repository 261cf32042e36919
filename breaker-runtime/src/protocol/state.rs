//! `CircuitState`: the three states of the protocol's record.

use std::fmt;

/// The state of a circuit, as stored in the shared record.
///
/// ```
/// use breaker_runtime::CircuitState;
/// assert_eq!(CircuitState::HalfOpen.to_string(), "HALF_OPEN");
/// assert_eq!(CircuitState::parse("OPEN"), Some(CircuitState::Open));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CircuitState {
    /// Calls go through; failures are counted.
    #[default]
    Closed,
    /// Calls are rejected until the recovery timeout elapses.
    Open,
    /// One environment probes the downstream; every other call is rejected.
    HalfOpen,
}

impl CircuitState {
    /// The name stored in DynamoDB: `CLOSED`, `OPEN` or `HALF_OPEN`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "CLOSED",
            Self::Open => "OPEN",
            Self::HalfOpen => "HALF_OPEN",
        }
    }

    /// Parses a stored name; `None` for anything else.
    pub fn parse(stored: &str) -> Option<Self> {
        match stored {
            "CLOSED" => Some(Self::Closed),
            "OPEN" => Some(Self::Open),
            "HALF_OPEN" => Some(Self::HalfOpen),
            _ => None,
        }
    }
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
