//! The #[circuit_breaker] attribute, one module per feature.
//!
//! One test binary per area: every binary links the AWS SDK, so fewer binaries build faster and
//! take far less disk. nextest still runs each test in its own process.

mod async_fns;
mod async_trait;
mod callbacks;
mod deadlines;
mod disabled;
mod handled;
mod keyed;
mod lambda;
mod methods;
mod panics;
mod policies;
mod shadow;
mod shared;
mod sync;
