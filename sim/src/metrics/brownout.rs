//! What a brownout costs, defined so it can be checked:
//!
//! - **shed calls**: calls the breaker's adaptive policy turned away (`StopReason::Shed`);
//!   they are among the rejected calls;
//! - **limited seconds**: virtual seconds whose capacity is finite and above zero (a
//!   brownout, not an outage);
//! - **goodput while limited**: calls served (admitted, not failed) in the limited seconds,
//!   against the capacity of those seconds;
//! - **failed while limited**: admitted calls that failed in the limited seconds, against
//!   the calls admitted in them;
//! - **time to 95 % turned away**: from the start of the downstream's first `Down` phase
//!   to the start of the first second at or after it in which at least 95 % of the calls
//!   started were rejected or shed.

use super::Metrics;
use crate::downstream::{Health, HealthSchedule};
use crate::summary::{BrownoutFigures, Call};

/// The share of a second's calls turned away that counts as the fleet having stopped.
const TURNED_AWAY_SHARE: f64 = 0.95;

/// One virtual second's calls.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    calls: u32,
    turned_away: u32,
    served: u32,
    failed: u32,
}

/// What the brownout figures collect.
#[derive(Debug, Default)]
pub(super) struct Brownout {
    outage_start_ms: Option<u64>,
    shed: u64,
    seconds: Vec<Tally>,
}

impl Brownout {
    /// A call, as [`Metrics::on_call`] reports it.
    pub(super) fn on_call(&mut self, call: &Call) {
        self.shed += u64::from(call.shed);
        let second = (call.start_ms / 1000) as usize;
        if self.seconds.len() <= second {
            self.seconds.resize(second + 1, Tally::default());
        }
        let tally = &mut self.seconds[second];
        tally.calls += 1;
        match (call.admitted, call.failed) {
            (false, _) => tally.turned_away += 1,
            (true, false) => tally.served += 1,
            (true, true) => tally.failed += 1,
        }
    }
}

/// The start of the first `Down` phase of `health`.
fn outage_start(health: &HealthSchedule) -> Option<u64> {
    (0..)
        .map(|s: u64| s * 1000)
        .take(100_000)
        .find(|&ms| health.at(ms) == Health::Down)
}

impl Metrics {
    /// The health the time to 95 % turned away counts from (its first `Down` phase).
    pub fn with_outage(mut self, health: &HealthSchedule) -> Self {
        self.brownout.outage_start_ms = outage_start(health);
        self
    }

    /// The brownout figures, against the capacity per second.
    pub(super) fn brownout_figures(&self, capacity_per_s: &[Option<u32>]) -> BrownoutFigures {
        let b = &self.brownout;
        let limited = |s: usize| capacity_per_s.get(s).copied().flatten().filter(|&c| c > 0);
        let (mut served, mut capacity, mut failed, mut admitted) = (0u64, 0u64, 0u64, 0u64);
        for (s, tally) in b.seconds.iter().enumerate() {
            if let Some(c) = limited(s) {
                served += u64::from(tally.served);
                capacity += u64::from(c);
                failed += u64::from(tally.failed);
                admitted += u64::from(tally.served + tally.failed);
            }
        }
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        let to_95 = b.outage_start_ms.and_then(|start| {
            let first = start.div_ceil(1000) as usize;
            b.seconds
                .iter()
                .enumerate()
                .skip(first)
                .find(|(_, t)| {
                    t.calls > 0
                        && f64::from(t.turned_away) >= TURNED_AWAY_SHARE * f64::from(t.calls)
                })
                .map(|(s, _)| (s as u64 * 1000).saturating_sub(start) as f64 / 1000.0)
        });
        BrownoutFigures {
            shed_calls: b.shed,
            served_while_limited: served,
            capacity_while_limited: capacity,
            goodput_share_while_limited: share(served, capacity),
            failed_while_limited: failed,
            failed_share_of_admitted_while_limited: share(failed, admitted),
            outage_to_95_turned_away_s: to_95,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::downstream::HealthSchedule;

    fn call(start_ms: u64, admitted: bool, failed: bool) -> Call {
        Call {
            env: 0,
            start_ms,
            admitted,
            probe: None,
            decided_ms: start_ms,
            end_ms: start_ms,
            failed,
            abandoned: false,
            killed: false,
            unhealthy: false,
            retry_after_ms: None,
            shed: !admitted,
        }
    }

    #[test]
    fn goodput_failures_and_the_time_to_stop_are_counted_per_second() {
        let health = HealthSchedule::new(vec![(2_000, Health::Down)]);
        let mut m = Metrics::new("t", 1, 1, 5_000, 1_000, None).with_outage(&health);
        // Second 1: capacity 10, 8 served, 2 failed, 10 shed.
        for i in 0..20 {
            m.on_call(&call(1_000 + i, i < 10, (8..10).contains(&i)));
        }
        // Second 2 (the outage's first): half turned away; second 3: 19 of 20.
        for i in 0..20 {
            m.on_call(&call(2_000 + i, i < 10, true));
            m.on_call(&call(3_000 + i, i < 1, true));
        }
        let figures = m.brownout_figures(&[None, Some(10), Some(0), None]);
        assert_eq!(figures.shed_calls, 10 + 10 + 19);
        assert_eq!(
            (figures.served_while_limited, figures.capacity_while_limited),
            (8, 10)
        );
        assert_eq!(figures.goodput_share_while_limited, Some(0.8));
        assert_eq!(figures.failed_share_of_admitted_while_limited, Some(0.2));
        assert_eq!(figures.outage_to_95_turned_away_s, Some(1.0));
    }
}
