//! What a call that did not run its body to the end returns: a rejection's open error (or
//! the `on_circuit_open` callback's value, awaited when it is a future), an abandoned call's
//! `CallAbandonedError`.

use std::future::{Future, IntoFuture, Ready};

use crate::breaker::Stopped;
use crate::error::{CallAbandonedError, CircuitBreakerOpenError};
use crate::events::CircuitInfo;

/// A return type that can report a rejected call.
#[diagnostic::on_unimplemented(
    message = "`#[circuit_breaker]` without `on_circuit_open` expected a return type `Result<T, E>` with `E: From<CircuitBreakerOpenError>`, found `{Self}`",
    label = "this return type cannot carry `CircuitBreakerOpenError`",
    note = "return `Result<T, E>` whose `E` is `anyhow::Error`, `lambda_runtime::Error`, `Box<dyn Error + Send + Sync>` or an error enum with a `#[from] CircuitBreakerOpenError` variant",
    note = "or add `on_circuit_open = fallback` to return something else when the circuit is open"
)]
pub trait OpenCircuitResult {
    /// The value a rejected call returns.
    fn rejected(error: CircuitBreakerOpenError) -> Self;
}

impl<T, E: From<CircuitBreakerOpenError>> OpenCircuitResult for Result<T, E> {
    fn rejected(error: CircuitBreakerOpenError) -> Self {
        Err(error.into())
    }
}

/// A return type that can also report an async call abandoned at its deadline.
#[diagnostic::on_unimplemented(
    message = "an async `#[circuit_breaker]` fn expected a return type `Result<T, E>` with `E: From<CircuitBreakerOpenError> + From<CallAbandonedError>`, found `{Self}`",
    label = "this return type cannot carry `CircuitBreakerOpenError` and `CallAbandonedError`",
    note = "return `Result<T, E>` whose `E` is `anyhow::Error`, `lambda_runtime::Error`, `Box<dyn Error + Send + Sync>` or an error enum with `#[from] CircuitBreakerOpenError` and `#[from] CallAbandonedError` variants",
    note = "with `on_circuit_open = fallback` the callback answers rejections, and the return type still carries `CallAbandonedError` for a call abandoned at its deadline"
)]
pub trait StoppedCallResult: OpenCircuitResult + AbandonedCallResult {}

impl<T, E> StoppedCallResult for Result<T, E> where
    E: From<CircuitBreakerOpenError> + From<CallAbandonedError>
{
}

/// A return type that can report an async call abandoned at its deadline: what an async fn
/// with `on_circuit_open` answers such a call with (the callback answers rejections).
#[diagnostic::on_unimplemented(
    message = "an async `#[circuit_breaker]` fn expected a return type `Result<T, E>` with `E: From<CallAbandonedError>`, found `{Self}`",
    label = "this return type cannot carry `CallAbandonedError`",
    note = "`on_circuit_open` answers rejections; an admitted call abandoned at its `call_timeout` or at the invocation deadline may have reached the downstream, so it is answered with `Err(CallAbandonedError.into())`",
    note = "return `Result<T, E>` whose `E` is `anyhow::Error`, `lambda_runtime::Error`, `Box<dyn Error + Send + Sync>` or an error enum with a `#[from] CallAbandonedError` variant"
)]
pub trait AbandonedCallResult {
    /// The value an abandoned call returns.
    fn abandoned(error: CallAbandonedError) -> Self;
}

impl<T, E: From<CallAbandonedError>> AbandonedCallResult for Result<T, E> {
    fn abandoned(error: CallAbandonedError) -> Self {
        Err(error.into())
    }
}

/// `Err(CircuitBreakerOpenError.into())`.
#[cold]
pub fn reject<R: OpenCircuitResult>(circuit: CircuitInfo) -> R {
    R::rejected(CircuitBreakerOpenError::new(circuit))
}

/// An admitted call abandoned at its deadline: `Err(CallAbandonedError.into())`.
#[cold]
// Boxed as `run_admitted` yields it: the closed path moves that type with every output.
#[allow(clippy::boxed_local)]
pub fn abandon<R: AbandonedCallResult>(abandoned: Box<CallAbandonedError>) -> R {
    R::abandoned(*abandoned)
}

/// A guarded call rejected (`Err(CircuitBreakerOpenError.into())`) or abandoned
/// (`Err(CallAbandonedError.into())`).
#[cold]
pub fn stop<R: StoppedCallResult>(stopped: Stopped) -> R {
    match stopped {
        Stopped::Rejected(circuit) => reject(circuit),
        Stopped::Abandoned(abandoned) => abandon(abandoned),
    }
}

/// Tag: the callback returned a future.
#[derive(Debug)]
pub struct FutureFallbackTag;

impl FutureFallbackTag {
    /// The future, to await.
    pub fn resolve<F: IntoFuture>(self, fallback: F) -> F::IntoFuture {
        fallback.into_future()
    }
}

/// Tag: the callback returned a value.
#[derive(Debug)]
pub struct ValueFallbackTag;

impl ValueFallbackTag {
    /// The value, as a ready future.
    pub fn resolve<T>(self, fallback: T) -> Ready<T> {
        std::future::ready(fallback)
    }
}

/// Picked when the callback returned a future.
pub trait FallbackIsFuture {
    /// The tag.
    fn __breaker_fallback_kind(&self) -> FutureFallbackTag {
        FutureFallbackTag
    }
}
impl<F: Future> FallbackIsFuture for F {}

/// Picked otherwise (autoref).
pub trait FallbackIsValue {
    /// The tag.
    fn __breaker_fallback_kind(&self) -> ValueFallbackTag {
        ValueFallbackTag
    }
}
impl<T> FallbackIsValue for &T {}
