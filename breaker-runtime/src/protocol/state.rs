//! `CircuitState`: the three states of the protocol's record.

use std::fmt;

/// The state of a circuit, as stored in the shared record.
///
/// ```
/// use breaker_runtime::CircuitState;
/// assert_eq!(CircuitState::HalfOpen.to_string(), "HALF_OPEN");
/// assert_eq!("OPEN".parse(), Ok(CircuitState::Open));
/// assert!("open".parse::<CircuitState>().is_err());
/// ```
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "SCREAMING_SNAKE_CASE"))]
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
}

/// A name that is not one of [`CircuitState`]'s stored names (`CLOSED`, `OPEN`,
/// `HALF_OPEN`), from its [`FromStr`](std::str::FromStr).
///
/// ```
/// use breaker_runtime::{CircuitState, ParseCircuitStateError};
/// let err: ParseCircuitStateError = "ajar".parse::<CircuitState>().unwrap_err();
/// assert_eq!(err.to_string(), "not a circuit state: 'ajar' (CLOSED, OPEN or HALF_OPEN)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a circuit state: '{0}' (CLOSED, OPEN or HALF_OPEN)")]
pub struct ParseCircuitStateError(String);

impl std::str::FromStr for CircuitState {
    type Err = ParseCircuitStateError;

    /// Parses a stored name, exactly as [`as_str`](Self::as_str) writes it.
    fn from_str(stored: &str) -> Result<Self, Self::Err> {
        match stored {
            "CLOSED" => Ok(Self::Closed),
            "OPEN" => Ok(Self::Open),
            "HALF_OPEN" => Ok(Self::HalfOpen),
            _ => Err(ParseCircuitStateError(stored.to_owned())),
        }
    }
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
