//! The errors of keys that contradict each other, each at the second key of the pair.

use breaker_rules::{
    DEFAULT_JITTER_FACTOR, DEFAULT_PROBE_LEASE_SECS, DEFAULT_STORE_TIMEOUT_MILLIS,
    MAX_DURATION_SECS, longest_call_timeout_millis, minimum_fits_window, probe_lease_covers_call,
    window_has_rate,
};
use syn::{Expr, Ident};

pub(super) fn tunable_with_config(tunable: &Ident, config: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        tunable,
        format!(
            "`{tunable}` cannot be combined with `{config}`; set it on the \
             `CircuitBreakerConfig` builder instead"
        ),
    )
}

/// A recovery timeout whose default jitter would exceed the longest duration.
pub(super) fn jitter_too_long(key: &Ident, value: &Expr, secs: u64) -> syn::Error {
    let most = MAX_DURATION_SECS / u64::from(DEFAULT_JITTER_FACTOR);
    syn::Error::new_spanned(
        value,
        format!(
            "expected at most {most} seconds for `{key}`, got {secs}: its default recovery \
             jitter ({DEFAULT_JITTER_FACTOR} × the timeout) must stay within \
             {MAX_DURATION_SECS} seconds; set a longer timeout on the \
             `CircuitBreakerConfig` builder with a `recovery_jitter`"
        ),
    )
}

/// A call timeout the default probe lease does not cover (the attribute has no key for the
/// lease or the store timeout: both keep their defaults), at the timeout's value.
pub(super) fn check_call_timeout_fits_lease(
    key: &Ident,
    value: &Expr,
    millis: u64,
) -> syn::Result<()> {
    let lease = DEFAULT_PROBE_LEASE_SECS * 1000;
    let store = DEFAULT_STORE_TIMEOUT_MILLIS;
    if probe_lease_covers_call(lease, millis, store) {
        return Ok(());
    }
    let (most, unit) = match key == "call_timeout" {
        true => (longest_call_timeout_millis(lease, store) / 1000, "seconds"),
        false => (longest_call_timeout_millis(lease, store), "milliseconds"),
    };
    Err(syn::Error::new_spanned(
        value,
        format!(
            "expected at most {most} {unit} for `{key}`: the probe lease \
             (`probe_lease`, {DEFAULT_PROBE_LEASE_SECS} s by default) must cover the call \
             timeout and two store timeouts ({store} ms each); for a longer call timeout \
             build a `CircuitBreakerConfig` with a longer `probe_lease` and pass it with \
             `config`"
        ),
    ))
}

/// A fleet policy's key beside `fleet_detection = false`, which turns the policy off.
pub(super) fn fleet_key_without_detection(key: &Ident, off: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        key,
        format!(
            "`{key}` cannot be combined with `{off} = false`; the fleet-wide policy is off, \
             so its settings would never apply"
        ),
    )
}

pub(super) fn rate_with_threshold(second: &Ident, first: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        second,
        format!(
            "`{second}` cannot be combined with `{first}`; a circuit trips on consecutive \
             failures (`failure_threshold`) or on a rate (`failure_rate`, `slow_call_rate`)"
        ),
    )
}

/// `adaptive = true` and a key of another trip policy: two ways to trip, as the builder
/// says.
pub(super) fn rate_with_adaptive(second: &Ident, first: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        second,
        format!(
            "`{second}` cannot be combined with `{first}`; the adaptive policy, consecutive \
             failures (`failure_threshold`) and a rate policy (`failure_rate`, \
             `slow_call_rate`) are ways to trip: choose one"
        ),
    )
}

/// A rate policy is whole: a rate for its window, both halves of the slow-call rate, and a
/// minimum the window can reach. `keys`: the rate policy's keys as given; `minimum`:
/// `minimum_calls` and where it is written. Each error at the key (or value) that breaks it.
pub(super) fn check_rate_policy(
    keys: &[Ident],
    minimum: Option<(u32, &Expr)>,
    window_calls: Option<u32>,
) -> syn::Result<()> {
    let key = |name: &str| keys.iter().find(|k| *k == name);
    if let (Some(k), None) = (key("slow_call_rate"), key("slow_call_duration_ms")) {
        return Err(syn::Error::new_spanned(
            k,
            "`slow_call_rate` needs `slow_call_duration_ms`: the duration from which a call \
             is slow",
        ));
    }
    if let (Some(k), None) = (key("slow_call_duration_ms"), key("slow_call_rate")) {
        return Err(syn::Error::new_spanned(
            k,
            "`slow_call_duration_ms` needs `slow_call_rate`: the percentage of slow calls \
             that opens the circuit",
        ));
    }
    let rate_given = key("failure_rate").is_some() || key("slow_call_rate").is_some();
    if !window_has_rate(!keys.is_empty(), rate_given)
        && let Some(k) = keys.first()
    {
        return Err(syn::Error::new_spanned(
            k,
            format!("`{k}` needs a rate: `failure_rate` or `slow_call_rate`"),
        ));
    }
    if let (Some((minimum, value)), Some(calls)) = (minimum, window_calls)
        && !minimum_fits_window(minimum, calls)
    {
        return Err(syn::Error::new_spanned(
            value,
            format!(
                "expected `minimum_calls` of at most `window_calls` ({calls}), got {minimum}: \
                 the window never holds that many calls"
            ),
        ));
    }
    Ok(())
}

pub(super) fn handled_with_ignored(second: &Ident, first: &Ident) -> syn::Error {
    syn::Error::new_spanned(
        second,
        format!(
            "`{second}` cannot be combined with `{first}`; expected one predicate: \
             `handled` (errors that count) or `ignored` (errors that don't)"
        ),
    )
}
