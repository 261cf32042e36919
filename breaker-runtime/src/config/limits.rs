//! The limits of [`breaker_rules`], each checked with the error that names its field.

use std::time::Duration;

use breaker_rules::{MAX_PERCENT, MIN_COUNT, count_ok, percent_ok};

use crate::error::CircuitBreakerConfigError;

/// A rate: a percentage within the rules' bounds.
pub(super) fn percent(field: &'static str, value: u8) -> Result<(), CircuitBreakerConfigError> {
    at_least_one(field, u32::from(value))?;
    if percent_ok(value as u64) {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::TooLarge {
        field,
        maximum: format!("{MAX_PERCENT} (percent)"),
        value: value.to_string(),
    })
}

pub(super) fn at_most(
    field: &'static str,
    value: Duration,
    maximum: Duration,
) -> Result<(), CircuitBreakerConfigError> {
    if value <= maximum {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::TooLarge {
        field,
        maximum: format!("{maximum:?}"),
        value: format!("{value:?}"),
    })
}

/// A count: at least [`MIN_COUNT`]. The one rule for every count a user sets, the config
/// builder's and the keyed circuit's setters alike.
pub(crate) fn at_least_one(
    field: &'static str,
    value: impl TryInto<u64> + Copy + ToString,
) -> Result<(), CircuitBreakerConfigError> {
    if value.try_into().is_ok_and(count_ok) {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::OutOfRange {
        field,
        minimum: MIN_COUNT.to_string(),
        value: value.to_string(),
    })
}

pub(super) fn at_least(
    field: &'static str,
    value: Duration,
    minimum: Duration,
) -> Result<(), CircuitBreakerConfigError> {
    if value >= minimum {
        return Ok(());
    }
    Err(CircuitBreakerConfigError::OutOfRange {
        field,
        minimum: format!("{minimum:?}"),
        value: format!("{value:?}"),
    })
}
