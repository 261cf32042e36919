//! The protected downstream: a latency, a health schedule and a capacity schedule by
//! virtual time, so a scenario can say "down for 120 s, then up", "30 % of calls fail" or
//! "back at 3,000 calls/s, ramping to 10,000 over 120 s".
//!
//! Capacity (decided so a run stays a pure function of its seed):
//!
//! - calls are counted per virtual second bucket, by the instant they reach the
//!   downstream; the bucket's capacity is the schedule's at the second's start. No random
//!   draw is made for it, so an unlimited downstream draws exactly what it drew before
//!   capacity existed;
//! - a call past its second's capacity fails fast, like a 503 load shed: an error the
//!   breaker counts as a failure, after the base latency (a round trip, no queueing), and
//!   it is not served;
//! - a served call's latency grows with the load: `base / (1 − min(ρ, 0.9))`, where `ρ` is
//!   the calls admitted so far in its second (itself included) over the capacity, so at
//!   most 10 × the base. Unlimited, a call takes the base latency, exactly;
//! - goodput = the calls served that succeeded.
//!
//! A `Throttling` phase answers every call with an error carrying "retry after N ms", as a
//! throttling service's 429 with a `Retry-After` does.

use crate::rng::Rng;

mod capacity;

pub use capacity::{Capacity, CapacitySchedule};

/// The load past which a served call's latency stops growing: 0.9, so at most 10 × the base.
const MAX_UTILISATION: f64 = 0.9;

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
    /// Every call fails with an error that says to retry after this long.
    Throttling {
        /// The hint the error carries, ms.
        retry_after_ms: u64,
    },
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
pub struct DownstreamError {
    /// How long the answer said to wait before calling again, ms (a throttling answer's
    /// "retry after"); `None`: no hint.
    pub retry_after_ms: Option<u64>,
    /// A load shed: the call came past the second's capacity (a 503 "busy").
    pub load_shed: bool,
}

impl DownstreamError {
    /// A failure without a hint (a down downstream, a random failure).
    pub const PLAIN: Self = Self {
        retry_after_ms: None,
        load_shed: false,
    };

    /// A call past the second's capacity, turned away before any work.
    pub const LOAD_SHED: Self = Self {
        retry_after_ms: None,
        load_shed: true,
    };
}

impl std::fmt::Display for DownstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.retry_after_ms, self.load_shed) {
            (Some(ms), _) => write!(f, "the downstream is throttling: retry after {ms} ms"),
            (None, true) => f.write_str("the downstream is busy: the call was shed"),
            (None, false) => f.write_str("the downstream failed the call"),
        }
    }
}

impl std::error::Error for DownstreamError {}

/// The downstream's answer to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// Served and succeeded, or failed.
    pub result: Result<(), DownstreamError>,
    /// How long after the call reached it the answer comes, ms.
    pub latency_ms: u64,
}

/// The downstream every environment calls.
#[derive(Debug)]
pub struct Downstream {
    latency_ms: u64,
    schedule: HealthSchedule,
    capacity: CapacitySchedule,
    rng: Rng,
    /// Calls that reached the downstream, per virtual second (shed ones included).
    load: Vec<u32>,
}

impl Downstream {
    /// A downstream answering after `latency_ms`, healthy as `schedule` says, serving any
    /// load.
    pub fn new(latency_ms: u64, schedule: HealthSchedule, seed: u64) -> Self {
        Self {
            latency_ms,
            schedule,
            capacity: CapacitySchedule::unlimited(),
            rng: Rng::new(seed, 0xd0d0),
            load: Vec::new(),
        }
    }

    /// The same downstream serving at most as many calls per second as `capacity` says.
    pub fn with_capacity(mut self, capacity: CapacitySchedule) -> Self {
        self.capacity = capacity;
        self
    }

    /// How long a call takes unloaded, ms.
    pub fn latency_ms(&self) -> u64 {
        self.latency_ms
    }

    /// The schedule.
    pub fn schedule(&self) -> &HealthSchedule {
        &self.schedule
    }

    /// The capacity schedule.
    pub fn capacity(&self) -> &CapacitySchedule {
        &self.capacity
    }

    /// Calls that reached the downstream in each virtual second so far (index: second).
    pub fn load_per_second(&self) -> &[u32] {
        &self.load
    }

    /// A call reaching the downstream at `now_ms`: its answer, or `None` if it never
    /// answers.
    pub fn call(&mut self, now_ms: u64) -> Option<Reply> {
        let second = now_ms / 1000;
        let index = second as usize;
        if self.load.len() <= index {
            self.load.resize(index + 1, 0);
        }
        self.load[index] += 1;
        let mut latency_ms = self.latency_ms;
        if let Some(capacity) = self.capacity.of_second(second) {
            let admitted = self.load[index];
            if admitted > capacity {
                // Shed before any work, and before the health's draw.
                return Some(Reply {
                    result: Err(DownstreamError::LOAD_SHED),
                    latency_ms,
                });
            }
            let rho = f64::from(admitted) / f64::from(capacity);
            latency_ms = (self.latency_ms as f64 / (1.0 - rho.min(MAX_UTILISATION))).round() as u64;
        }
        let result = match self.schedule.at(now_ms) {
            Health::Up => Ok(()),
            Health::Down => Err(DownstreamError::PLAIN),
            Health::Failing(p) if self.rng.chance(p) => Err(DownstreamError::PLAIN),
            Health::Failing(_) => Ok(()),
            Health::Hang => return None,
            Health::Throttling { retry_after_ms } => Err(DownstreamError {
                retry_after_ms: Some(retry_after_ms),
                load_shed: false,
            }),
        };
        Some(Reply { result, latency_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(reply: Option<Reply>) -> bool {
        reply.is_some_and(|r| r.result.is_err())
    }

    #[test]
    fn failing_fails_about_the_given_fraction() {
        let mut d = Downstream::new(50, HealthSchedule::new(vec![(0, Health::Failing(0.3))]), 1);
        let failures = (0..10_000).filter(|_| failed(d.call(5))).count();
        assert!((2_800..3_200).contains(&failures), "{failures}");
        assert_eq!(d.schedule().recovered_at(), None);
    }

    #[test]
    fn the_capacity_limits_the_calls_served_per_second_and_latency_grows_with_load() {
        let capacity = CapacitySchedule::new(vec![(2_000, Capacity::PerSecond(100))]);
        let mut d = Downstream::new(50, HealthSchedule::always_up(), 1).with_capacity(capacity);
        // Unlimited before 2 s: every call served at the base latency.
        let early: Vec<Reply> = (0..500).filter_map(|_| d.call(1_500)).collect();
        assert!(early.iter().all(|r| r.result.is_ok() && r.latency_ms == 50));
        // 100 a second from 2 s: the first 100 of each second served, the rest shed.
        for second in [2_000, 3_000] {
            let replies: Vec<Reply> = (0..250).filter_map(|i| d.call(second + i)).collect();
            let served = replies.iter().filter(|r| r.result.is_ok()).count();
            assert_eq!(served, 100, "second {second}");
            assert!(replies[100..].iter().all(|r| r.latency_ms == 50));
            // ρ = 1 / 100 first, then capped at 0.9: 50 ms to 500 ms, never less as it fills.
            assert_eq!(replies[0].latency_ms, 51);
            assert_eq!(replies[49].latency_ms, 100);
            assert_eq!(replies[99].latency_ms, 500);
            assert!(
                replies[..100]
                    .windows(2)
                    .all(|w| w[0].latency_ms <= w[1].latency_ms)
            );
        }
        assert_eq!(d.load_per_second(), &[0, 500, 250, 250]);
    }

    #[test]
    fn a_zero_capacity_sheds_every_call_and_throttling_carries_its_hint() {
        let capacity = CapacitySchedule::new(vec![(0, Capacity::PerSecond(0))]);
        let mut shed = Downstream::new(50, HealthSchedule::always_up(), 1).with_capacity(capacity);
        assert!((0..10).all(|i| shed.call(i)
            == Some(Reply {
                result: Err(DownstreamError::LOAD_SHED),
                latency_ms: 50
            })));
        let throttling = Health::Throttling {
            retry_after_ms: 20_000,
        };
        let mut d = Downstream::new(
            50,
            HealthSchedule::new(vec![(0, throttling), (60_000, Health::Up)]),
            1,
        );
        let error = d.call(10).and_then(|r| r.result.err());
        assert_eq!(error.and_then(|e| e.retry_after_ms), Some(20_000));
        assert!(error.is_some_and(|e| e.to_string().contains("retry after 20000 ms")));
        assert_eq!(d.call(60_000).map(|r| r.result), Some(Ok(())));
        assert_eq!(d.schedule().recovered_at(), Some(60_000));
    }
}
