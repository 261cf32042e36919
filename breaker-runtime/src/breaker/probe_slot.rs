//! `ProbeSlot`: a claim on this process's one probe of a circuit, released when dropped.

use super::circuit::Circuit;

/// A claimed probe slot, released when dropped (a lost election, a call cancelled while
/// its election is written, a probe outcome settled) unless it is [kept](Self::keep) by
/// a probe's permit, which releases it when the probe ends.
pub(super) struct ProbeSlot<'a>(&'a Circuit);

impl<'a> ProbeSlot<'a> {
    /// The slot, if no other call holds it.
    pub(super) fn claim(circuit: &'a Circuit) -> Option<Self> {
        // `then`, not `then_some`: a slot built and dropped on a failed claim would
        // release the slot its holder still uses.
        circuit.claim_probe().then(|| Self(circuit))
    }

    /// The slot a probe's permit held, taken over by the probe's outcome.
    pub(super) fn taken_over(circuit: &'a Circuit) -> Self {
        Self(circuit)
    }

    /// Hands the slot on without releasing it: whoever gets the circuit releases it.
    pub(super) fn keep(self) -> &'a Circuit {
        let circuit = self.0;
        std::mem::forget(self);
        circuit
    }
}

impl Drop for ProbeSlot<'_> {
    fn drop(&mut self) {
        self.0.release_probe();
    }
}
