//! The adaptive policy's shedding at admission: a closed circuit's call is shed with the
//! probability its throttle gives ([`Throttle::share`](crate::policy::adaptive::Throttle)),
//! and takes the open path ([`StopReason::Shed`](crate::StopReason::Shed)).
//!
//! While the throttle sheds, the circuit keeps its calls off the closed path
//! ([`Circuit::publish`](super::circuit::Circuit)), so every call comes here; once it sheds
//! nothing, the closed path is given back.

use super::circuit::Circuit;
use super::seam::Seam;
use crate::events::CircuitInfo;
use crate::policy::adaptive::ALL;
use crate::protocol::CircuitRecord;

/// Whether a call `seam` admits on the closed `record` at `now` runs (`Ok`) or is shed
/// (`Err`, what the rejection reports: retry in a second, when the share is drawn again).
/// Neither an operator's override that holds nor a shadowed circuit sheds.
pub(super) fn admit(
    circuit: &Circuit,
    seam: Seam,
    record: &CircuitRecord,
    now: u64,
) -> Result<(), CircuitInfo> {
    let Some(throttle) = circuit.counts().throttle() else {
        return Ok(());
    };
    if !seam.turns_calls_away(record, now) {
        return Ok(());
    }
    let share = throttle.share(now);
    if share == 0 {
        if circuit.closed_until() == 0 {
            circuit.publish(&circuit.lock());
        }
        return Ok(());
    }
    if circuit.reports().draw(u64::from(ALL), now) >= u64::from(share) {
        return Ok(());
    }
    throttle.shed(now);
    let mut info = circuit.info_of(record);
    info.shed = true;
    info.retry_after_unix_secs = Some(now / 1000 + 1);
    Err(info)
}
