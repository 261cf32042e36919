//! The payment API: the client that POSTs one charge ([`PaymentClient::charge`]) and the
//! guarded call through the `payment-backend` circuit ([`PaymentClient::charge_guarded`]).

mod answer;
mod client;
mod guarded;
mod refusals;

pub use answer::{MAX_QUOTED_BYTES, PaymentError, Receipt, is_ambiguous, is_order_decline};
pub use client::{ALLOW_HTTP_HOST, MAX_RESPONSE_BYTES, PaymentClient, PaymentConfigError};
pub use guarded::CIRCUIT;
pub use refusals::REFUSAL_WINDOW;
