//! The payment API: the client that POSTs one charge ([`PaymentClient::charge`]) and the
//! one guarded call through the `payment-backend` circuit
//! ([`PaymentClient::charge_guarded`]).

mod client;
mod guarded;

pub use client::{
    MAX_QUOTED_BYTES, MAX_RESPONSE_BYTES, PaymentClient, PaymentConfigError, PaymentError, Receipt,
};
pub use guarded::{CIRCUIT, GuardedPaymentError};
