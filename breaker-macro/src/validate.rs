//! Validation: turns the parsed `key = value` pairs into [`Options`], checking every rule of
//! breaker-runtime's `attribute_docs.md` ("Compile-time checks"), each error at the user's token.

use breaker_rules::{
    MAX_DURATION_SECS, MAX_WINDOW_CALLS, MAX_WINDOW_SECS, MIN_CALL_TIMEOUT_MILLIS, MIN_COUNT,
    MIN_LOCAL_CACHE_MAX_AGE_SECS, MIN_RECOVERY_TIMEOUT_SECS, MIN_SLOW_CALL_MILLIS, MIN_WINDOW_SECS,
    default_jitter_fits, one_trip_policy,
};
use syn::{Expr, ExprPath, Ident, LitStr, Path};

use crate::parse::{AttributeArgs, KeyValue, attribute_span};

mod backoff;
mod conflicts;
mod literals;
mod signature;

pub(crate) use backoff::BackoffTunables;
use conflicts::{
    check_call_timeout_fits_lease, check_rate_policy, fleet_key_without_detection,
    handled_with_ignored, jitter_too_long, rate_with_threshold, tunable_with_config,
};

use literals::{
    at_least_one, boolean, bounded, circuit_name, crate_path, fn_path, percentage, whole_seconds,
};

/// The shortest call timeout the `call_timeout` key (whole seconds) takes.
const MIN_CALL_TIMEOUT_SECS: u64 = 1;
pub(crate) use signature::guardable;

/// Every key the attribute accepts, in the order the docs list them.
const KEYS: &[&str] = &[
    "name",
    "persistence_store",
    "config",
    "failure_threshold",
    "failure_rate",
    "slow_call_duration_ms",
    "slow_call_rate",
    "window_calls",
    "window_secs",
    "minimum_calls",
    "success_threshold",
    "recovery_timeout",
    "recovery_backoff",
    "recovery_backoff_max_secs",
    "local_cache_max_age",
    "call_timeout",
    "call_timeout_ms",
    "fleet_failure_threshold",
    "fleet_failure_rate",
    "fleet_detection",
    "on_circuit_open",
    "on_transition",
    "shadow",
    "handled",
    "ignored",
    "crate",
];

/// The inline tunables: the keys of `KEYS` from `failure_threshold` to `fleet_detection`.
const INLINE_TUNABLES: &[&str] = KEYS.split_at(3).1.split_at(17).0;

/// The keys of a rate policy: a circuit trips on one of them or on `failure_threshold`.
/// The inline tunables from `failure_rate` to `minimum_calls`.
const RATE_KEYS: &[&str] = INLINE_TUNABLES.split_at(1).1.split_at(6).0;

/// What the attribute asked for, validated.
pub(crate) struct Options {
    pub(crate) name: LitStr,
    pub(crate) krate: Path,
    pub(crate) store: Option<Expr>,
    pub(crate) config: ConfigSource,
    pub(crate) on_circuit_open: Option<ExprPath>,
    pub(crate) on_transition: Option<ExprPath>,
    /// `shadow = true`: every call runs, the verdicts are reported.
    pub(crate) shadow: bool,
    pub(crate) counts: Counts,
}

/// Where the circuit's config comes from.
pub(crate) enum ConfigSource {
    Default,
    Expr(Expr),
    Inline(Tunables),
}

/// Inline tunables; `None` keeps the default.
#[derive(Default)]
pub(crate) struct Tunables {
    pub(crate) failure_threshold: Option<u32>,
    pub(crate) success_threshold: Option<u32>,
    pub(crate) recovery_timeout_secs: Option<u64>,
    pub(crate) backoff: BackoffTunables,
    pub(crate) local_cache_max_age_secs: Option<u64>,
    pub(crate) rate: RateTunables,
    pub(crate) deadline_and_fleet: DeadlineAndFleet,
}

/// Inline keys of the call timeout and the fleet-wide policy; all `None`: the defaults.
#[derive(Default)]
pub(crate) struct DeadlineAndFleet {
    pub(crate) call_timeout_ms: Option<u64>,
    pub(crate) fleet_failure_threshold: Option<u32>,
    pub(crate) fleet_failure_rate: Option<u8>,
    pub(crate) fleet_detection: Option<bool>,
}

impl DeadlineAndFleet {
    pub(crate) fn any(&self) -> bool {
        self.call_timeout_ms.is_some()
            || self.fleet_failure_threshold.is_some()
            || self.fleet_failure_rate.is_some()
            || self.fleet_detection.is_some()
    }
}

/// Inline keys of a rate policy; all `None`: consecutive failures.
#[derive(Default)]
pub(crate) struct RateTunables {
    pub(crate) failure_rate: Option<u8>,
    pub(crate) slow_call_duration_ms: Option<u64>,
    pub(crate) slow_call_rate: Option<u8>,
    pub(crate) window_calls: Option<u32>,
    pub(crate) window_secs: Option<u64>,
    pub(crate) minimum_calls: Option<u32>,
}

impl RateTunables {
    pub(crate) fn any(&self) -> bool {
        self.failure_rate.is_some()
            || self.slow_call_rate.is_some()
            || self.slow_call_duration_ms.is_some()
            || self.window_calls.is_some()
            || self.window_secs.is_some()
            || self.minimum_calls.is_some()
    }
}

/// Which `Err`s count as failures.
pub(crate) enum Counts {
    Every,
    Handled(ExprPath),
    Ignored(ExprPath),
}

fn valid_keys() -> String {
    KEYS.join(", ")
}

impl Options {
    pub(crate) fn from_args(args: AttributeArgs) -> syn::Result<Self> {
        let mut seen: Vec<Ident> = Vec::new();
        for KeyValue { key, .. } in &args.pairs {
            let text = key.to_string();
            if !KEYS.contains(&text.as_str()) {
                return Err(syn::Error::new_spanned(
                    key,
                    format!("unknown key `{text}`; expected one of: {}", valid_keys()),
                ));
            }
            if seen.iter().any(|k| *k == text) {
                return Err(syn::Error::new_spanned(
                    key,
                    format!(
                        "duplicate key `{text}`; each key may be given once (valid keys: {})",
                        valid_keys()
                    ),
                ));
            }
            seen.push(key.clone());
        }

        let mut name = None;
        let mut krate = None;
        let mut store = None;
        let mut config_expr: Option<(Ident, Expr)> = None;
        let mut tunables = Tunables::default();
        let mut first_tunable: Option<Ident> = None;
        let mut on_circuit_open = None;
        let mut on_transition = None;
        let mut shadow = false;
        let mut handled: Option<(Ident, ExprPath)> = None;
        let mut ignored: Option<(Ident, ExprPath)> = None;
        let mut threshold_key: Option<Ident> = None;
        let mut rate_keys: Vec<Ident> = Vec::new();
        let mut minimum_value: Option<Expr> = None;
        let mut timeout_key: Option<Ident> = None;
        let mut fleet_keys: Vec<Ident> = Vec::new();
        let mut fleet_off: Option<Ident> = None;

        for KeyValue { key, value } in args.pairs {
            let text = key.to_string();
            if INLINE_TUNABLES.contains(&text.as_str()) {
                if let Some((config_key, _)) = &config_expr {
                    return Err(tunable_with_config(&key, config_key));
                }
                first_tunable.get_or_insert_with(|| key.clone());
            }
            if RATE_KEYS.contains(&text.as_str()) {
                if !one_trip_policy(threshold_key.is_some(), true)
                    && let Some(threshold) = &threshold_key
                {
                    return Err(rate_with_threshold(&key, threshold));
                }
                rate_keys.push(key.clone());
            }
            match text.as_str() {
                "name" => name = Some(circuit_name(value)?),
                "crate" => krate = Some(crate_path(value)?),
                "persistence_store" => store = Some(value),
                "config" => {
                    if let Some(tunable) = &first_tunable {
                        return Err(syn::Error::new_spanned(
                            &key,
                            format!(
                                "`config` cannot be combined with the inline tunable `{tunable}`; \
                                 set every value on the `CircuitBreakerConfig` builder instead"
                            ),
                        ));
                    }
                    config_expr = Some((key, value));
                }
                "failure_threshold" => {
                    if !one_trip_policy(true, !rate_keys.is_empty())
                        && let Some(rate) = rate_keys.first()
                    {
                        return Err(rate_with_threshold(&key, rate));
                    }
                    tunables.failure_threshold = Some(at_least_one(&key, &value)?);
                    threshold_key = Some(key);
                }
                "failure_rate" => tunables.rate.failure_rate = Some(percentage(&key, &value)?),
                "slow_call_rate" => tunables.rate.slow_call_rate = Some(percentage(&key, &value)?),
                "slow_call_duration_ms" => {
                    tunables.rate.slow_call_duration_ms = Some(bounded(
                        &key,
                        &value,
                        MIN_SLOW_CALL_MILLIS,
                        MAX_DURATION_SECS * 1000,
                        "milliseconds",
                    )?);
                }
                "window_calls" | "window_secs" => {
                    let other = if text == "window_calls" {
                        "window_secs"
                    } else {
                        "window_calls"
                    };
                    if let Some(first) = rate_keys.iter().find(|k| *k == other) {
                        return Err(syn::Error::new_spanned(
                            &key,
                            format!(
                                "`{key}` cannot be combined with `{first}`; a sliding window \
                                 counts either the last calls or the last seconds"
                            ),
                        ));
                    }
                    if text == "window_calls" {
                        let most = u64::from(MAX_WINDOW_CALLS);
                        let calls = bounded(&key, &value, u64::from(MIN_COUNT), most, "calls")?;
                        tunables.rate.window_calls = Some(calls as u32);
                    } else {
                        let secs =
                            bounded(&key, &value, MIN_WINDOW_SECS, MAX_WINDOW_SECS, "seconds")?;
                        tunables.rate.window_secs = Some(secs);
                    }
                }
                "minimum_calls" => {
                    tunables.rate.minimum_calls = Some(at_least_one(&key, &value)?);
                    minimum_value = Some(value);
                }
                "success_threshold" => {
                    tunables.success_threshold = Some(at_least_one(&key, &value)?);
                }
                "recovery_timeout" => {
                    let secs = whole_seconds(&key, &value, MIN_RECOVERY_TIMEOUT_SECS)?;
                    if !default_jitter_fits(secs) {
                        return Err(jitter_too_long(&key, &value, secs));
                    }
                    tunables.recovery_timeout_secs = Some(secs);
                }
                "recovery_backoff" => tunables.backoff.kind(&key, &value)?,
                "recovery_backoff_max_secs" => tunables.backoff.max(&key, &value)?,
                "local_cache_max_age" => {
                    tunables.local_cache_max_age_secs =
                        Some(whole_seconds(&key, &value, MIN_LOCAL_CACHE_MAX_AGE_SECS)?);
                }
                "call_timeout" | "call_timeout_ms" => {
                    if let Some(first) = &timeout_key {
                        return Err(syn::Error::new_spanned(
                            &key,
                            format!(
                                "`{key}` cannot be combined with `{first}`; give the call \
                                 timeout once, in seconds or in milliseconds"
                            ),
                        ));
                    }
                    let millis = if text == "call_timeout" {
                        whole_seconds(&key, &value, MIN_CALL_TIMEOUT_SECS)? * 1000
                    } else {
                        let most = MAX_DURATION_SECS * 1000;
                        bounded(&key, &value, MIN_CALL_TIMEOUT_MILLIS, most, "milliseconds")?
                    };
                    check_call_timeout_fits_lease(&key, &value, millis)?;
                    tunables.deadline_and_fleet.call_timeout_ms = Some(millis);
                    timeout_key = Some(key);
                }
                "fleet_failure_threshold" | "fleet_failure_rate" => {
                    if let Some(off) = &fleet_off {
                        return Err(fleet_key_without_detection(&key, off));
                    }
                    let fleet = &mut tunables.deadline_and_fleet;
                    if text == "fleet_failure_threshold" {
                        fleet.fleet_failure_threshold = Some(at_least_one(&key, &value)?);
                    } else {
                        fleet.fleet_failure_rate = Some(percentage(&key, &value)?);
                    }
                    fleet_keys.push(key);
                }
                "fleet_detection" => {
                    let enabled = boolean(&key, &value)?;
                    if !enabled {
                        if let Some(first) = fleet_keys.first() {
                            return Err(fleet_key_without_detection(first, &key));
                        }
                        fleet_off = Some(key);
                    }
                    tunables.deadline_and_fleet.fleet_detection = Some(enabled);
                }
                "on_circuit_open" => on_circuit_open = Some(fn_path(&key, value)?),
                "on_transition" => on_transition = Some(fn_path(&key, value)?),
                "shadow" => shadow = boolean(&key, &value)?,
                "handled" => {
                    if let Some((other, _)) = &ignored {
                        return Err(handled_with_ignored(&key, other));
                    }
                    handled = Some((key.clone(), fn_path(&key, value)?));
                }
                "ignored" => {
                    if let Some((other, _)) = &handled {
                        return Err(handled_with_ignored(&key, other));
                    }
                    ignored = Some((key.clone(), fn_path(&key, value)?));
                }
                _ => unreachable!("keys were checked against KEYS"),
            }
        }

        let name = name.ok_or_else(|| {
            syn::Error::new(
                attribute_span(),
                "missing `name`: expected `#[circuit_breaker(name = \"circuit-id\")]`",
            )
        })?;
        check_rate_policy(&tunables.rate, &rate_keys, minimum_value.as_ref())?;
        tunables
            .backoff
            .check_against_recovery(tunables.recovery_timeout_secs)?;
        let config = match (config_expr, first_tunable) {
            (Some((_, expr)), _) => ConfigSource::Expr(expr),
            (None, Some(_)) => ConfigSource::Inline(tunables),
            (None, None) => ConfigSource::Default,
        };
        let counts = match (handled, ignored) {
            (Some((_, path)), _) => Counts::Handled(path),
            (_, Some((_, path))) => Counts::Ignored(path),
            _ => Counts::Every,
        };
        Ok(Self {
            name,
            krate: krate.unwrap_or_else(|| syn::parse_quote!(::breaker_runtime)),
            store,
            config,
            on_circuit_open,
            on_transition,
            shadow,
            counts,
        })
    }
}
