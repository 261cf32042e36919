//! Helpers for testing your own code that uses breaker, deterministically, and (feature
//! `contract`) for checking your own [`StateStore`](crate::store::StateStore).
//!
//! A [`ManualClock`] replaces the system clock of every circuit whose config carries it, so a
//! test can trip a circuit, jump past the recovery timeout and watch it probe and close,
//! without sleeping.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
//! use breaker_runtime::store::InMemoryStore;
//! use breaker_runtime::testing::ManualClock;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let clock = ManualClock::new();
//! let config = CircuitBreakerConfig::builder()
//!     .failure_threshold(1)
//!     .success_threshold(1)
//!     .recovery_timeout(Duration::from_secs(30))
//!     .clock(clock.clone())
//!     .build()
//!     .unwrap();
//! let breaker = CircuitBreaker::new("downstream", Arc::new(InMemoryStore::new()), config);
//!
//! let failed: Result<(), Box<dyn std::error::Error + Send + Sync>> =
//!     breaker.call(|| async { Err("boom".into()) }).await;
//! assert!(failed.is_err());
//! assert_eq!(breaker.state(), CircuitState::Open);
//!
//! clock.advance(Duration::from_secs(30));
//! let probed: Result<u8, Box<dyn std::error::Error + Send + Sync>> =
//!     breaker.call(|| async { Ok(1) }).await;
//! assert_eq!(probed.unwrap(), 1);
//! assert_eq!(breaker.state(), CircuitState::Closed);
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(feature = "contract")]
pub mod contract;
use std::time::Duration;

use crate::clock::Clock;

/// A clock that moves only when told to. Clones share one time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    millis: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at a fixed, realistic instant (2023-11-14T22:13:20Z).
    pub fn new() -> Self {
        Self::at_unix_millis(1_700_000_000_000)
    }

    /// A clock at the given unix time in milliseconds.
    ///
    /// ```
    /// let clock = breaker_runtime::testing::ManualClock::at_unix_millis(5_000);
    /// assert_eq!(clock.unix_millis(), 5_000);
    /// ```
    pub fn at_unix_millis(millis: u64) -> Self {
        Self {
            millis: Arc::new(AtomicU64::new(millis)),
        }
    }

    /// Moves the clock forward.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let clock = breaker_runtime::testing::ManualClock::at_unix_millis(0);
    /// clock.advance(Duration::from_millis(1500));
    /// assert_eq!(clock.unix_millis(), 1500);
    /// ```
    pub fn advance(&self, by: Duration) {
        self.millis
            .fetch_add(by.as_millis() as u64, Ordering::AcqRel);
    }

    /// Sets the clock to the given unix time in milliseconds (it may go backwards).
    ///
    /// ```
    /// let clock = breaker_runtime::testing::ManualClock::new();
    /// clock.set_unix_millis(42);
    /// assert_eq!(clock.unix_millis(), 42);
    /// ```
    pub fn set_unix_millis(&self, millis: u64) {
        self.millis.store(millis, Ordering::Release);
    }

    /// The current time in unix milliseconds.
    ///
    /// ```
    /// assert_eq!(breaker_runtime::testing::ManualClock::new().unix_millis(), 1_700_000_000_000);
    /// ```
    pub fn unix_millis(&self) -> u64 {
        self.millis.load(Ordering::Acquire)
    }

    pub(crate) fn as_clock(&self) -> Clock {
        Clock::Manual(Arc::clone(&self.millis))
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}
