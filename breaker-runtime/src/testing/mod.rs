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

#[cfg(feature = "contract")]
#[cfg_attr(docsrs, doc(cfg(feature = "contract")))]
pub mod contract;

pub use crate::clock::ManualClock;
