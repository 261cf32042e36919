//! A permit that reaches its circuit through a handle it owns (a [`CircuitBreaker`], or a
//! `&'static` one): for futures that may not borrow the breaker, such as a tower service's,
//! whose future outlives the `&mut self` of `Service::call`.
//!
//! It is the borrowed [`Permit`], detached from its circuit while it travels with the
//! handle, and attached again to record: admission, recording, the metrics (outcomes and
//! durations) and the probe slot are the borrowed permit's. The closed path decides both
//! inline; a slow admission or a transition is a boxed future that owns the handle.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use super::CircuitBreaker;
use super::admission::{fast_admission, permit_slow, request_permit};
use super::circuit::Circuit;
use super::permit::{Detached, Permit, PermitRequest};
use super::transitions::follow_up;
use crate::events::CircuitInfo;
use crate::protocol::machine::Outcome;

/// A boxed future that owns what it needs.
pub(crate) type OwnedFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Admission of one call, holding the breaker through `B`. Dropped unrecorded (a
/// cancelled call), it counts as ignored and frees the probe slot it holds, as a borrowed
/// permit does.
pub(crate) struct OwnedPermit<B: Borrow<CircuitBreaker>> {
    breaker: B,
    admitted: Detached,
}

impl<B: Borrow<CircuitBreaker>> fmt::Debug for OwnedPermit<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("circuit", self.circuit().name())
            .field("admitted", &self.admitted)
            .finish()
    }
}

/// Admission that the cache could not grant inline.
pub(crate) enum SlowAdmission<B: Borrow<CircuitBreaker>> {
    /// Rejected from the cached record, decided at once.
    Rejected(CircuitInfo),
    /// The slow path (store read, probe election), as a future that owns the handle.
    Pending(OwnedFuture<Result<OwnedPermit<B>, CircuitInfo>>),
}

impl<B: Borrow<CircuitBreaker>> OwnedPermit<B> {
    fn circuit(&self) -> &Circuit {
        &self.breaker.borrow().circuit
    }

    /// The borrowed permit of what this one holds (which it no longer holds).
    fn attached(&mut self) -> Permit<'_> {
        let admitted = self.admitted.take();
        Permit::attach(&self.breaker.borrow().circuit, admitted)
    }

    /// The closed path's admission, decided inline; `None`: ask [`admit_slow`](Self::admit_slow).
    #[inline]
    pub(crate) fn fast(breaker: &B) -> Option<Self>
    where
        B: Clone,
    {
        let admitted = fast_admission(&breaker.borrow().circuit).ok()?.detach();
        Some(Self {
            breaker: breaker.clone(),
            admitted,
        })
    }

    /// Admission once [`fast`](Self::fast) said no: a rejection from the cache at once,
    /// anything else as a future.
    #[inline(never)]
    pub(crate) fn admit_slow(breaker: B) -> SlowAdmission<B>
    where
        B: Send + Sync + 'static,
    {
        // The borrowed request decides a rejection inline; its slow future borrows the
        // breaker, so it is dropped unpolled (it has done nothing) and run again owned.
        if let PermitRequest::Rejected(Some(info)) = request_permit(breaker.borrow()) {
            return SlowAdmission::Rejected(info);
        }
        SlowAdmission::Pending(Box::pin(async move {
            let admitted = permit_slow(&breaker.borrow().circuit).await?.detach();
            Ok(Self { breaker, admitted })
        }))
    }

    /// Reports how the call ended, as the borrowed permit does: `None` when recorded
    /// inline, else the transition it causes (a trip, a probe's outcome), to be awaited.
    #[inline]
    pub(crate) fn record(mut self, outcome: Outcome) -> Option<OwnedFuture<()>>
    where
        B: Send + Sync + 'static,
    {
        let mut permit = self.attached();
        if permit.record_success_inline(outcome) {
            return None;
        }
        // A probe comes back unrecorded: it records in the future, as detached.
        let recorded = permit.record_unless_probe(outcome).map_err(Permit::detach);
        match recorded {
            Ok(None) => None,
            Ok(Some(next)) => Some(Box::pin(
                async move { follow_up(self.circuit(), next).await },
            )),
            Err(admitted) => {
                self.admitted = admitted;
                Some(self.record_probe(outcome))
            }
        }
    }

    /// A probe's outcome, out of line: the permit travels into the future and keeps the
    /// probe slot until it records there, in the same poll, so a future dropped unpolled
    /// frees it.
    #[inline(never)]
    fn record_probe(self, outcome: Outcome) -> OwnedFuture<()>
    where
        B: Send + Sync + 'static,
    {
        Box::pin(async move {
            let mut owned = self;
            owned.attached().record(outcome).await
        })
    }
}

impl<B: Borrow<CircuitBreaker>> Drop for OwnedPermit<B> {
    fn drop(&mut self) {
        // Whatever it still holds, dropped as the borrowed permit it is.
        drop(self.attached());
    }
}
