//! Where the breaker reads the time: the system clock, or a manual one in tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
            Self::System => system_millis(),
            Self::Manual(millis) => millis.load(Ordering::Acquire),
        }
    }
}

/// The coarse realtime clock: a few milliseconds of resolution (plenty for a protocol in
/// seconds) at a fraction of the cost of `SystemTime::now`, which dominated the hot path.
/// Read through libc (rustix's `use-libc`), which finds the vDSO in a way valgrind supports.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[inline]
fn system_millis() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    // No overflow check: seconds since 1970 times 1000 fit in a u64 for 500 million years.
    now.tv_sec as u64 * 1000 + now.tv_nsec as u64 / 1_000_000
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[inline]
fn system_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_tracks_wall_time_within_its_resolution() {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let coarse = Clock::System.now_millis();
        assert!(coarse.abs_diff(wall) < 50, "coarse {coarse} vs wall {wall}");
    }
}
