//! The circuit tunables of the sample functions, from environment variables, so one
//! binary serves a production stack (the defaults) and a fast local demo (seconds).
//!
//! | variable | tunable | default |
//! |---|---|---|
//! | `CIRCUIT_FAILURE_THRESHOLD` | consecutive failures that open the circuit | 5 |
//! | `CIRCUIT_RECOVERY_TIMEOUT_SECS` | seconds open before one probe | 30 |
//! | `CIRCUIT_SUCCESS_THRESHOLD` | probe successes that close it | 3 |
//! | `CIRCUIT_CACHE_MAX_AGE_SECS` | seconds an environment trusts its copy of the state | 5 |
//! | `CIRCUIT_RECOVERY_JITTER_SECS` | spread of the probes of environments that did not open the circuit | 4 × recovery |
//!
//! An unparsable or out-of-range value is logged and the default used: a typo in a
//! deployment must not take the function down.
#![forbid(unsafe_code)]

use std::time::Duration;

use breaker_runtime::CircuitBreakerConfig;

/// The config the environment describes (see the crate docs).
pub fn circuit_config() -> CircuitBreakerConfig {
    config_from(|name| std::env::var(name).ok())
}

/// [`circuit_config`] with the variables looked up by `var`.
pub fn config_from(var: impl Fn(&str) -> Option<String>) -> CircuitBreakerConfig {
    let defaults = CircuitBreakerConfig::default();
    let number = |name: &str| -> Option<u64> {
        let value = var(name)?;
        match value.trim().parse() {
            Ok(n) => Some(n),
            Err(_) => {
                tracing::warn!(variable = name, %value, "not a whole number; using the default");
                None
            }
        }
    };
    let mut builder = CircuitBreakerConfig::builder();
    if let Some(n) = number("CIRCUIT_FAILURE_THRESHOLD") {
        builder = builder.failure_threshold(n.try_into().unwrap_or(u32::MAX));
    }
    if let Some(n) = number("CIRCUIT_SUCCESS_THRESHOLD") {
        builder = builder.success_threshold(n.try_into().unwrap_or(u32::MAX));
    }
    if let Some(secs) = number("CIRCUIT_RECOVERY_TIMEOUT_SECS") {
        builder = builder.recovery_timeout(Duration::from_secs(secs));
    }
    if let Some(secs) = number("CIRCUIT_CACHE_MAX_AGE_SECS") {
        builder = builder.local_cache_max_age(Duration::from_secs(secs));
    }
    if let Some(secs) = number("CIRCUIT_RECOVERY_JITTER_SECS") {
        builder = builder.recovery_jitter(Duration::from_secs(secs));
    }
    builder.build().unwrap_or_else(|error| {
        tracing::warn!(%error, "invalid circuit settings; using the defaults");
        defaults
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn every_tunable_is_read() {
        let config = config_from(vars(&[
            ("CIRCUIT_FAILURE_THRESHOLD", "2"),
            ("CIRCUIT_SUCCESS_THRESHOLD", "1"),
            ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "3"),
            ("CIRCUIT_CACHE_MAX_AGE_SECS", "0"),
        ]));
        assert_eq!(config.failure_threshold(), 2);
        assert_eq!(config.success_threshold(), 1);
        assert_eq!(config.recovery_timeout(), Duration::from_secs(3));
        assert_eq!(config.local_cache_max_age(), Duration::ZERO);
    }

    #[test]
    fn nothing_set_gives_the_defaults() {
        let config = config_from(vars(&[]));
        assert_eq!(config.failure_threshold(), 5);
        assert_eq!(config.recovery_timeout(), Duration::from_secs(30));
    }

    #[test]
    fn bad_values_fall_back_to_the_defaults() {
        let unparsable = config_from(vars(&[("CIRCUIT_FAILURE_THRESHOLD", "five")]));
        assert_eq!(unparsable.failure_threshold(), 5);
        let out_of_range = config_from(vars(&[
            ("CIRCUIT_FAILURE_THRESHOLD", "0"),
            ("CIRCUIT_SUCCESS_THRESHOLD", "2"),
        ]));
        assert_eq!(out_of_range.failure_threshold(), 5);
        assert_eq!(out_of_range.success_threshold(), 3);
    }
}
