//! The slow start after a close: for the configured ramp after this environment sees the
//! circuit close, a share of its calls rising from [`FIRST_SHARE`] to all is admitted, the
//! rest take the open path ([`StopReason::SlowStart`](crate::StopReason::SlowStart)).
//!
//! Why from when this environment sees the close, not from a time the close writes: the
//! fleet ramps together within a cache age (every environment reads the close within
//! one), a Powertools close (which writes no time) starts the ramp the same way, and the
//! close's write stays as it is. Only a close seen happening starts a ramp: an environment
//! that starts up on a closed circuit, or made no call through the whole opening, has
//! nothing to ramp from and calls at its full rate (`docs/design.md`, "Slow start after a
//! close").

use super::circuit::Circuit;
use super::seam::Seam;
use crate::config::millis;
use crate::events::CircuitInfo;
use crate::protocol::CircuitRecord;

/// The share of calls admitted at the start of a ramp, in ten-thousandths: a tenth (as
/// Envoy's slow start's default minimum weight), so a probe's success is followed by
/// traffic enough to show the downstream's health, not by a trickle.
pub(crate) const FIRST_SHARE: u64 = 1_000;

/// The share of calls, in ten-thousandths, a ramp of `ramp` ms admits `elapsed` ms after
/// the close: linear from [`FIRST_SHARE`] to all.
pub(crate) fn admitted_share(elapsed: u64, ramp: u64) -> u64 {
    if ramp == 0 || elapsed >= ramp {
        return 10_000;
    }
    FIRST_SHARE + (10_000 - FIRST_SHARE) * elapsed / ramp
}

/// Whether a call `seam` admits on the closed `record` at `now` runs (`Ok`) or is turned
/// away by a slow start in its ramp (`Err`, what the rejection reports). A ramp that has
/// ended gives the closed path back. Neither an operator's override that holds nor a
/// shadowed circuit ramps: calls run as the override or the shadow says.
pub(super) fn admit(
    circuit: &Circuit,
    seam: Seam,
    record: &CircuitRecord,
    now: u64,
) -> Result<(), CircuitInfo> {
    let Some(ramp) = circuit.config().slow_start().map(millis) else {
        return Ok(());
    };
    let from = circuit.lock().ramp_from();
    if from == 0 {
        return Ok(());
    }
    let elapsed = now.saturating_sub(from);
    if elapsed >= ramp {
        let mut cache = circuit.lock();
        if cache.ramp_from() == from {
            cache.end_ramp();
            circuit.publish(&cache);
        }
        return Ok(());
    }
    if !seam.turns_calls_away(record, now) {
        return Ok(());
    }
    if circuit.reports().draw(10_000, now) < admitted_share(elapsed, ramp) {
        return Ok(());
    }
    let mut info = circuit.info_of(record);
    info.slow_start = true;
    info.retry_after_unix_secs = Some(from.saturating_add(ramp).div_ceil(1000));
    Err(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_rises_linearly_from_a_tenth_to_all() {
        assert_eq!(admitted_share(0, 120_000), 1_000);
        assert_eq!(admitted_share(60_000, 120_000), 5_500);
        assert_eq!(admitted_share(119_999, 120_000), 9_999);
        assert_eq!(admitted_share(120_000, 120_000), 10_000);
        assert_eq!(admitted_share(5, 0), 10_000, "no ramp");
    }
}
