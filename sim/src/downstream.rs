//! The protected downstream: a latency and a health schedule by virtual time, so a scenario
//! can say "down for 120 s, then up" or "30 % of calls fail".

use crate::rng::Rng;

/// How the downstream answers during a phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Health {
    /// Every call succeeds.
    Up,
    /// Every call fails.
    Down,
    /// Each call fails with this probability (seeded).
    Failing(f64),
    /// No call answers: each runs until the caller gives up on it.
    Hang,
}

/// Health by virtual time: each phase holds from its start until the next one's.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthSchedule {
    /// `(from virtual ms, health)`, in order of time; before the first phase: up.
    phases: Vec<(u64, Health)>,
}

impl HealthSchedule {
    /// Phases `(from ms, health)`; sorted by time here.
    ///
    /// ```
    /// use breaker_sim::downstream::{Health, HealthSchedule};
    /// let s = HealthSchedule::new(vec![(10_000, Health::Down), (130_000, Health::Up)]);
    /// assert_eq!(s.at(9_999), Health::Up);
    /// assert_eq!(s.at(10_000), Health::Down);
    /// assert_eq!(s.recovered_at(), Some(130_000));
    /// ```
    pub fn new(mut phases: Vec<(u64, Health)>) -> Self {
        phases.sort_by_key(|(from, _)| *from);
        Self { phases }
    }

    /// Always up.
    pub fn always_up() -> Self {
        Self::new(Vec::new())
    }

    /// The health at `now_ms`.
    pub fn at(&self, now_ms: u64) -> Health {
        self.phases
            .iter()
            .rev()
            .find(|(from, _)| *from <= now_ms)
            .map_or(Health::Up, |(_, health)| *health)
    }

    /// When the downstream is up for good after having been unhealthy: the start of the
    /// last phase if it is `Up` and an unhealthy phase came before; `None` otherwise.
    pub fn recovered_at(&self) -> Option<u64> {
        let (from, last) = self.phases.last()?;
        let was_unhealthy = self.phases.iter().any(|(_, h)| *h != Health::Up);
        (*last == Health::Up && was_unhealthy).then_some(*from)
    }
}

/// The downstream failed the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownstreamError;

/// The downstream every environment calls.
#[derive(Debug)]
pub struct Downstream {
    latency_ms: u64,
    schedule: HealthSchedule,
    rng: Rng,
}

impl Downstream {
    /// A downstream answering after `latency_ms`, healthy as `schedule` says.
    pub fn new(latency_ms: u64, schedule: HealthSchedule, seed: u64) -> Self {
        Self {
            latency_ms,
            schedule,
            rng: Rng::new(seed, 0xd0d0),
        }
    }

    /// How long a call takes, ms.
    pub fn latency_ms(&self) -> u64 {
        self.latency_ms
    }

    /// The schedule.
    pub fn schedule(&self) -> &HealthSchedule {
        &self.schedule
    }

    /// A call made at `now_ms`: its answer after [`latency_ms`](Self::latency_ms), or
    /// `None` if it never answers.
    pub fn call(&mut self, now_ms: u64) -> Option<Result<(), DownstreamError>> {
        match self.schedule.at(now_ms) {
            Health::Up => Some(Ok(())),
            Health::Down => Some(Err(DownstreamError)),
            Health::Failing(p) if self.rng.chance(p) => Some(Err(DownstreamError)),
            Health::Failing(_) => Some(Ok(())),
            Health::Hang => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_fails_about_the_given_fraction() {
        let mut d = Downstream::new(50, HealthSchedule::new(vec![(0, Health::Failing(0.3))]), 1);
        let failures = (0..10_000)
            .filter(|_| d.call(5).is_some_and(|r| r.is_err()))
            .count();
        assert!((2_800..3_200).contains(&failures), "{failures}");
        assert_eq!(d.schedule().recovered_at(), None);
    }
}
