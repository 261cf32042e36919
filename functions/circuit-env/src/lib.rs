//! The sample functions' settings from environment variables, so one binary serves a
//! production stack (the defaults) and a fast local demo (seconds). [`setting`] is the one
//! policy every function follows: unset is the default, anything else must parse and be in
//! range, or the function stops at start naming the variable and the value.
//!
//! The circuit tunables:
//!
//! | variable | tunable | default | range |
//! |---|---|---|---|
//! | `CIRCUIT_FAILURE_THRESHOLD` | consecutive failures that open the circuit | 5 | 1–1000 |
//! | `CIRCUIT_RECOVERY_TIMEOUT_SECS` | seconds open before one probe | 30 | 1–86400 |
//! | `CIRCUIT_SUCCESS_THRESHOLD` | probe successes that close it | 3 | 1–1000 |
//! | `CIRCUIT_CACHE_MAX_AGE_SECS` | seconds an environment trusts its copy of the state | 5 | 0–3600 |
//! | `CIRCUIT_RECOVERY_JITTER_SECS` | spread of the probes of environments that did not open the circuit | 4 × recovery | 0–86400 |
//! | `CIRCUIT_CALL_TIMEOUT_MS` | milliseconds after which a guarded async call is abandoned and counts as a failure | none | 1–900000 |
//! | `CIRCUIT_PROBE_LEASE_SECS` | seconds the probing environment holds the probe | 30 | 1–3600 |
//! | `CIRCUIT_RECOVERY_BACKOFF` | `doubling`: each failed probe doubles the next wait (up to 10 × recovery) | `none` | `none`, `doubling` |
//! | `CIRCUIT_SLOW_START_SECS` | after a close, the share of calls admitted rises from a tenth to all over this many seconds | none | 1–3600 |
//!
//! The probe lease must cover the call timeout and two store timeouts (1 s each: the
//! election's write and the outcome's); a call timeout it does not cover stops the function
//! naming both variables.
//!
//! `main` calls [`start`] (or [`init`]) first, so a bad value stops the function before its
//! first invocation; [`circuit_config`] then hands the checked config to `#[circuit_breaker]`.
#![forbid(unsafe_code)]

pub mod setting;
mod start;

use std::sync::OnceLock;

use breaker_runtime::CircuitBreakerConfig;

pub use setting::SettingError;
pub use start::start;

static CONFIG: OnceLock<CircuitBreakerConfig> = OnceLock::new();

/// Reads and checks the circuit tunables once; call it at the top of `main`.
///
/// ```
/// // Nothing set in a doc test: the defaults.
/// let config = circuit_env::init().unwrap();
/// assert_eq!(config.failure_threshold(), 5);
/// ```
pub fn init() -> Result<CircuitBreakerConfig, SettingError> {
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    let config = config_from(|name| std::env::var(name).ok())?;
    Ok(CONFIG.get_or_init(|| config).clone())
}

/// The config the environment describes, for `#[circuit_breaker(config = ...)]`.
///
/// # Panics
///
/// If a tunable is invalid and [`init`] was not called first (it returns the error
/// instead, for `main` to report).
pub fn circuit_config() -> CircuitBreakerConfig {
    init().unwrap_or_else(|error| panic!("circuit settings: {error}"))
}

/// The circuit config with the variables looked up by `var`.
///
/// ```
/// let config = circuit_env::config_from(|name| (name == "CIRCUIT_FAILURE_THRESHOLD").then(|| "2".into())).unwrap();
/// assert_eq!(config.failure_threshold(), 2);
/// let error = circuit_env::config_from(|name| (name == "CIRCUIT_FAILURE_THRESHOLD").then(|| "0".into())).unwrap_err();
/// assert_eq!(error.to_string(), "CIRCUIT_FAILURE_THRESHOLD=0: must be between 1 and 1000");
/// ```
pub fn config_from(
    var: impl Fn(&str) -> Option<String>,
) -> Result<CircuitBreakerConfig, SettingError> {
    let number =
        |name: &str, default: u64, range| setting::number_from(name, var(name), default, range);
    let defaults = CircuitBreakerConfig::default();
    let failure_threshold = number(
        "CIRCUIT_FAILURE_THRESHOLD",
        defaults.failure_threshold().into(),
        1..=1000,
    )?;
    let success_threshold = number(
        "CIRCUIT_SUCCESS_THRESHOLD",
        defaults.success_threshold().into(),
        1..=1000,
    )?;
    let recovery = number(
        "CIRCUIT_RECOVERY_TIMEOUT_SECS",
        defaults.recovery_timeout().as_secs(),
        1..=86_400,
    )?;
    let cache_age = number(
        "CIRCUIT_CACHE_MAX_AGE_SECS",
        defaults.local_cache_max_age().as_secs(),
        0..=3600,
    )?;
    let mut builder = CircuitBreakerConfig::builder()
        .failure_threshold(u32::try_from(failure_threshold).unwrap_or(u32::MAX))
        .success_threshold(u32::try_from(success_threshold).unwrap_or(u32::MAX))
        .recovery_timeout(std::time::Duration::from_secs(recovery))
        .local_cache_max_age(std::time::Duration::from_secs(cache_age));
    // Unset: the runtime's default, a multiple of the recovery timeout.
    if let Some(value) = var("CIRCUIT_RECOVERY_JITTER_SECS") {
        let jitter =
            setting::number_from("CIRCUIT_RECOVERY_JITTER_SECS", Some(value), 0, 0..=86_400)?;
        builder = builder.recovery_jitter(std::time::Duration::from_secs(jitter));
    }
    let lease = number(
        "CIRCUIT_PROBE_LEASE_SECS",
        defaults.probe_lease().as_secs(),
        1..=breaker_rules::TTL_GRACE_SECS,
    )?;
    builder = builder.probe_lease(std::time::Duration::from_secs(lease));
    builder = builder.recovery_backoff(match var("CIRCUIT_RECOVERY_BACKOFF").as_deref() {
        None | Some("none") => breaker_runtime::RecoveryBackoff::none(),
        Some("doubling") => breaker_runtime::RecoveryBackoff::doubling(),
        Some(other) => {
            return Err(SettingError::new(
                "CIRCUIT_RECOVERY_BACKOFF",
                other,
                "must be none or doubling",
            ));
        }
    });
    // Unset: no slow start, every call admitted from the close on.
    if let Some(value) = var("CIRCUIT_SLOW_START_SECS") {
        let ramp = setting::number_from(
            "CIRCUIT_SLOW_START_SECS",
            Some(value),
            0,
            breaker_rules::MIN_SLOW_START_SECS..=breaker_rules::MAX_SLOW_START_SECS,
        )?;
        builder = builder.slow_start(std::time::Duration::from_secs(ramp));
    }
    // Unset: no call timeout; calls are still abandoned near the invocation's deadline.
    if let Some(value) = var("CIRCUIT_CALL_TIMEOUT_MS") {
        let timeout = setting::number_from(
            "CIRCUIT_CALL_TIMEOUT_MS",
            Some(value.clone()),
            0,
            1..=900_000,
        )?;
        check_lease_covers_call(
            lease,
            var("CIRCUIT_PROBE_LEASE_SECS").is_some(),
            &value,
            timeout,
        )?;
        builder = builder.call_timeout(std::time::Duration::from_millis(timeout));
    }
    builder
        .build()
        .map_err(|error| SettingError::new("CIRCUIT_*", "", error.to_string()))
}

/// `CIRCUIT_CALL_TIMEOUT_MS` against `CIRCUIT_PROBE_LEASE_SECS` (`lease`, `lease_set`: given
/// rather than the default), with the default store timeout: the config builder's rule,
/// worded with the two variables.
fn check_lease_covers_call(
    lease: u64,
    lease_set: bool,
    timeout_value: &str,
    timeout_millis: u64,
) -> Result<(), SettingError> {
    let store = CircuitBreakerConfig::default().store_timeout();
    let store = u64::try_from(store.as_millis()).unwrap_or(u64::MAX);
    let lease_millis = lease.saturating_mul(1000);
    if breaker_rules::probe_lease_covers_call(lease_millis, timeout_millis, store) {
        return Ok(());
    }
    let needed = timeout_millis.saturating_add(2 * store).div_ceil(1000);
    let most = breaker_rules::longest_call_timeout_millis(lease_millis, store);
    let default = if lease_set { "" } else { " (the default)" };
    Err(SettingError::new(
        "CIRCUIT_CALL_TIMEOUT_MS",
        timeout_value,
        format!(
            "must leave CIRCUIT_PROBE_LEASE_SECS={lease}{default} room for two store timeouts \
             ({store} ms each): the probe lease covers the call and the store writes around \
             it; set CIRCUIT_CALL_TIMEOUT_MS to at most {most} or CIRCUIT_PROBE_LEASE_SECS to \
             at least {needed}"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;

    /// An environment holding only `pairs`.
    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> =
            pairs.iter().map(|&(k, v)| (k.into(), v.into())).collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn every_tunable_is_read() {
        let config = config_from(vars(&[
            ("CIRCUIT_FAILURE_THRESHOLD", "2"),
            ("CIRCUIT_SUCCESS_THRESHOLD", "1"),
            ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "3"),
            ("CIRCUIT_CACHE_MAX_AGE_SECS", "0"),
            ("CIRCUIT_RECOVERY_JITTER_SECS", "1"),
            ("CIRCUIT_CALL_TIMEOUT_MS", "2500"),
            ("CIRCUIT_PROBE_LEASE_SECS", "20"),
            ("CIRCUIT_SLOW_START_SECS", "120"),
        ]))
        .unwrap();
        assert_eq!(config.failure_threshold(), 2);
        assert_eq!(config.success_threshold(), 1);
        assert_eq!(config.recovery_timeout(), Duration::from_secs(3));
        assert_eq!(config.local_cache_max_age(), Duration::ZERO);
        assert_eq!(config.recovery_jitter(), Duration::from_secs(1));
        assert_eq!(config.call_timeout(), Some(Duration::from_millis(2500)));
        assert_eq!(config.probe_lease(), Duration::from_secs(20));
        assert_eq!(config.slow_start(), Some(Duration::from_secs(120)));
        let error = config_from(vars(&[("CIRCUIT_SLOW_START_SECS", "0")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "CIRCUIT_SLOW_START_SECS=0: must be between 1 and 3600"
        );
    }

    #[test]
    fn a_call_timeout_the_probe_lease_does_not_cover_names_both_variables() {
        let error = config_from(vars(&[("CIRCUIT_CALL_TIMEOUT_MS", "30000")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "CIRCUIT_CALL_TIMEOUT_MS=30000: must leave CIRCUIT_PROBE_LEASE_SECS=30 (the \
             default) room for two store timeouts (1000 ms each): the probe lease covers the \
             call and the store writes around it; set CIRCUIT_CALL_TIMEOUT_MS to at most 28000 \
             or CIRCUIT_PROBE_LEASE_SECS to at least 32"
        );
        let error = config_from(vars(&[
            ("CIRCUIT_CALL_TIMEOUT_MS", "9000"),
            ("CIRCUIT_PROBE_LEASE_SECS", "10"),
        ]))
        .unwrap_err();
        assert!(
            error.to_string().starts_with(
                "CIRCUIT_CALL_TIMEOUT_MS=9000: must leave CIRCUIT_PROBE_LEASE_SECS=10 room"
            ),
            "{error}"
        );
        let longer = config_from(vars(&[
            ("CIRCUIT_CALL_TIMEOUT_MS", "30000"),
            ("CIRCUIT_PROBE_LEASE_SECS", "32"),
        ]))
        .unwrap();
        assert_eq!(longer.probe_lease(), Duration::from_secs(32));
        assert_eq!(longer.call_timeout(), Some(Duration::from_secs(30)));
    }

    #[test]
    fn nothing_set_gives_the_defaults() {
        let config = config_from(vars(&[])).unwrap();
        assert_eq!(config.failure_threshold(), 5);
        assert_eq!(config.recovery_timeout(), Duration::from_secs(30));
        assert_eq!(config.call_timeout(), None);
    }

    #[test]
    fn bad_values_name_the_variable_and_the_value() {
        for (name, value, expected) in [
            (
                "CIRCUIT_FAILURE_THRESHOLD",
                "five",
                "CIRCUIT_FAILURE_THRESHOLD=five: not a whole number",
            ),
            (
                "CIRCUIT_SUCCESS_THRESHOLD",
                "0",
                "CIRCUIT_SUCCESS_THRESHOLD=0: must be between 1 and 1000",
            ),
            (
                "CIRCUIT_RECOVERY_TIMEOUT_SECS",
                "-1",
                "CIRCUIT_RECOVERY_TIMEOUT_SECS=-1: not a whole number",
            ),
            (
                "CIRCUIT_CACHE_MAX_AGE_SECS",
                "99999",
                "CIRCUIT_CACHE_MAX_AGE_SECS=99999: must be between 0 and 3600",
            ),
            (
                "CIRCUIT_RECOVERY_JITTER_SECS",
                "1s",
                "CIRCUIT_RECOVERY_JITTER_SECS=1s: not a whole number",
            ),
            (
                "CIRCUIT_CALL_TIMEOUT_MS",
                "0",
                "CIRCUIT_CALL_TIMEOUT_MS=0: must be between 1 and 900000",
            ),
            (
                "CIRCUIT_PROBE_LEASE_SECS",
                "3601",
                "CIRCUIT_PROBE_LEASE_SECS=3601: must be between 1 and 3600",
            ),
            (
                "CIRCUIT_RECOVERY_BACKOFF",
                "exponential",
                "CIRCUIT_RECOVERY_BACKOFF=exponential: must be none or doubling",
            ),
        ] {
            let error = config_from(vars(&[(name, value)])).unwrap_err();
            assert_eq!(error.to_string(), expected);
        }
    }
}
