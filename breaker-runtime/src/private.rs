//! What `#[circuit_breaker]` expands to. Not public API: no semver guarantees.
//!
//! The expansion resolves at compile time what the attribute cannot see (is the callback
//! async? is the store already an `Arc`? is the return type a `Result`?) with autoref
//! specialization: `(&value).__breaker_x_kind()` picks the by-value impl when it applies,
//! else the autoref fallback, and the tag it returns does the work.

pub use crate::breaker::{
    CircuitBreaker, GuardedCall, Permit, PermitRequest, Recording, RunAdmitted, Stopped, classify,
    fast_permit, guarded_call, request_permit, request_permit_blocking, run_admitted,
};
pub use crate::config::CircuitBreakerConfig;
pub use crate::default_store::default_store;
pub use crate::error::{CallAbandonedError, CircuitBreakerOpenError};
pub use crate::events::{CircuitInfo, CircuitTransition};
pub use crate::keyed::KeyedCircuitBreaker;
pub use crate::protocol::machine::Outcome;

#[path = "private/answers.rs"]
mod answers;
#[path = "private/body.rs"]
mod body;
#[path = "private/circuits.rs"]
mod circuits;
#[path = "private/config_keys.rs"]
mod config_keys;
#[path = "private/store_arg.rs"]
mod store_arg;

pub use answers::*;
pub use body::*;
pub use circuits::*;
pub use config_keys::*;
pub use store_arg::*;
