//! A permit's owned handle, for futures that may not borrow the breaker, such as a tower
//! service's, whose future outlives the `&mut self` of `Service::call`. The permit is the
//! one every path uses ([`Permit`]): admission, recording, the metrics (outcomes and
//! durations) and the probe slot are the same; only how it reaches its circuit differs.
//! The closed path decides both inline; a slow admission or a transition is a boxed
//! future that owns the handle.

use std::borrow::Borrow;
use std::future::Future;
use std::pin::Pin;

use super::CircuitBreaker;
use super::admission::PermitRequest;
use super::admission::{fast_admission, permit_slow, request_permit};
use super::circuit::Circuit;
use super::permit::{CircuitHandle, Permit};
use crate::events::CircuitInfo;

/// A boxed future that owns what it needs.
pub(crate) type OwnedFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A breaker held through `B` (a [`CircuitBreaker`], or a `&'static` one), as a permit's
/// way to its circuit.
#[derive(Debug)]
pub(crate) struct Owned<B>(B);

impl<B: Borrow<CircuitBreaker>> CircuitHandle for Owned<B> {
    #[inline(always)]
    fn circuit(&self) -> &Circuit {
        &self.0.borrow().circuit
    }
}

/// Admission that the cache could not grant inline.
pub(crate) enum SlowAdmission<B: Borrow<CircuitBreaker>> {
    /// Rejected from the cached record, decided at once.
    Rejected(CircuitInfo),
    /// The slow path (store read, probe election), as a future that owns the handle.
    Pending(OwnedFuture<Result<Permit<Owned<B>>, CircuitInfo>>),
}

impl<B: Borrow<CircuitBreaker>> Permit<Owned<B>> {
    /// The closed path's admission, decided inline; `None`: ask [`admit_slow`](Self::admit_slow).
    #[inline]
    pub(crate) fn fast(breaker: &B) -> Option<Self>
    where
        B: Clone,
    {
        let admitted = fast_admission(&breaker.borrow().circuit).ok()?;
        Some(admitted.through(Owned(breaker.clone())))
    }

    /// Admission once [`fast`](Self::fast) said no: a rejection from the cache at once,
    /// anything else as a future.
    #[inline(never)]
    pub(crate) fn admit_slow(breaker: B) -> SlowAdmission<B>
    where
        B: Clone + Send + Sync + 'static,
    {
        // The borrowed request decides a rejection inline; its slow future borrows the
        // breaker, so it is dropped unpolled (it has done nothing) and run again owned.
        if let PermitRequest::Rejected(Some(info)) = request_permit(breaker.borrow()) {
            return SlowAdmission::Rejected(info);
        }
        SlowAdmission::Pending(Box::pin(async move {
            let admitted = permit_slow(&breaker.borrow().circuit).await?;
            Ok(admitted.through(Owned(breaker.clone())))
        }))
    }
}
