//! # breaker
//!
//! A circuit breaker for AWS Lambda. Annotate a function with `#[circuit_breaker]`; when the
//! downstream it calls keeps failing, every execution environment of the fleet stops calling
//! it (the open state is shared through one DynamoDB item), and rejected calls go to an
//! `on_circuit_open` callback or fail fast with [`CircuitBreakerOpenError`].
//!
//! ```
//! use std::sync::Arc;
//! use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
//! use breaker_runtime::store::InMemoryStore;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let breaker = CircuitBreaker::new("downstream", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
//! let answer: Result<u32, anyhow::Error> = breaker.call(|| async { Ok(42) }).await;
//! assert_eq!(answer.unwrap(), 42);
//! assert_eq!(breaker.state(), CircuitState::Closed);
//! # }
//! ```
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, nightly): each feature-gated item says which feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

mod blocking;
mod breaker;
mod clock;
mod config;
pub mod deadline;
mod default_store;
mod environment;
mod error;
mod events;
mod keyed;
mod log_line;
mod observe;
mod policy;
mod protocol;
mod stop_reason;
mod store_runtime;
#[cfg(test)]
mod test_logs;
mod timer;
mod warm_up;

pub mod emf;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod store;
pub mod testing;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

pub use breaker::{CircuitBreaker, ErrorVerdict};
pub use config::{CircuitBreakerConfig, CircuitBreakerConfigBuilder, FleetPolicy};
pub use default_store::{DefaultStoreError, default_store, set_default_store, try_default_store};
pub use error::{CallAbandonedError, CircuitBreakerConfigError, CircuitBreakerOpenError};
pub use events::{
    CircuitInfo, CircuitTransition, FailureKind, ShadowDecision, ShadowEvent, TransitionCause,
};
pub use keyed::{KeyedCircuitBreaker, MAX_OPEN_KEYS_LIMIT};
pub use policy::{AdaptivePolicy, SlidingWindow};
pub use protocol::machine::Outcome;
pub use protocol::{CircuitState, ParseCircuitStateError, RecoveryBackoff};
pub use stop_reason::StopReason;
pub use warm_up::{WarmUp, WarmUpError, warm_up};

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("attribute_docs.md")]
pub use breaker_macro::circuit_breaker;

/// For breaker's own CLI, simulator and sample functions. Not public API: no semver
/// guarantees.
#[doc(hidden)]
pub mod unstable;

/// What `#[circuit_breaker]` expands to. Not public API: no semver guarantees.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// The protocol's pure state machine, for the model checker (`breaker-model`) that explores
/// its interleavings. Not public API: no semver guarantees.
#[doc(hidden)]
pub mod __protocol {
    // The key index model (`model/src/keyed/`) decides removals as `KeyStore` does.
    pub use crate::keyed::needs_reading;
    pub use crate::protocol::OPENED_AT_UNTIL_RELEASED;
    pub use crate::protocol::machine::{
        Admission, Local, Outcome, Settled, Thresholds, admit, committed_opening, may_trip,
        on_probe_outcome, settle, settle_alone, trip,
    };
    pub use crate::protocol::refusals::RefusedElections;
    // The ids of a keyed circuit's items, for the CLI, the simulator and tests that read
    // them through a store.
    pub use crate::store::key_ids::{
        MAX_KEY_BYTES, decode_key, key_index_id, key_item_id, split_key_item_id,
    };
    // The store's requests as data: the model checker applies writes by them.
    #[cfg(feature = "dynamodb")]
    pub use crate::store::dynamodb::as_sent::{
        SentRequest, item_as_stored, record_as_read, request_as_sent,
    };
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
