//! Facts about this execution environment: its id, its jitter, the kill switch.

use std::sync::{LazyLock, Once};
use std::time::Duration;

/// Unique per process, stable for its life: the probe owner id written to the store.
static ENVIRONMENT_ID: LazyLock<String> = LazyLock::new(|| uuid::Uuid::new_v4().to_string());

/// This environment's id.
pub(crate) fn id() -> &'static str {
    &ENVIRONMENT_ID
}

/// A random delay in `[0, jitter]`, drawn once per circuit.
pub(crate) fn jitter_millis(jitter: Duration) -> u64 {
    let span = jitter.as_millis() as u64;
    if span == 0 {
        return 0;
    }
    (uuid::Uuid::new_v4().as_u128() % (u128::from(span) + 1)) as u64
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
