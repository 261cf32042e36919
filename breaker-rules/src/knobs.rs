//! Every setting of a circuit, once: its attribute key, what value the key takes and its
//! limits, its default, its builder method, its doc line, and (for the keys that set the
//! config) the builder call the attribute makes.
//!
//! [`knobs!`](macro@crate::knobs) holds the table. This crate turns it into [`KNOBS`], which the
//! `#[circuit_breaker]` attribute reads for its keys and their compile-time checks, and
//! which a test holds the README's and the attribute docs' tables to; breaker-runtime turns
//! the same rows into the setters of the config the attribute builds. A new setting is a
//! row here, its field and builder method in breaker-runtime's config, and the rows the
//! docs test prints for the two tables.

use crate::{
    MAX_DURATION_SECS, MAX_MAX_OPEN_FOR_SECS, MAX_RECOVERY_BACKOFF_SECS, MAX_SLOW_START_SECS,
    MAX_WINDOW_CALLS, MAX_WINDOW_SECS, MIN_CALL_TIMEOUT_MILLIS, MIN_CALL_TIMEOUT_SECS, MIN_COUNT,
    MIN_LOCAL_CACHE_MAX_AGE_SECS, MIN_RECOVERY_TIMEOUT_SECS, MIN_SLOW_CALL_MILLIS,
    MIN_SLOW_START_SECS, MIN_WINDOW_SECS,
};

/// One setting: a key of the attribute, a method of the config builder, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knob {
    /// The attribute key, or for a builder-only setting its builder method's name.
    pub key: &'static str,
    /// What the key takes, and whether it sets the config.
    pub group: Group,
    /// The value the attribute key takes, with its limits.
    pub value: Value,
    /// What an unset key (or setting) gives, as the docs say it.
    pub default: &'static str,
    /// The builder call that sets it (`""`: none, the key is the call site's).
    pub builder: &'static str,
    /// The section of the attribute docs that explains the key (`""`: builder only).
    pub section: &'static str,
    /// What it does, in one line.
    pub doc: &'static str,
}

/// What a key belongs to, which decides the rules it shares with others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// The call site's: its circuit's name, store, callbacks, predicates, the crate path.
    CallSite,
    /// `config = expr`: the whole config, built elsewhere.
    Config,
    /// An inline tunable: a config setting the attribute builds, never with `config`.
    Tunable,
    /// An inline tunable of a rate policy: never with `failure_threshold` either.
    Rate,
    /// A config setting the attribute also applies to a `config = expr`.
    Flag,
    /// A config setting only the builder has.
    BuilderOnly,
}

impl Group {
    /// Whether the key is an inline tunable, which `config` excludes.
    pub const fn is_tunable(self) -> bool {
        matches!(self, Group::Tunable | Group::Rate)
    }

    /// Whether the key sets the config the attribute builds.
    pub const fn sets_config(self) -> bool {
        matches!(self, Group::Tunable | Group::Rate | Group::Flag)
    }
}

/// The value an attribute key takes, and its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A non-empty string literal.
    Name,
    /// An expression, evaluated once per call site.
    Expr,
    /// The path of a fn.
    FnPath,
    /// A plain path.
    CratePath,
    /// An integer literal of at least [`MIN_COUNT`] that fits a `u32`.
    Count,
    /// An integer percentage from [`MIN_PERCENT`](crate::MIN_PERCENT) to
    /// [`MAX_PERCENT`](crate::MAX_PERCENT).
    Percent,
    /// Whole seconds from `min` to [`MAX_DURATION_SECS`].
    Seconds {
        /// The least value.
        min: u64,
    },
    /// An integer from `min` to `max`, in `unit`.
    Range {
        /// The least value.
        min: u64,
        /// The greatest value.
        max: u64,
        /// What the integer counts ("seconds", "calls").
        unit: &'static str,
    },
    /// `true` or `false`.
    Flag,
    /// One of these string literals.
    Choice(&'static [&'static str]),
    /// No attribute key: a builder-only setting.
    NoKey,
}

/// The table of settings, handed to `$callback!` as one row per setting, in the order the
/// docs list them:
///
/// `key: Group, Value, default "..", builder "..", section "..", doc ".." [=> |builder, value: type| builder call];`
///
/// The rows of the keys that set the config end with the builder call that applies the
/// key's value (its type is what the attribute emits for the key: `u32` for a count, `u8`
/// for a percentage, `u64` for seconds and ranges, `bool`, `&str` for a choice). Their paths
/// (`Duration`, `SlidingWindow`, `RecoveryBackoff`) resolve where the callback is invoked.
#[macro_export]
macro_rules! knobs {
    ($callback:ident) => {
        $callback! {
            name: CallSite, Name, default "required", builder "", section "name",
                doc "the circuit's id: the key of its shared record in the store";
            persistence_store: CallSite, Expr, default "[`default_store()`](crate::default_store())",
                builder "", section "persistence_store",
                doc "a store value or an `Arc` of one, evaluated once per call site";
            keyed_by: CallSite, Expr, default "none: one circuit", builder "",
                section "keyed_by",
                doc "a circuit per key: an expression of the fn's arguments whose value is `AsRef<str>` (`&str`, `String`), evaluated before each call";
            max_open_keys: CallSite, Count, default "1000", builder "", section "keyed_by",
                doc "with `keyed_by`: at most this many keys open at once, fleet-wide; past it a key that would trip keeps running";
            config: Config, Expr, default "`CircuitBreakerConfig::default()`", builder "",
                section "config",
                doc "a [`CircuitBreakerConfig`](crate::CircuitBreakerConfig) (or a reference to one), for the settings without a key; no inline tunable beside it";
            failure_threshold: Tunable, Count, default "5", builder "`.failure_threshold(n)`",
                section "inline-tunables",
                doc "consecutive counted failures that open the circuit"
                => |builder, failures: u32| builder.failure_threshold(failures);
            failure_rate: Rate, Percent, default "none: consecutive failures",
                builder "`.failure_rate(p)`", section "rate-policies",
                doc "instead of `failure_threshold`: open when p % of the window's calls failed"
                => |builder, percent: u8| builder.failure_rate(percent);
            slow_call_duration_ms: Rate,
                Range { min: MIN_SLOW_CALL_MILLIS, max: MAX_DURATION_SECS * 1000, unit: "milliseconds" },
                default "none", builder "`.slow_calls(d, p)`", section "rate-policies",
                doc "with `slow_call_rate`: a call taking this long or longer is slow"
                => |builder, millis: u64| builder.slow_call_duration(Duration::from_millis(millis));
            slow_call_rate: Rate, Percent, default "none", builder "`.slow_calls(d, p)`",
                section "rate-policies",
                doc "with `slow_call_duration_ms`: open when p % of the window's calls were slow"
                => |builder, percent: u8| builder.slow_call_rate(percent);
            window_calls: Rate,
                Range { min: MIN_COUNT as u64, max: MAX_WINDOW_CALLS as u64, unit: "calls" },
                default "the last 100 calls", builder "`.sliding_window(SlidingWindow::Calls(n))`",
                section "rate-policies",
                doc "the window a rate is computed over: this environment's last n calls"
                => |builder, calls: u64| {
                    let calls = u32::try_from(calls).unwrap_or(u32::MAX);
                    builder.sliding_window(SlidingWindow::Calls(calls))
                };
            window_secs: Rate,
                Range { min: MIN_WINDOW_SECS, max: MAX_WINDOW_SECS, unit: "seconds" },
                default "the last 100 calls", builder "`.sliding_window(SlidingWindow::Time(d))`",
                section "rate-policies",
                doc "instead of `window_calls`: the calls of the last n seconds"
                => |builder, secs: u64| {
                    builder.sliding_window(SlidingWindow::Time(Duration::from_secs(secs)))
                };
            minimum_calls: Rate, Count, default "10 (or the window's length)",
                builder "`.minimum_calls(n)`", section "rate-policies",
                doc "calls the window must hold before a rate is judged, at most `window_calls`"
                => |builder, calls: u32| builder.minimum_calls(calls);
            adaptive: Tunable, Flag, default "`false`: all or nothing",
                builder "`.adaptive(AdaptivePolicy::default())`", section "adaptive-shedding",
                doc "in a brownout, shed a share of the calls computed from the recent successes, failures and load sheds (`Outcome::Overloaded`) instead of opening; opens for the whole fleet on a total outage (15 failures in a row, or the fleet rule); not with a rate policy nor `failure_threshold`"
                => |builder, enabled: bool| builder.adaptive_enabled(enabled);
            success_threshold: Tunable, Count, default "3", builder "`.success_threshold(n)`",
                section "inline-tunables",
                doc "probe successes in a row, fleet-wide, that close the circuit"
                => |builder, successes: u32| builder.success_threshold(successes);
            recovery_timeout: Tunable, Seconds { min: MIN_RECOVERY_TIMEOUT_SECS }, default "30 s",
                builder "`.recovery_timeout(d)`", section "inline-tunables",
                doc "time open before the first probe"
                => |builder, secs: u64| builder.recovery_timeout(Duration::from_secs(secs));
            recovery_backoff: Tunable, Choice(&["doubling", "none"]),
                default "`\"none\"`: the recovery timeout each time (opt in: `\"doubling\"`, × 2 per reopen)",
                builder "`.recovery_backoff(RecoveryBackoff::doubling())`, `RecoveryBackoff::exponential(f, max)`, `RecoveryBackoff::none()`, `.recovery_backoff_fn(f)`",
                section "inline-tunables",
                doc "each failed probe without a close lengthens the next wait, the same for the whole fleet; a trip from closed waits the recovery timeout"
                => |builder, kind: &str| builder.recovery_backoff(match kind {
                    "none" => RecoveryBackoff::none(),
                    _ => RecoveryBackoff::doubling(),
                });
            recovery_backoff_max_secs: Tunable,
                Range { min: MIN_RECOVERY_TIMEOUT_SECS, max: MAX_RECOVERY_BACKOFF_SECS, unit: "seconds" },
                default "10 × `recovery_timeout`", builder "`RecoveryBackoff::exponential(f, max)`",
                section "inline-tunables",
                doc "the longest backed-off wait, at least `recovery_timeout`"
                => |builder, secs: u64| builder.recovery_backoff(RecoveryBackoff::exponential(
                    $crate::DEFAULT_BACKOFF_FACTOR,
                    Duration::from_secs(secs),
                ));
            max_open_for: Tunable,
                Range { min: 1, max: MAX_MAX_OPEN_FOR_SECS, unit: "seconds" },
                default "300 s", builder "`.max_open_for(d)`", section "inline-tunables",
                doc "the longest opening a failure may ask for (a `Retry-After`: `Outcome::OpenFor`, from `handled`, a tower classifier or `call_with`)"
                => |builder, secs: u64| builder.max_open_for(Duration::from_secs(secs));
            slow_start: Tunable,
                Range { min: MIN_SLOW_START_SECS, max: MAX_SLOW_START_SECS, unit: "seconds" },
                default "none: every call at once", builder "`.slow_start(d)`",
                section "inline-tunables",
                doc "after each close, the share of calls an environment admits rises from a tenth to all over this ramp (seconds); the others take the open path"
                => |builder, secs: u64| builder.slow_start(Duration::from_secs(secs));
            local_cache_max_age: Tunable, Seconds { min: MIN_LOCAL_CACHE_MAX_AGE_SECS },
                default "5 s", builder "`.local_cache_max_age(d)`", section "inline-tunables",
                doc "how long an environment trusts its copy of the shared state"
                => |builder, secs: u64| builder.local_cache_max_age(Duration::from_secs(secs));
            call_timeout: Tunable, Seconds { min: MIN_CALL_TIMEOUT_SECS }, default "none",
                builder "`.call_timeout(d)`", section "call-deadlines",
                doc "an async call still running this long after its admission is abandoned and counts as a failure"
                => |builder, secs: u64| builder.call_timeout(Duration::from_secs(secs));
            call_timeout_ms: Tunable,
                Range { min: MIN_CALL_TIMEOUT_MILLIS, max: MAX_DURATION_SECS * 1000, unit: "milliseconds" },
                default "none", builder "`.call_timeout(d)`", section "call-deadlines",
                doc "instead of `call_timeout`: the call timeout in milliseconds"
                => |builder, millis: u64| builder.call_timeout(Duration::from_millis(millis));
            fleet_failure_threshold: Tunable, Count, default "10",
                builder "`.fleet_policy(FleetPolicy::default().with_failure_threshold(n))`",
                section "the-fleet-wide-policy",
                doc "sets the fleet rule: a third of it in one fleet window raises a suspicion, twice it under the suspicion opens the circuit"
                => |builder, failures: u32| builder.fleet_failure_threshold(failures);
            fleet_failure_rate: Tunable, Percent, default "50",
                builder "`.fleet_policy(FleetPolicy::default().with_failure_rate(p))`",
                section "the-fleet-wide-policy",
                doc "percent of the calls those failures must make (reported in a window, estimated under a suspicion)"
                => |builder, percent: u8| builder.fleet_failure_rate(percent);
            fleet_detection: Tunable, Flag, default "`true`", builder "`.fleet_detection(b)`",
                section "the-fleet-wide-policy",
                doc "whether this circuit reports its failures for the fleet-wide policy"
                => |builder, enabled: bool| builder.fleet_detection(enabled);
            on_circuit_open: CallSite, FnPath,
                default "return `Err(CircuitBreakerOpenError.into())`", builder "",
                section "on_circuit_open",
                doc "answers a rejected call: takes the fn's arguments plus a trailing [`CircuitInfo`](crate::CircuitInfo)";
            on_transition: CallSite, FnPath, default "none", builder "",
                section "on_transition", doc "a `fn(CircuitTransition)` run after each transition";
            shadow: Flag, Flag, default "`false`", builder "`.shadow(b)`",
                section "shadow",
                doc "every call runs; what the circuit would have done (rejected, opened, probed, closed) is reported, not done; with `config` too"
                => |builder, enabled: bool| builder.shadow(enabled);
            handled: CallSite, FnPath, default "every `Err` counts", builder "",
                section "handled-and-ignored", doc "a `fn(&E) -> bool`: the errors that count; or a `fn(&E) -> Outcome`, whose `Outcome::OpenFor(d)` also opens the circuit for `d` (a `Retry-After`)";
            ignored: CallSite, FnPath, default "every `Err` counts", builder "",
                section "handled-and-ignored", doc "a `fn(&E) -> bool`: the errors that don't count";
            crate: CallSite, CratePath, default "`::breaker_runtime`", builder "",
                section "crate", doc "the path of breaker-runtime, if renamed";
            recovery_jitter: BuilderOnly, NoKey, default "4 × `recovery_timeout`",
                builder "`.recovery_jitter(d)`", section "",
                doc "spreads the probes of busy environments that did not open the circuit (they wait their cache age, a second and up to this)";
            store_timeout: BuilderOnly, NoKey, default "1 s", builder "`.store_timeout(d)`",
                section "", doc "longest a store call may take before failing open";
            store_error_backoff: BuilderOnly, NoKey, default "5 s",
                builder "`.store_error_backoff(d)`", section "",
                doc "how long the store is left alone after an error";
            probe_lease: BuilderOnly, NoKey, default "30 s", builder "`.probe_lease(d)`",
                section "", doc "how long a prober holds the probe before another may take over";
            deadline_margin: BuilderOnly, NoKey, default "the store timeout",
                builder "`.deadline_margin(d)`", section "",
                doc "how long before the invocation's deadline a guarded async call is abandoned";
        }
    };
}

/// Builds [`KNOBS`] from the rows of [`knobs!`](macro@crate::knobs).
macro_rules! knob_table {
    ($(
        $key:ident: $group:ident, $value:expr, default $default:literal, builder $builder:literal,
        section $section:literal, doc $doc:literal
        $(=> |$b:ident, $v:ident: $ty:ty| $apply:expr)?;
    )*) => {
        /// Every setting, in the order the docs list them.
        pub const KNOBS: &[Knob] = &[$(
            Knob {
                key: stringify!($key),
                group: Group::$group,
                value: { use Value::*; $value },
                default: $default,
                builder: $builder,
                section: $section,
                doc: $doc,
            },
        )*];
    };
}

knobs!(knob_table);

/// The setting of an attribute key, if the attribute has that key.
pub fn knob(key: &str) -> Option<&'static Knob> {
    KNOBS
        .iter()
        .find(|knob| knob.key == key && knob.group != Group::BuilderOnly)
}

/// Every attribute key, in the order the docs list them.
pub fn keys() -> impl Iterator<Item = &'static str> {
    KNOBS
        .iter()
        .filter(|knob| knob.group != Group::BuilderOnly)
        .map(|knob| knob.key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_listed_once_with_a_section_and_a_doc() {
        let keys: Vec<_> = keys().collect();
        for (i, key) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(key), "`{key}` twice");
            let knob = knob(key).unwrap();
            assert!(!knob.section.is_empty() && !knob.doc.is_empty(), "{key}");
            assert_eq!(knob.value == Value::NoKey, knob.group == Group::BuilderOnly);
        }
        assert_eq!(keys.first(), Some(&"name"));
        assert_eq!(keys.last(), Some(&"crate"));
        assert!(
            knob("recovery_jitter").is_none(),
            "a builder-only setting has no key"
        );
    }

    #[test]
    fn the_documented_defaults_are_the_defaults() {
        use crate::*;
        let default = |key: &str| KNOBS.iter().find(|k| k.key == key).unwrap().default;
        let count = |n: u32| n.to_string();
        let secs = |n: u64| format!("{n} s");
        assert_eq!(
            default("failure_threshold"),
            count(DEFAULT_FAILURE_THRESHOLD)
        );
        assert_eq!(
            default("success_threshold"),
            count(DEFAULT_SUCCESS_THRESHOLD)
        );
        assert_eq!(
            default("recovery_timeout"),
            secs(DEFAULT_RECOVERY_TIMEOUT_SECS)
        );
        assert_eq!(
            default("local_cache_max_age"),
            secs(DEFAULT_LOCAL_CACHE_MAX_AGE_SECS)
        );
        assert_eq!(default("probe_lease"), secs(DEFAULT_PROBE_LEASE_SECS));
        assert_eq!(
            default("store_timeout"),
            secs(DEFAULT_STORE_TIMEOUT_MILLIS / 1000)
        );
        let cap = format!("{DEFAULT_BACKOFF_CAP_FACTOR} × `recovery_timeout`");
        assert_eq!(default("recovery_backoff_max_secs"), cap);
        let jitter = format!("{DEFAULT_JITTER_FACTOR} × `recovery_timeout`");
        assert_eq!(default("recovery_jitter"), jitter);
        let growth = format!("× {DEFAULT_BACKOFF_FACTOR} per reopen");
        // The backoff is opt-in; the default names what opting in grows by.
        assert!(default("recovery_backoff").starts_with("`\"none\"`"));
        assert!(default("recovery_backoff").contains(&growth));
    }

    #[test]
    fn the_config_settings_have_a_builder_call() {
        for knob in KNOBS {
            let sets_config = knob.group.sets_config() || knob.group == Group::BuilderOnly;
            assert_eq!(sets_config, !knob.builder.is_empty(), "{}", knob.key);
        }
    }
}
