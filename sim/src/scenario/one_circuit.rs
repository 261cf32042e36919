//! The scenarios of one circuit: outages, sparse and noisy fleets, store faults, scale.

use super::{Scenario, s};
use crate::downstream::{Health, HealthSchedule};
use crate::model::{FaultWindow, StoreFault};
use crate::traffic::Rate;

impl Scenario {
    /// The scenario of one circuit called `name`, with its own fleet size and rates.
    pub(super) fn one_circuit(name: &str) -> Option<Self> {
        let outage_health =
            || HealthSchedule::new(vec![(s(10), Health::Down), (s(130), Health::Up)]);
        let scenario = match name {
            "outage" => Self {
                health: outage_health(),
                ..Self::base(
                    name,
                    "10,000 environments at 10 calls/s; the downstream is down from 10 s to 130 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "sparse" => Self {
                health: outage_health(),
                start_spread_ms: 1000 * 20,
                ..Self::base(
                    name,
                    "1,000 environments, 1 call per 20 s each; the downstream is down from 10 s to 130 s",
                    1_000,
                    Rate::PerEnv(0.05),
                    300,
                )
            },
            "sparse-10k" => Self {
                health: outage_health(),
                start_spread_ms: 1000 * 50,
                ..Self::base(
                    name,
                    "10,000 environments, 1 call per 50 s each; the downstream is down from 10 s to 130 s",
                    10_000,
                    Rate::PerEnv(0.02),
                    300,
                )
            },
            "hang" => Self {
                health: HealthSchedule::new(vec![(s(10), Health::Hang), (s(130), Health::Up)]),
                ..Self::base(
                    name,
                    "10,000 environments at 1 call/s; the downstream stops answering from 10 s to 130 s; function timeout 10 s",
                    10_000,
                    Rate::PerEnv(1.0),
                    300,
                )
            },
            "background-errors" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.001))]),
                ..Self::base(
                    name,
                    "10,000 environments at 10 calls/s; 0.1 % of calls fail at random throughout",
                    10_000,
                    Rate::PerEnv(10.0),
                    120,
                )
            },
            "quiet-errors" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.01))]),
                start_spread_ms: 1000 * 50,
                ..Self::base(
                    name,
                    "10,000 environments, 1 call per 50 s each; 1 % of calls fail at random throughout",
                    10_000,
                    Rate::PerEnv(0.02),
                    300,
                )
            },
            "quiet-errors-1k" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.01))]),
                start_spread_ms: 1000 * 20,
                ..Self::base(
                    name,
                    "1,000 environments, 1 call per 20 s each; 1 % of calls fail at random throughout",
                    1_000,
                    Rate::PerEnv(0.05),
                    300,
                )
            },
            "sparse-10k-noisy" => Self {
                health: HealthSchedule::new(vec![
                    (0, Health::Failing(0.01)),
                    (s(10), Health::Down),
                    (s(130), Health::Up),
                ]),
                start_spread_ms: 1000 * 50,
                ..Self::base(
                    name,
                    "as sparse-10k, and 1 % of calls fail at random before the outage",
                    10_000,
                    Rate::PerEnv(0.02),
                    300,
                )
            },
            "light" => Self {
                initially_open: true,
                health: HealthSchedule::new(vec![(0, Health::Down), (s(60), Health::Up)]),
                ..Self::base(
                    name,
                    "50 environments, 1 call per 20 s each; OPEN at 0 s, the downstream up from 60 s",
                    50,
                    Rate::PerEnv(0.05),
                    600,
                )
            },
            "store-throttled" => Self {
                health: outage_health(),
                // The first two recovery windows of the outage.
                store_faults: vec![FaultWindow {
                    from_ms: s(10),
                    until_ms: s(70),
                    fault: StoreFault::WritesThrottled,
                }],
                ..Self::base(
                    name,
                    "as outage, and every write is throttled from 10 s to 70 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "store-down-while-open" => Self {
                // Open at ~10 s; the store is gone for 3 windows from 20 s; the downstream
                // is back after the first of them.
                health: HealthSchedule::new(vec![(s(10), Health::Down), (s(50), Health::Up)]),
                store_faults: vec![FaultWindow {
                    from_ms: s(20),
                    until_ms: s(110),
                    fault: StoreFault::Unreachable,
                }],
                ..Self::base(
                    name,
                    "as outage, the store unreachable from 20 s to 110 s, the downstream up from 50 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "flapping" => Self {
                health: HealthSchedule::new(vec![(0, Health::Failing(0.3))]),
                ..Self::base(
                    name,
                    "1,000 environments at 10 calls/s; 30 % of downstream calls fail throughout",
                    1_000,
                    Rate::PerEnv(10.0),
                    300,
                )
            },
            "scale-100k" => Self {
                health: outage_health(),
                ..Self::base(
                    name,
                    "100,000 environments at 1 call/s; the downstream is down from 10 s to 130 s",
                    100_000,
                    Rate::PerEnv(1.0),
                    300,
                )
            },
            "long-outage" => Self {
                health: HealthSchedule::new(vec![(s(10), Health::Down), (s(1210), Health::Up)]),
                ..Self::base(
                    name,
                    "10,000 environments at 10 calls/s; the downstream is down for 20 minutes, from 10 s to 1210 s",
                    10_000,
                    Rate::PerEnv(10.0),
                    1500,
                )
            },
            _ => return None,
        };
        Some(scenario)
    }
}
