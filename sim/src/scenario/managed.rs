//! The Managed Instances scenarios: a few busy environments, each running many invocations
//! at once, instead of many environments running one each. The fleet is 200 environments ×
//! 64 invocations at 500 calls/s each: `outage`'s 100,000 calls/s over 2 % of its
//! environments, so a trip's cost per environment (the threshold plus the calls already in
//! flight) is measured where it is largest.

use super::{Scenario, s};
use crate::downstream::{Health, HealthSchedule};
use crate::traffic::Rate;

/// Environments of the managed fleet.
const ENVS: u32 = 200;
/// Invocations each runs at once.
const CONCURRENCY: u32 = 64;
/// Calls per second each receives: `outage`'s total over the managed fleet.
const RATE_PER_ENV: f64 = 500.0;

impl Scenario {
    /// The Managed Instances scenario called `name`.
    pub(super) fn managed(name: &str) -> Option<Self> {
        let (health, about) = match name {
            "managed-outage" => (
                HealthSchedule::new(vec![(s(10), Health::Down), (s(130), Health::Up)]),
                "200 environments × 64 invocations at once, 500 calls/s each (outage's 100,000 calls/s); the downstream is down from 10 s to 130 s",
            ),
            "managed-background-1pct" => (
                HealthSchedule::new(vec![(0, Health::Failing(0.01))]),
                "as managed-outage, 1 % of calls failing at random throughout",
            ),
            "managed-background-5pct" => (
                HealthSchedule::new(vec![(0, Health::Failing(0.05))]),
                "as managed-outage, 5 % of calls failing at random throughout",
            ),
            "managed-hang" => (
                HealthSchedule::new(vec![(s(10), Health::Hang), (s(130), Health::Up)]),
                "as managed-outage, the downstream stops answering from 10 s to 130 s; function timeout 10 s",
            ),
            _ => return None,
        };
        Some(Self {
            health,
            concurrency: CONCURRENCY,
            ..Self::base(name, about, ENVS, Rate::PerEnv(RATE_PER_ENV), 300)
        })
    }
}
