//! The overflow queue: where orders wait while they cannot be charged. `charge` buffers an
//! order there (circuit open, or a transient failure); `overflow-replay` drains it and
//! defers what it cannot charge yet by sending it again with a delay, so waiting never
//! spends a message's receive budget (`maxReceiveCount`).
//!
//! Message attributes: `circuit`, `order_id`, `reason` (why it was buffered), `buffered_at`
//! (Unix seconds, kept across deferrals), `opened_at` (when the circuit opened, if it was),
//! `deferrals` (how often it was sent again: a runaway loop shows there), `failures` (how
//! many of those followed a failed charge).

mod deferral;
mod message;
mod queue;

pub use deferral::{Deferral, FailureCount};
pub use message::{BufferReason, MAX_DELAY};
pub use queue::{BufferError, OverflowQueue};
