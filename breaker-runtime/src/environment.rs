//! Facts about this execution environment: its id, its jitter, the kill switch.

use std::hash::{Hash, Hasher};
use std::sync::{LazyLock, Once};
use std::time::Duration;

/// Unique per process, stable for its life: the fleet reporter, and (with each value's
/// number) the probe owner written to the store.
static ENVIRONMENT_ID: LazyLock<String> = LazyLock::new(|| uuid::Uuid::new_v4().to_string());

/// This environment's id.
pub(crate) fn id() -> &'static str {
    &ENVIRONMENT_ID
}

/// The id a circuit with `config` reports and names itself by: the configured one (a
/// simulation's), else this process's.
pub(crate) fn id_of(config: &crate::config::CircuitBreakerConfig) -> std::sync::Arc<str> {
    match &config.environment_id {
        Some(id) => std::sync::Arc::clone(id),
        None => id().into(),
    }
}

/// A new id for one circuit breaker value of this process: the process's id and the
/// value's number (`<uuid>#<n>`), unique per value.
pub(crate) fn value_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}#{n}", id())
}

/// A delay in `[0, jitter]`, fixed per environment and circuit: a hash of both, so it is
/// spread across a fleet (environment ids are random) and reproducible in a simulation
/// (which chooses them).
pub(crate) fn jitter_millis(jitter: Duration, environment_id: &str, circuit: &str) -> u64 {
    let span = u64::try_from(jitter.as_millis()).unwrap_or(u64::MAX);
    if span == 0 {
        return 0;
    }
    let mut hasher = std::hash::DefaultHasher::new();
    (environment_id, circuit).hash(&mut hasher);
    hasher.finish() % span.saturating_add(1)
}

/// A value in `[0, span)` from `environment_id` and `salt`: different across a fleet and
/// across calls, reproducible in a simulation.
pub(crate) fn spread(span: u64, environment_id: &str, salt: u64) -> u64 {
    if span == 0 {
        return 0;
    }
    let mut hasher = std::hash::DefaultHasher::new();
    (environment_id, salt).hash(&mut hasher);
    hasher.finish() % span
}

/// Whether `CIRCUIT_BREAKER_DISABLED` is truthy (`1`, `true`, `yes`, `on`); warns once.
pub(crate) fn breakers_disabled() -> bool {
    static WARNED: Once = Once::new();
    let disabled = std::env::var("CIRCUIT_BREAKER_DISABLED").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    });
    if disabled {
        WARNED.call_once(|| {
            tracing::warn!("CIRCUIT_BREAKER_DISABLED is set: every circuit breaker is bypassed");
        });
    }
    disabled
}
