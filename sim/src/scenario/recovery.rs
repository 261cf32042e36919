//! The scenarios of a downstream with less capacity than the fleet's load: back with less
//! capacity after an outage, back after answering "retry after" for a minute, and a
//! brownout that serves half the load for two minutes.

use std::time::Duration;

use super::{BreakerSettings, Scenario, s};
use crate::downstream::{Capacity, CapacitySchedule, Health, HealthSchedule};
use crate::traffic::Rate;

/// The slow start docs/scale.md recommends: the ramp over which a downstream with cold
/// caches or scaled-in capacity gets the fleet's calls back (the capacity ramp of
/// `recovery-capacity` takes as long).
pub const RECOMMENDED_SLOW_START: Duration = Duration::from_secs(120);

impl Scenario {
    /// The return scenario called `name`.
    pub(super) fn recovery(name: &str) -> Option<Self> {
        let scenario = match name {
            "recovery-capacity" | "recovery-capacity-slow-start" => Self {
                health: HealthSchedule::new(vec![(s(30), Health::Down), (s(90), Health::Up)]),
                // The fleet's peak is 10,000 calls/s: back at 30 % of it, 100 % 120 s later.
                capacity: CapacitySchedule::new(vec![
                    (s(30), Capacity::PerSecond(0)),
                    (
                        s(90),
                        Capacity::Ramp {
                            from: 3_000,
                            to: 10_000,
                            over_ms: s(120),
                        },
                    ),
                ]),
                ..Self::base(
                    name,
                    "10,000 environments at 1 call/s; the downstream is down from 30 s to 90 s, then back at 3,000 calls/s ramping to 10,000 over 120 s",
                    10_000,
                    Rate::PerEnv(1.0),
                    300,
                )
            },
            // 200 s: the throttling ends at 90 s, and two recovery timeouts (30 s each)
            // after it the fleet has closed and run at its full rate for a minute.
            "throttle-retry-after" => Self {
                health: HealthSchedule::new(vec![
                    (
                        s(30),
                        Health::Throttling {
                            retry_after_ms: s(20),
                        },
                    ),
                    (s(90), Health::Up),
                ]),
                ..Self::base(
                    name,
                    "1,000 environments at 10 calls/s; from 30 s to 90 s the downstream answers every call \"throttled: retry after 20 s\"",
                    1_000,
                    Rate::PerEnv(10.0),
                    200,
                )
            },
            "brownout-capacity" => Self {
                // The fleet's peak is 10,000 calls/s: half of it served for 120 s.
                capacity: CapacitySchedule::new(vec![
                    (s(10), Capacity::PerSecond(5_000)),
                    (s(130), Capacity::Unlimited),
                ]),
                ..Self::base(
                    name,
                    "1,000 environments at 10 calls/s; from 10 s to 130 s the downstream serves 5,000 calls/s and turns the rest away (a 503 load shed)",
                    1_000,
                    Rate::PerEnv(10.0),
                    200,
                )
            },
            _ => return None,
        };
        Some(match name {
            "recovery-capacity-slow-start" => Self {
                about: "as recovery-capacity, the breakers with the recommended slow start: a 120 s ramp after each close".to_owned(),
                breaker: BreakerSettings {
                    slow_start: Some(RECOMMENDED_SLOW_START),
                    ..scenario.breaker
                },
                ..scenario
            },
            _ => scenario,
        })
    }
}
