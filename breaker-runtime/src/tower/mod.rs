//! A circuit breaker in any tower service stack (feature `tower`).
//!
//! [`CircuitBreakerLayer`] wraps a [`Service`] so that each request is admitted by a
//! [`CircuitBreaker`] (the same circuit, shared state and store as `#[circuit_breaker]` and
//! [`CircuitBreaker::call`]), and each response or error is reported to it as a
//! [`Classify`] says. A rejected request never reaches the inner service: it fails with a
//! [`BoxError`] that holds a [`CircuitBreakerOpenError`] (find it with `downcast_ref`).
//!
//! ```
//! use std::sync::Arc;
//! use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError};
//! use breaker_runtime::store::InMemoryStore;
//! use breaker_runtime::tower::{BoxError, CircuitBreakerLayer, Outcome};
//! use tower::{Service, ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), BoxError> {
//! let config = CircuitBreakerConfig::builder().failure_threshold(2).build()?;
//! let breaker = CircuitBreaker::new("inventory", Arc::new(InMemoryStore::new()), config);
//!
//! // A downstream that answers with a status code; 5xx counts as a failure.
//! let mut inventory = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::new(breaker).classifier(|result: &Result<u16, BoxError>| {
//!         match result {
//!             Ok(status) if *status >= 500 => Outcome::Failure,
//!             Ok(_) => Outcome::Success,
//!             Err(_) => Outcome::Failure,
//!         }
//!     }))
//!     .service(service_fn(|sku: &'static str| async move {
//!         Ok::<u16, BoxError>(if sku == "broken" { 503 } else { 200 })
//!     }));
//!
//! assert_eq!(inventory.ready().await?.call("sku-1").await?, 200);
//! for _ in 0..2 {
//!     assert_eq!(inventory.ready().await?.call("broken").await?, 503);
//! }
//! let rejected = inventory.ready().await?.call("sku-1").await.unwrap_err();
//! assert!(rejected.downcast_ref::<CircuitBreakerOpenError>().is_some());
//! # Ok(()) }
//! ```
//!
//! # Readiness and admission
//!
//! `poll_ready` is the inner service's: no permit is taken or held across it, so a service
//! that is ready while the circuit is open (or that waits for readiness while another
//! environment probes) holds nothing of the circuit. Admission happens in `call`: on the
//! closed path inline, with no allocation; when the cache is stale or the circuit's
//! recovery is due, the returned future first reads the store or runs the probe election,
//! then calls a clone of the inner service (so the inner service must be `Clone`, as for
//! tower's `Buffer` pattern). At most one probe per process runs at a time, however many
//! clones of the service and tasks call it.
//!
//! # The breaker handle
//!
//! The layer holds the breaker as any `B: Borrow<CircuitBreaker>`: a [`CircuitBreaker`]
//! (each call's future then holds a clone of it: a reference count taken and dropped per
//! request, two atomic read-modify-writes), or a `&'static CircuitBreaker` kept in a
//! `static` (or leaked once in `main`), which costs nothing to copy. On a hot path prefer
//! the `&'static`: with it the layer's closed path costs about what
//! [`CircuitBreaker::call`] does (`docs/performance.md`).
//!
//! # Panics
//!
//! A panic in the inner service's `call` or while polling its future counts as a failure
//! and is resumed once recorded, as with [`CircuitBreaker::call`].

use std::any::Any;
use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tower_layer::Layer;
use tower_service::Service;

use crate::breaker::{OwnedFuture, OwnedPermit, SlowAdmission};
pub use crate::protocol::machine::Outcome;
use crate::{CircuitBreaker, CircuitBreakerOpenError, CircuitInfo};

/// The error of a guarded service: the inner service's error, or a
/// [`CircuitBreakerOpenError`] when the circuit rejected the request.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Says how a finished request counts for the circuit.
///
/// Implemented by [`EveryError`] (the default) and by every
/// `Fn(&Result<Response, Error>) -> Outcome`, so a response can count as a failure (an
/// HTTP 503) and an error can be ignored (a 404 turned into an error by the client).
pub trait Classify<Res, E> {
    /// How the request that ended with `result` counts.
    fn classify(&self, result: &Result<Res, E>) -> Outcome;
}

/// The default classifier: every `Ok` is a success, every `Err` a failure, as for
/// [`CircuitBreaker::call`].
///
/// ```
/// use breaker_runtime::tower::{Classify, EveryError, Outcome};
/// assert_eq!(EveryError.classify(&Ok::<u8, ()>(1)), Outcome::Success);
/// assert_eq!(EveryError.classify(&Err::<u8, ()>(())), Outcome::Failure);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EveryError;

impl<Res, E> Classify<Res, E> for EveryError {
    #[inline]
    fn classify(&self, result: &Result<Res, E>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        }
    }
}

impl<Res, E, F> Classify<Res, E> for F
where
    F: Fn(&Result<Res, E>) -> Outcome,
{
    #[inline]
    fn classify(&self, result: &Result<Res, E>) -> Outcome {
        self(result)
    }
}

/// A tower [`Layer`] that guards a service with a circuit breaker.
///
/// ```
/// use std::sync::{Arc, LazyLock};
/// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
/// use breaker_runtime::store::InMemoryStore;
/// use breaker_runtime::tower::CircuitBreakerLayer;
/// use tower::Layer;
///
/// // A breaker in a `static`: the layer copies a `&'static` reference into each call.
/// static PAYMENTS: LazyLock<CircuitBreaker> = LazyLock::new(|| {
///     CircuitBreaker::new("payments", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default())
/// });
/// let layer = CircuitBreakerLayer::new(&*PAYMENTS);
/// let service = layer.layer(tower::service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) }));
/// # drop(service);
/// ```
#[derive(Clone)]
pub struct CircuitBreakerLayer<C = EveryError, B = CircuitBreaker> {
    breaker: B,
    classifier: C,
}

impl<C, B: Borrow<CircuitBreaker>> fmt::Debug for CircuitBreakerLayer<C, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("circuit", &self.breaker.borrow().name())
            .finish_non_exhaustive()
    }
}

impl<B: Borrow<CircuitBreaker>> CircuitBreakerLayer<EveryError, B> {
    /// A layer admitting requests through `breaker`; every error counts as a failure.
    pub fn new(breaker: B) -> Self {
        Self {
            breaker,
            classifier: EveryError,
        }
    }
}

impl<C, B: Borrow<CircuitBreaker>> CircuitBreakerLayer<C, B> {
    /// Replaces the classifier that says which responses and errors count as failures.
    /// It is cloned into each request's future: keep it cheap to clone (a fn, a closure
    /// without captures, or an `Arc`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
    /// use breaker_runtime::store::InMemoryStore;
    /// use breaker_runtime::tower::{CircuitBreakerLayer, Outcome};
    ///
    /// let breaker = CircuitBreaker::new("api", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// // Timeouts count; any other error is the caller's fault and changes nothing.
    /// let layer = CircuitBreakerLayer::new(breaker).classifier(|r: &Result<String, std::io::Error>| match r {
    ///     Ok(_) => Outcome::Success,
    ///     Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Outcome::Failure,
    ///     Err(_) => Outcome::Ignored,
    /// });
    /// # drop(layer);
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> CircuitBreakerLayer<C2, B> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier,
        }
    }

    /// The breaker this layer admits requests through.
    pub fn breaker(&self) -> &CircuitBreaker {
        self.breaker.borrow()
    }
}

impl<S, C: Clone, B: Clone> Layer<S> for CircuitBreakerLayer<C, B> {
    type Service = CircuitBreakerService<S, C, B>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService {
            inner,
            breaker: self.breaker.clone(),
            classifier: self.classifier.clone(),
        }
    }
}

/// A service guarded by a circuit breaker; made by [`CircuitBreakerLayer`].
#[derive(Clone)]
pub struct CircuitBreakerService<S, C = EveryError, B = CircuitBreaker> {
    inner: S,
    breaker: B,
    classifier: C,
}

impl<S, C, B: Borrow<CircuitBreaker>> fmt::Debug for CircuitBreakerService<S, C, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerService")
            .field("circuit", &self.breaker.borrow().name())
            .finish_non_exhaustive()
    }
}

impl<S, C, B> CircuitBreakerService<S, C, B> {
    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Req, C, B> Service<Req> for CircuitBreakerService<S, C, B>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error> + Clone,
    B: Borrow<CircuitBreaker> + Clone + Send + Sync + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Req, C, B>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let classifier = self.classifier.clone();
        let Some(permit) = OwnedPermit::fast(&self.breaker) else {
            return self.call_slow(request, classifier);
        };
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => ResponseFuture {
                classifier,
                permit: Some(permit),
                slow: None,
                running: Some(future),
            },
            Err(panic) => ResponseFuture::finishing(classifier, permit, Err(panic)),
        }
    }
}

impl<S, C, B> CircuitBreakerService<S, C, B> {
    /// Admission that the cache could not grant inline: a rejection at once, or a future
    /// that admits and then calls the inner service that was polled ready.
    #[inline(never)]
    fn call_slow<Req>(&mut self, request: Req, classifier: C) -> ResponseFuture<S, Req, C, B>
    where
        S: Service<Req> + Clone,
        C: Classify<S::Response, S::Error>,
        B: Borrow<CircuitBreaker> + Clone + Send + Sync + 'static,
    {
        let slow = match OwnedPermit::admit_slow(self.breaker.clone()) {
            SlowAdmission::Rejected(circuit) => Slow::Rejected(circuit),
            SlowAdmission::Pending(admission) => {
                // The service polled ready is the one to call; keep a clone for the next.
                let clone = self.inner.clone();
                Slow::Admitting {
                    admission,
                    service: std::mem::replace(&mut self.inner, clone),
                    request,
                }
            }
        };
        ResponseFuture {
            classifier,
            permit: None,
            slow: Some(Box::new(slow)),
            running: None,
        }
    }
}

/// What a panic in the inner service carries until it is resumed.
type Panic = Box<dyn Any + Send>;

/// The phases of a request that wait on the store or are done early, boxed: one pointer,
/// null on the closed path.
enum Slow<S: Service<Req>, Req, B: Borrow<CircuitBreaker>> {
    /// Admission by the store (a refresh, a probe election); then the inner call.
    Admitting {
        admission: OwnedFuture<Result<OwnedPermit<B>, CircuitInfo>>,
        service: S,
        request: Req,
    },
    /// The inner call ended; the transition its outcome caused, if any, is being written.
    Recording {
        writing: Option<OwnedFuture<()>>,
        output: Result<Result<S::Response, S::Error>, Panic>,
    },
    /// Rejected from the cached record.
    Rejected(CircuitInfo),
}

pin_project_lite::pin_project! {
    /// The future of [`CircuitBreakerService`]'s `call`.
    ///
    /// On the closed path it holds the permit and the inner future; the other phases sit
    /// behind one pointer (the same shape as [`CircuitBreaker::call`]'s future).
    #[must_use = "futures do nothing unless awaited"]
    pub struct ResponseFuture<S, Req, C, B>
    where
        S: Service<Req>,
        B: Borrow<CircuitBreaker>,
    {
        classifier: C,
        // Some while `running` runs: it admitted that call.
        permit: Option<OwnedPermit<B>>,
        slow: Option<Box<Slow<S, Req, B>>>,
        #[pin]
        running: Option<S::Future>,
    }
}

impl<S, Req, C, B> fmt::Debug for ResponseFuture<S, Req, C, B>
where
    S: Service<Req>,
    B: Borrow<CircuitBreaker>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.slow.as_deref() {
            Some(Slow::Admitting { .. }) => "admitting",
            Some(Slow::Recording { .. }) => "recording",
            Some(Slow::Rejected(_)) => "rejected",
            None if self.running.is_some() => "running",
            None => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("phase", &phase)
            .finish_non_exhaustive()
    }
}

impl<S, Req, C, B> ResponseFuture<S, Req, C, B>
where
    S: Service<Req>,
    C: Classify<S::Response, S::Error>,
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    /// A future whose call already ended (a panic in the inner `call`): record, then
    /// return or resume.
    #[cold]
    fn finishing(
        classifier: C,
        permit: OwnedPermit<B>,
        output: Result<Result<S::Response, S::Error>, Panic>,
    ) -> Self {
        let outcome = outcome_of(&classifier, &output);
        Self {
            classifier,
            permit: None,
            slow: Some(Box::new(Slow::Recording {
                writing: permit.record(outcome),
                output,
            })),
            running: None,
        }
    }
}

fn outcome_of<Res, E>(
    classifier: &impl Classify<Res, E>,
    output: &Result<Result<Res, E>, Panic>,
) -> Outcome {
    match output {
        Ok(result) => classifier.classify(result),
        Err(_) => Outcome::Failure,
    }
}

/// The response, the inner error boxed, or the panic resumed.
#[inline]
fn finish<Res, E: Into<BoxError>>(output: Result<Result<Res, E>, Panic>) -> Result<Res, BoxError> {
    match output {
        Ok(result) => result.map_err(Into::into),
        Err(panic) => resume_unwind(panic),
    }
}

impl<S, Req, C, B> Future for ResponseFuture<S, Req, C, B>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error>,
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    type Output = Result<S::Response, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if this.slow.is_some() {
            return poll_slow(this.running, this.permit, this.slow, &*this.classifier, cx);
        }
        let Some(future) = this.running.as_mut().as_pin_mut() else {
            panic!("a circuit breaker service's future polled after completion");
        };
        let output = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(result)) => Ok(result),
            Err(panic) => Err(panic),
        };
        this.running.set(None);
        let permit = this.permit.take().expect("a running call holds its permit");
        match permit.record(outcome_of(&*this.classifier, &output)) {
            None => Poll::Ready(finish(output)),
            writing => {
                *this.slow = Some(Box::new(Slow::Recording { writing, output }));
                poll_slow(this.running, this.permit, this.slow, &*this.classifier, cx)
            }
        }
    }
}

/// Drives the boxed phases: admission (then the inner call, polled by the closed path's
/// code on the next loop), a transition being written, a rejection.
#[inline(never)]
fn poll_slow<S, Req, C, B>(
    mut running: Pin<&mut Option<S::Future>>,
    permit: &mut Option<OwnedPermit<B>>,
    slow: &mut Option<Box<Slow<S, Req, B>>>,
    classifier: &C,
    cx: &mut Context<'_>,
) -> Poll<Result<S::Response, BoxError>>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error>,
    B: Borrow<CircuitBreaker> + Send + Sync + 'static,
{
    loop {
        match slow.as_deref_mut() {
            Some(Slow::Admitting { admission, .. }) => {
                let admitted = ready!(admission.as_mut().poll(cx));
                let Some(Slow::Admitting {
                    mut service,
                    request,
                    ..
                }) = slow.take().map(|phase| *phase)
                else {
                    unreachable!("matched above");
                };
                let admitted = match admitted {
                    Ok(admitted) => admitted,
                    Err(circuit) => return Poll::Ready(Err(open_error(circuit))),
                };
                match catch_unwind(AssertUnwindSafe(|| service.call(request))) {
                    Ok(future) => {
                        running.set(Some(future));
                        *permit = Some(admitted);
                    }
                    Err(panic) => {
                        let output = Err(panic);
                        let writing = admitted.record(outcome_of(classifier, &output));
                        *slow = Some(Box::new(Slow::Recording { writing, output }));
                    }
                }
            }
            Some(Slow::Recording { writing, .. }) => {
                if let Some(writing) = writing {
                    ready!(writing.as_mut().poll(cx));
                }
                let Some(Slow::Recording { output, .. }) = slow.take().map(|phase| *phase) else {
                    unreachable!("matched above");
                };
                return Poll::Ready(finish(output));
            }
            Some(Slow::Rejected(_)) => {
                let Some(Slow::Rejected(circuit)) = slow.take().map(|phase| *phase) else {
                    unreachable!("matched above");
                };
                return Poll::Ready(Err(open_error(circuit)));
            }
            None => {
                let Some(future) = running.as_mut().as_pin_mut() else {
                    panic!("a circuit breaker service's future polled after completion");
                };
                let output = match catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
                    Ok(Poll::Pending) => return Poll::Pending,
                    Ok(Poll::Ready(result)) => Ok(result),
                    Err(panic) => Err(panic),
                };
                running.set(None);
                let admitted = permit.take().expect("a running call holds its permit");
                let writing = admitted.record(outcome_of(classifier, &output));
                *slow = Some(Box::new(Slow::Recording { writing, output }));
            }
        }
    }
}

fn open_error(circuit: CircuitInfo) -> BoxError {
    Box::new(CircuitBreakerOpenError { circuit })
}
