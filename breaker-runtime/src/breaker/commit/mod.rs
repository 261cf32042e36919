//! The one commit seam: every transition this environment makes (a trip, an election or
//! a takeover, a probe's hand-over, close or reopen) is committed by [`Seam::commit`] and
//! then announced once, outside every lock. What each seam does is in its module:
//!
//! - [`store`]: write to the shared record, then adopt the answer into the cache;
//! - [`shadow`]: apply to the would-be record, write nothing shared.
//!
//! The steps that decide what to commit (admission, the trip, the probe's outcome, the
//! fleet report) ask the seam the circuit chose ([`Circuit::seam`]) for the record they
//! decide on, and never which seam it is.

mod shadow;
mod store;

use super::circuit::Circuit;
use super::seam::Seam;
use crate::events::{CircuitInfo, TransitionCause};
use crate::protocol::CircuitState;
use crate::protocol::machine::Admission;
use crate::protocol::{
    CircuitRecord, EpochTally, FailureReport, FleetTally, RecordWrite, SuspectReport,
};

/// A transition to commit, and what its announcement says.
#[derive(Debug)]
pub(super) struct Change {
    /// The state the circuit leaves, as announced.
    pub(super) from: CircuitState,
    /// The record the transition was made from.
    pub(super) base: CircuitRecord,
    pub(super) transition: RecordWrite,
    /// Why, as announced.
    pub(super) cause: Option<TransitionCause>,
}

/// What a commit leaves.
#[derive(Debug)]
pub(super) struct Committed {
    /// The transition counts as this environment's (and was announced).
    pub(super) counts: bool,
    /// The record believed after it.
    pub(super) record: CircuitRecord,
}

impl Seam {
    /// What the seam's record says of a call at `now`, and that record. `with_slot`: the
    /// caller holds this process's probe slot; `verified`: the cached record was just read
    /// strongly consistently; `quiet`: the call came after none for a cache age.
    pub(super) fn admission(
        self,
        circuit: &Circuit,
        now: u64,
        with_slot: bool,
        verified: bool,
        quiet: bool,
    ) -> (Admission, CircuitRecord) {
        match self {
            Self::Store => circuit.decide_cached(now, with_slot, verified, quiet),
            Self::Shadow => shadow::admission(circuit, now, with_slot),
        }
    }

    /// A call the seam's `record` rejects: what the rejection reports, or `None` when the
    /// call runs all the same (its would-be rejection reported).
    pub(super) fn rejection(
        self,
        circuit: &Circuit,
        record: &CircuitRecord,
    ) -> Option<CircuitInfo> {
        match self {
            Self::Store => store::rejection(circuit, record),
            Self::Shadow => shadow::rejection(circuit, record),
        }
    }

    /// A probe admitted on a call that was `quiet` (or not) starts.
    pub(super) fn probe_started(self, circuit: &Circuit, quiet: bool) {
        match self {
            Self::Store => store::probe_started(circuit, quiet),
            Self::Shadow => shadow::probe_started(circuit),
        }
    }

    /// The record `trip` is made from, if the seam's record may trip at `now` (the store
    /// seam opens the cache at once, before the write).
    pub(super) fn opening(
        self,
        circuit: &Circuit,
        trip: &RecordWrite,
        now: u64,
    ) -> Option<CircuitRecord> {
        match self {
            Self::Store => store::opening(circuit, trip, now),
            Self::Shadow => shadow::opening(circuit, now),
        }
    }

    /// The record a probe's outcome is made from, and whether it hands the probe over.
    pub(super) fn probe_base(self, circuit: &Circuit) -> (CircuitRecord, bool) {
        match self {
            Self::Store => store::probe_base(circuit),
            Self::Shadow => shadow::probe_base(circuit),
        }
    }

    /// Adds `report` to the fleet's counters at `now`; the fleet's tally, if one came back.
    /// The shadow seam writes nothing shared: nothing is reported.
    pub(super) async fn report(
        self,
        circuit: &Circuit,
        report: FailureReport,
        now: u64,
    ) -> Option<FleetTally> {
        match self {
            Self::Store => store::report(circuit, report, now).await,
            Self::Shadow => None,
        }
    }

    /// Adds `report` to the counters of a suspicion at `now`; the epoch's tally, if one came
    /// back. The shadow seam writes nothing shared: nothing is reported.
    pub(super) async fn report_suspected(
        self,
        circuit: &Circuit,
        report: SuspectReport,
        now: u64,
    ) -> Option<EpochTally> {
        match self {
            Self::Store => store::report_suspected(circuit, report, now).await,
            Self::Shadow => None,
        }
    }

    /// Commits `change` at `now`, then announces it if it counts as this environment's.
    /// `alone`: made without the store (it cannot be reached), applied locally.
    pub(super) async fn commit(
        self,
        circuit: &Circuit,
        change: Change,
        alone: bool,
        now: u64,
    ) -> Committed {
        let committed = match self {
            Self::Store => store::commit(circuit, &change, alone, now).await,
            Self::Shadow => shadow::commit(circuit, &change),
        };
        if committed.counts {
            let Change {
                from,
                transition,
                cause,
                ..
            } = change;
            match self {
                Self::Store => store::announce(
                    circuit,
                    from,
                    transition.to_state(),
                    committed.record.opened_at,
                    cause,
                ),
                Self::Shadow => shadow::announce(circuit, &transition, &committed.record, cause),
            }
        }
        committed
    }
}
