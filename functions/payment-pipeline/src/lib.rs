//! What the `charge` and `overflow-replay` sample functions share: the order they carry,
//! its validation, the client of the payment API, the one guarded call both of them make
//! through the `payment-backend` circuit, the ledger that charges each order once, and the
//! overflow queue.
#![forbid(unsafe_code)]

mod client;
mod guarded;
pub mod ledger;
pub mod metrics;
mod once;
mod order;
pub mod overflow;
mod pipeline;
mod sdk;

pub use client::{
    MAX_QUOTED_BYTES, MAX_RESPONSE_BYTES, PaymentClient, PaymentConfigError, PaymentError, Receipt,
};
pub use guarded::{CIRCUIT, GuardedPaymentError};
pub use ledger::{Attempt, Claim, Ledger, LedgerError, Outcome};
pub use once::Charged;
pub use order::{InvalidOrder, MAX_EVENT_BYTES, MAX_ID_LEN, Order};
pub use overflow::{BufferError, BufferReason, Deferral, FailureCount, OverflowQueue};
pub use pipeline::Pipeline;
