//! A permit that reaches its circuit through a handle it owns (a [`CircuitBreaker`], or a
//! `&'static` one): for futures that may not borrow the breaker, such as a tower service's,
//! whose future outlives the `&mut self` of `Service::call`.
//!
//! Admission and recording are the borrowed [`Permit`]'s: the closed path decides both
//! inline; a slow admission or a transition is a boxed future that owns the handle.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use super::CircuitBreaker;
use super::admission::{fast_admission, permit_slow, request_permit};
use super::circuit::Circuit;
use super::permit::{PermitKind, PermitRequest};
use super::transitions::{count_closed, end_probe, follow_up};
use crate::events::{CircuitInfo, FailureKind};
use crate::protocol::machine::Outcome;

/// A boxed future that owns what it needs.
pub(crate) type OwnedFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Admission of one call, holding the breaker through `B`. Dropped unrecorded (a
/// cancelled call), it counts as ignored and frees the probe slot it holds.
pub(crate) struct OwnedPermit<B: Borrow<CircuitBreaker>> {
    breaker: B,
    kind: PermitKind,
    /// When the call was admitted, if the policy times calls (see [`Permit`]).
    started: u64,
}

impl<B: Borrow<CircuitBreaker>> fmt::Debug for OwnedPermit<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("circuit", self.circuit().name())
            .field("kind", &self.kind)
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

    /// The closed path's admission, decided inline; `None`: ask [`admit_slow`](Self::admit_slow).
    #[inline]
    pub(crate) fn fast(breaker: &B) -> Option<Self>
    where
        B: Clone,
    {
        let (kind, started) = fast_admission(&breaker.borrow().circuit).ok()?.detach();
        Some(Self {
            breaker: breaker.clone(),
            kind,
            started,
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
            let (kind, started) = permit_slow(&breaker.borrow().circuit).await?.detach();
            Ok(Self {
                breaker,
                kind,
                started,
            })
        }))
    }

    /// Reports how the call ended: `None` when recorded inline, else the transition it
    /// causes (a trip, a probe's outcome), to be awaited.
    #[inline]
    pub(crate) fn record(mut self, outcome: Outcome) -> Option<OwnedFuture<()>>
    where
        B: Send + Sync + 'static,
    {
        if self.kind == PermitKind::Closed
            && outcome == Outcome::Success
            && self.circuit().counts().note_success(self.started)
        {
            self.kind = PermitKind::Spent;
            return None;
        }
        self.record_transition(outcome)
    }

    /// Every outcome but the closed path's success, out of line.
    #[inline(never)]
    fn record_transition(mut self, outcome: Outcome) -> Option<OwnedFuture<()>>
    where
        B: Send + Sync + 'static,
    {
        match self.kind {
            PermitKind::Closed => {
                self.kind = PermitKind::Spent;
                let circuit = self.circuit();
                let next = count_closed(circuit, outcome, self.started, FailureKind::Error, None)?;
                Some(Box::pin(
                    async move { follow_up(self.circuit(), next).await },
                ))
            }
            // The permit travels into the future and keeps the slot until `end_probe`
            // takes it over, in the same poll: a future dropped unpolled frees it.
            PermitKind::Probe(seam) => Some(Box::pin(async move {
                let mut permit = self;
                let kind = std::mem::replace(&mut permit.kind, PermitKind::Spent);
                debug_assert_eq!(kind, PermitKind::Probe(seam));
                let circuit = permit.circuit();
                let outcome = circuit.counts().probe_outcome(outcome, permit.started);
                end_probe(circuit, seam, outcome, FailureKind::Error).await
            })),
            PermitKind::Bypass | PermitKind::Spent => None,
        }
    }
}

impl<B: Borrow<CircuitBreaker>> Drop for OwnedPermit<B> {
    fn drop(&mut self) {
        if matches!(self.kind, PermitKind::Probe(_)) {
            // Dropped unrecorded: free the slot, as the borrowed permit does.
            self.circuit().release_probe();
        }
    }
}
