//! `Seam`: where this environment's transitions go, chosen in one place ([`Seam::at`]).
//!
//! - [`Seam::Store`]: to the shared record (and the fleet's counters), adopted into the
//!   cache as the machine says;
//! - [`Seam::Shadow`]: to the would-be record ([`super::would_be`]) instead, written
//!   nowhere: the circuit is in shadow (its config, or an operator's `SHADOW` override),
//!   so every call runs and the would-be record gives the verdicts.
//!
//! The steps of a circuit (admission, trip, probe outcome, fleet report) are written once
//! against a seam; [`super::commit`] holds what each seam does.

use crate::protocol::CircuitRecord;
use crate::protocol::machine;

/// Where a circuit's transitions are committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seam {
    /// The shared record, through the store.
    Store,
    /// The would-be record of shadow mode.
    Shadow,
}

impl Seam {
    /// The seam of a circuit (in shadow by its config if `shadow`) whose cached record is
    /// `record`, at `now` (unix millis): an operator's override on the record decides.
    pub(super) fn at(shadow: bool, record: &CircuitRecord, now: u64) -> Self {
        match machine::shadowed(shadow, record, now) {
            true => Self::Shadow,
            false => Self::Store,
        }
    }

    /// Whether a call the seam's record would reject is rejected (the store), or runs
    /// and is reported as a would-be rejection (shadow).
    pub(super) fn rejects_calls(self) -> bool {
        self == Self::Store
    }

    /// Whether a closed circuit may turn some of its calls away (a slow start's ramp, the
    /// adaptive policy's shedding): only on the store, and not while an operator's
    /// override holds on `record` at `now` (unix millis): in shadow and under an override
    /// every call runs as they say.
    pub(super) fn turns_calls_away(self, record: &CircuitRecord, now: u64) -> bool {
        self == Self::Store && record.live_override(now / 1000).is_none()
    }

    /// Whether calls may take the closed path, given that the cached record lets them
    /// (`record_runs_closed`) and whether the would-be record is closed (asked only in
    /// shadow, where calls the would-be record would reject take the slow path that says
    /// so).
    pub(super) fn runs_closed(
        self,
        record_runs_closed: bool,
        would_be_closed: impl FnOnce() -> bool,
    ) -> bool {
        match self {
            Self::Store => record_runs_closed,
            Self::Shadow => record_runs_closed && would_be_closed(),
        }
    }
}
