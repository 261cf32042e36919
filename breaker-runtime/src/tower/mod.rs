//! A circuit breaker in any tower service stack (feature `tower`).
//!
//! [`CircuitBreakerLayer`] wraps a [`Service`](tower_service::Service) so that each request is admitted by a
//! [`CircuitBreaker`] (the same circuit, shared state and store as `#[circuit_breaker]` and
//! [`CircuitBreaker::call`]), and each response or error is reported to it as a
//! [`Classify`] says. A rejected request never reaches the inner service: it fails with a
//! [`BoxError`] that holds a [`CircuitBreakerOpenError`] (find it with `downcast_ref`).
//!
//! ```
//! use std::sync::Arc;
//! use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError};
//! use breaker_runtime::store::InMemoryStore;
//! use breaker_runtime::tower::{BoxError, CircuitBreakerLayer, Outcome};
//! use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let config = CircuitBreakerConfig::builder().failure_threshold(2).build()?;
//! let breaker = CircuitBreaker::new("inventory", Arc::new(InMemoryStore::new()), config);
//!
//! // A downstream that answers with a status code; 5xx counts as a failure.
//! let mut inventory = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::new(breaker).classifier(|result: &Result<u16, BoxError>| {
//!         match result {
//!             Ok(status) if *status >= 500 => Outcome::Failure,
//!             Ok(_) => Outcome::Success,
//!             Err(_) => Outcome::Failure,
//!         }
//!     }))
//!     .service(service_fn(|sku: &'static str| async move {
//!         Ok::<u16, BoxError>(if sku == "broken" { 503 } else { 200 })
//!     }));
//!
//! assert_eq!(inventory.ready().await?.call("sku-1").await?, 200);
//! for _ in 0..2 {
//!     assert_eq!(inventory.ready().await?.call("broken").await?, 503);
//! }
//! let rejected = inventory.ready().await?.call("sku-1").await.unwrap_err();
//! assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
//! # Ok(()) }
//! ```
//!
//! # Readiness and admission
//!
//! `poll_ready` is the inner service's: no permit is taken or held across it, so a service
//! that is ready while the circuit is open (or that waits for readiness while another
//! environment probes) holds nothing of the circuit. Admission happens in `call`: on the
//! closed path inline, with no allocation; when the cache is stale or the circuit's
//! recovery is due, the returned future first reads the store or runs the probe election,
//! then calls a clone of the inner service (so the inner service must be `Clone`, as for
//! tower's `Buffer` pattern). At most one probe per process runs at a time, however many
//! clones of the service and tasks call it.
//!
//! # The breaker handle
//!
//! The layer holds the breaker as any `B: Borrow<CircuitBreaker>`: a [`CircuitBreaker`]
//! (each call's future then holds a clone of it: a reference count taken and dropped per
//! request, two atomic read-modify-writes), or a `&'static CircuitBreaker` kept in a
//! `static` (or leaked once in `main`), which costs nothing to copy. On a hot path prefer
//! the `&'static`: with it the layer's closed path costs about what
//! [`CircuitBreaker::call`] does (`docs/performance.md`).
//!
//! # Panics
//!
//! A panic in the inner service's `call` or while polling its future counts as a failure
//! and is resumed once recorded, as with [`CircuitBreaker::call`].
//!
//! [`CircuitBreaker`]: crate::CircuitBreaker
//! [`CircuitBreaker::call`]: crate::CircuitBreaker::call
//! [`CircuitBreakerOpenError`]: crate::CircuitBreakerOpenError

mod classify;
mod error;
mod future;
mod layer;

pub use crate::protocol::machine::Outcome;
pub use classify::{Classify, EveryError};
pub use error::BoxError;
pub use future::ResponseFuture;
pub use layer::{CircuitBreakerLayer, CircuitBreakerService};
