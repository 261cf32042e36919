//! Where the breaker reads the time: the system clock, or a manual one in tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The time source of a circuit. An enum, not a trait object, so the hot path pays one
/// branch instead of a virtual call.
#[derive(Debug, Clone, Default)]
pub(crate) enum Clock {
    #[default]
    System,
    Manual(Arc<AtomicU64>),
}

impl Clock {
    /// Unix time in milliseconds.
    #[inline]
    pub(crate) fn now_millis(&self) -> u64 {
        match self {
            Self::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            Self::Manual(millis) => millis.load(Ordering::Acquire),
        }
    }
}
