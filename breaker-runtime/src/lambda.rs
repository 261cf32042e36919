//! Lambda's runtime with every invocation in its deadline scope (feature `lambda`).
//!
//! [`run`] is `lambda_runtime::run` with one thing added: each invocation runs in
//! [`deadline::scope`] with its own deadline. A guarded async call
//! still running near the deadline is abandoned and counted, and the trip it causes is
//! written before Lambda ends the invocation, so a downstream that hangs opens the circuit
//! instead of timing every invocation out uncounted. The scope also reads the clock at the
//! invocation's start: after Lambda thaws a frozen environment, the first guarded call
//! judges its cached copy of the circuit by the time now, not by the time before the freeze.
//!
//! ```no_run
//! use lambda_runtime::{service_fn, Error, LambdaEvent};
//! use serde_json::Value;
//!
//! async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
//!     Ok(event.payload)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Error> {
//!     breaker_runtime::lambda::run(service_fn(handler)).await
//! }
//! ```
//!
//! `run_concurrent` (feature `lambda-concurrent`) does the same for
//! `lambda_runtime::run_concurrent`: on Lambda Managed Instances one execution environment
//! runs up to `AWS_LAMBDA_MAX_CONCURRENCY` invocations at once, each in its own deadline
//! scope; with the variable unset (every other Lambda) it runs one at a time, as [`run`]
//! does.
//!
//! A function that builds its own [`lambda_runtime::Runtime`] (other layers) adds
//! [`DeadlineScopeLayer`]; other shapes (a handler driven by something else) call
//! [`deadline::scope`] themselves.

use std::fmt::Debug;
use std::task::{Context, Poll};

use lambda_runtime::tower::Layer;
use lambda_runtime::{
    Diagnostic, IntoFunctionResponse, LambdaEvent, LambdaInvocation, Runtime, Service, layers,
};

use crate::deadline::{self, Scoped};

/// Starts Lambda's runtime with `handler`, as `lambda_runtime::run` does (its tracing
/// layer included), every invocation in its deadline scope ([`DeadlineScopeLayer`]).
///
/// ```no_run
/// use breaker_runtime::circuit_breaker;
/// use lambda_runtime::{service_fn, Error, LambdaEvent};
/// use serde_json::{json, Value};
///
/// #[circuit_breaker(name = "inventory-api")]
/// async fn reserve(sku: String) -> Result<Value, Error> {
///     Ok(json!({ "sku": sku }))
/// }
///
/// async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
///     reserve(event.payload["sku"].as_str().unwrap_or_default().to_owned()).await
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     breaker_runtime::lambda::run(service_fn(handler)).await
/// }
/// ```
///
/// # Errors
///
/// What `lambda_runtime::run` returns: the Runtime API could not be reached.
///
/// # Panics
///
/// As `lambda_runtime::run`: when a Lambda environment variable it needs is missing.
pub async fn run<A, F, R, B, S, D, E>(handler: F) -> Result<(), lambda_runtime::Error>
where
    F: Service<LambdaEvent<A>, Response = R>,
    F::Future: Future<Output = Result<R, F::Error>>,
    F::Error: Into<Diagnostic> + Debug,
    A: for<'de> serde::Deserialize<'de>,
    R: IntoFunctionResponse<B, S>,
    B: serde::Serialize,
    S: futures_core::Stream<Item = Result<D, E>> + Unpin + Send + 'static,
    D: Into<bytes::Bytes> + Send,
    E: Into<lambda_runtime::Error> + Send + Debug,
{
    Runtime::new(handler)
        .layer(layers::TracingLayer::new())
        // Added last, so it runs first: the scope covers the whole invocation.
        .layer(DeadlineScopeLayer)
        .run()
        .await
}

/// Starts Lambda's runtime with `handler`, running as many invocations at once as Lambda
/// allows the environment, as `lambda_runtime::run_concurrent` does (its tracing layer
/// included), every invocation in its own deadline scope ([`DeadlineScopeLayer`]). Feature
/// `lambda-concurrent`.
///
/// On Lambda Managed Instances one execution environment serves many invocations at once:
/// Lambda sets `AWS_LAMBDA_MAX_CONCURRENCY` (the function's
/// `PerExecutionEnvironmentMaxConcurrency`) and this polls the Runtime API from that many
/// tasks, each invocation with its own deadline, so a call that hangs is abandoned and
/// counted at its own invocation's deadline while the others run on. Without the variable
/// (or at 1: every other Lambda, `cargo lambda watch`, `sam local invoke`) it polls one
/// invocation at a time, as [`run`]: one binary serves both. The handler is cloned once per
/// task and its futures move between threads, so it must be `Clone + Send + 'static`
/// (share what every invocation uses through a `&'static` or an `Arc`); the circuits are
/// shared by the whole process either way.
///
/// ```no_run
/// use breaker_runtime::circuit_breaker;
/// use lambda_runtime::{service_fn, Error, LambdaEvent};
/// use serde_json::{json, Value};
///
/// #[circuit_breaker(name = "inventory-api")]
/// async fn reserve(sku: String) -> Result<Value, Error> {
///     Ok(json!({ "sku": sku }))
/// }
///
/// async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
///     reserve(event.payload["sku"].as_str().unwrap_or_default().to_owned()).await
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     // `service_fn` of a function item (or of a closure capturing only `'static`, `Clone`
///     // values) is `Clone + Send + 'static`.
///     breaker_runtime::lambda::run_concurrent(service_fn(handler)).await
/// }
/// ```
///
/// # Errors
///
/// What `lambda_runtime::run_concurrent` returns: the Runtime API could not be reached,
/// or every polling task ended.
///
/// # Panics
///
/// As `lambda_runtime::run_concurrent`: outside a Tokio runtime, or when a Lambda
/// environment variable it needs is missing.
#[cfg(feature = "lambda-concurrent")]
#[cfg_attr(docsrs, doc(cfg(feature = "lambda-concurrent")))]
pub async fn run_concurrent<A, F, R, B, S, D, E>(handler: F) -> Result<(), lambda_runtime::Error>
where
    F: Service<LambdaEvent<A>, Response = R> + Clone + Send + 'static,
    F::Future: Future<Output = Result<R, F::Error>> + Send + 'static,
    F::Error: Into<Diagnostic> + Debug,
    A: for<'de> serde::Deserialize<'de> + Send + 'static,
    R: IntoFunctionResponse<B, S> + Send + 'static,
    B: serde::Serialize + Send + 'static,
    S: futures_core::Stream<Item = Result<D, E>> + Unpin + Send + 'static,
    D: Into<bytes::Bytes> + Send + 'static,
    E: Into<lambda_runtime::Error> + Send + Debug + 'static,
{
    Runtime::new(handler)
        .layer(layers::TracingLayer::new())
        // Cloned into every polling task: each invocation gets a scope of its own.
        .layer(DeadlineScopeLayer)
        .run_concurrent()
        .await
}

/// A layer for [`lambda_runtime::Runtime::layer`] that runs every invocation in
/// [`deadline::scope`] with the invocation's deadline, and reads
/// the clock at its start. [`run`] (and `run_concurrent`) add it; add it yourself when you
/// build the runtime (`Runtime::run_concurrent` clones it into each of its tasks).
///
/// ```no_run
/// use breaker_runtime::lambda::DeadlineScopeLayer;
/// use lambda_runtime::{layers::TracingLayer, service_fn, Error, LambdaEvent, Runtime};
/// use serde_json::Value;
///
/// async fn handler(event: LambdaEvent<Value>) -> Result<Value, Error> {
///     Ok(event.payload)
/// }
///
/// #[tokio::main]
/// async fn main() -> Result<(), Error> {
///     Runtime::new(service_fn(handler))
///         .layer(TracingLayer::new())
///         .layer(DeadlineScopeLayer)
///         .run()
///         .await
/// }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DeadlineScopeLayer;

impl<S> Layer<S> for DeadlineScopeLayer {
    type Service = DeadlineScope<S>;

    fn layer(&self, inner: S) -> DeadlineScope<S> {
        DeadlineScope { inner }
    }
}

/// The service of [`DeadlineScopeLayer`]: `inner`, each invocation in its deadline scope.
#[derive(Debug, Clone)]
pub struct DeadlineScope<S> {
    inner: S,
}

impl<S> Service<LambdaInvocation> for DeadlineScope<S>
where
    S: Service<LambdaInvocation>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Scoped<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
        let deadline = invocation.context.deadline;
        // A handler may do work before its future starts (a sync guarded call in a
        // closure): that runs in the scope too.
        let future = deadline::scope_blocking(deadline, || self.inner.call(invocation));
        deadline::scope(deadline, future)
    }
}
