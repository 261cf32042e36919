//! What the `charge` and `overflow-replay` sample functions share: the order they carry,
//! its validation, the client of the payment API, and the one guarded call both of them
//! make through the `payment-backend` circuit.
#![forbid(unsafe_code)]

mod client;
mod guarded;
mod order;

pub use client::{PaymentClient, PaymentConfigError, PaymentError, Receipt};
pub use guarded::{CIRCUIT, GuardedPaymentError};
pub use order::{InvalidOrder, Order};
