//! [`CircuitBreakerLayer`] and the service it makes: admission on the closed path inline,
//! anything else handed to the [`ResponseFuture`] as a boxed phase.

use std::borrow::Borrow;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use super::classify::{Classify, EveryError};
use super::error::BoxError;
use super::future::{ResponseFuture, Slow};
use crate::breaker::{CircuitBreaker, Permit, SlowAdmission};

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
        let Some(permit) = Permit::fast(&self.breaker) else {
            return self.call_slow(request, classifier);
        };
        match catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => ResponseFuture::running(classifier, permit, future),
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
        let slow = match Permit::admit_slow(self.breaker.clone()) {
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
        ResponseFuture::slow(classifier, slow)
    }
}
