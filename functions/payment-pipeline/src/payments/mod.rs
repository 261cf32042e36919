//! The payment API: the client that POSTs one charge ([`PaymentClient::charge`]) and the
//! guarded call through the `payment-backend` circuit ([`PaymentClient::charge_guarded`]).

mod client;
mod guarded;
mod refusals;

pub use client::{
    ALLOW_HTTP_HOST, MAX_QUOTED_BYTES, MAX_RESPONSE_BYTES, PaymentClient, PaymentConfigError,
    PaymentError, Receipt, is_ambiguous, is_order_decline,
};
pub use guarded::CIRCUIT;
pub use refusals::REFUSAL_WINDOW;
