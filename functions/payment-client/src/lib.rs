//! What the `charge` and `overflow-replay` sample functions share: the order they carry,
//! its validation, and the client of the payment API both of them call through the
//! `payment-backend` circuit.
#![forbid(unsafe_code)]

mod client;
mod order;

pub use client::{PaymentClient, PaymentConfigError, PaymentError, Receipt};
pub use order::{InvalidOrder, Order};
