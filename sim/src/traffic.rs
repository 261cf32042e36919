//! Who calls when: Poisson arrivals per environment, and how many invocations an
//! environment runs at once: one in a Lambda environment, up to its concurrency on Managed
//! Instances.
//!
//! Every environment with a free worker has exactly one entry in a binary heap: its next
//! call, at its arrival time or, if every worker was busy, when one freed. An environment
//! whose workers are all busy has none: a call that arrives then waits (Lambda would start
//! another environment; the simulator's fleet has a fixed size), and the next arrival is
//! drawn when a worker frees, from the previous arrival, not from that instant, so a
//! backlog keeps its Poisson arrivals. At concurrency 1 the draws come in the order they
//! did before concurrency existed, so those runs are unchanged. Entries are packed into one
//! `u64` (time << 20 | environment), so the heap compares integers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::rng::Rng;

/// Bits of a heap entry that hold the environment.
const ENV_BITS: u32 = 20;

/// The largest fleet the packing allows.
pub const MAX_ENVS: u32 = 1 << ENV_BITS;

/// Below this mean gap (above 100 calls/s in one environment), arrivals are drawn to the
/// microsecond: gaps of whole milliseconds, at least one, cap an environment near 1,000
/// calls/s and skew its rate (500 calls/s drew 455). Slower environments draw whole
/// milliseconds, as they always have, so their runs are unchanged.
const FINE_BELOW_GAP_MS: f64 = 10.0;

/// How often calls arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Calls per second in each environment.
    PerEnv(f64),
    /// Calls per second for the whole fleet, spread evenly over its environments.
    Total(f64),
}

impl Rate {
    /// Calls per second in each of `envs` environments.
    pub fn per_env(self, envs: u32) -> f64 {
        match self {
            Self::PerEnv(rate) => rate,
            Self::Total(rate) => rate / f64::from(envs.max(1)),
        }
    }
}

/// The fleet's call schedule.
#[derive(Debug)]
pub struct Traffic {
    heap: BinaryHeap<Reverse<u64>>,
    /// Each environment's latest arrival, µs.
    arrival: Vec<u64>,
    /// Each environment's calls started and not ended.
    in_flight: Vec<u32>,
    /// Calls an environment runs at once.
    concurrency: u32,
    mean_gap_ms: f64,
    rng: Rng,
}

impl Traffic {
    /// `envs` environments at `rate`. Each environment's first call comes a uniform
    /// `[0, spread_ms]` plus one Poisson gap after time 0: a warm fleet, whose environments
    /// started at different times (a fleet that all started in the same 100 ms would
    /// refresh its caches in step, which no warm fleet does).
    ///
    /// # Panics
    ///
    /// If `envs` is not below [`MAX_ENVS`].
    ///
    /// ```
    /// use breaker_sim::traffic::{Rate, Traffic};
    /// let mut t = Traffic::new(2, Rate::PerEnv(10.0), 0, 1);
    /// let (start, env) = t.next_call().unwrap();
    /// // The environment is busy for 1 s: its next call starts no earlier.
    /// t.ended(env, start + 1_000);
    /// let (second, _) = t.next_call().unwrap();
    /// assert!(second >= start);
    /// ```
    pub fn new(envs: u32, rate: Rate, spread_ms: u64, seed: u64) -> Self {
        assert!(envs < MAX_ENVS, "at most {MAX_ENVS} environments");
        let per_env = rate.per_env(envs);
        let mean_gap_ms = if per_env > 0.0 {
            1000.0 / per_env
        } else {
            f64::INFINITY
        };
        let mut rng = Rng::new(seed, 0x7af1c);
        let mut arrival = Vec::with_capacity(envs as usize);
        let mut heap = BinaryHeap::with_capacity(envs as usize);
        for env in 0..envs {
            let first = (rng.between(0, spread_ms).saturating_mul(1000))
                .saturating_add(gap_us(&mut rng, mean_gap_ms));
            arrival.push(first);
            heap.push(Reverse(pack(first / 1000, env)));
        }
        Self {
            heap,
            arrival,
            in_flight: vec![0; envs as usize],
            concurrency: 1,
            mean_gap_ms,
            rng,
        }
    }

    /// The same schedule with environments that run up to `concurrency` calls at once (at
    /// least 1), as a Managed Instances environment runs several invocations.
    ///
    /// ```
    /// use breaker_sim::traffic::{Rate, Traffic};
    /// let mut t = Traffic::new(1, Rate::PerEnv(100.0), 0, 1).with_concurrency(2);
    /// let (first, _) = t.next_call().unwrap();
    /// let (second, _) = t.next_call().unwrap();
    /// // Both run; the third waits for one of them to end, at 10 s.
    /// t.ended(0, 10_000);
    /// assert!(t.next_call().unwrap().0 >= 10_000 && second >= first);
    /// ```
    pub fn with_concurrency(mut self, concurrency: u32) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    /// The next call's start and environment, without taking it.
    #[inline]
    pub fn peek(&self) -> Option<(u64, u32)> {
        self.heap.peek().map(|Reverse(entry)| unpack(*entry))
    }

    /// The next call to start: (virtual ms, environment). It runs until
    /// [`ended`](Self::ended) says so; while the environment still has a free worker, its
    /// next call is scheduled now.
    #[inline]
    pub fn next_call(&mut self) -> Option<(u64, u32)> {
        let (start, env) = self.heap.pop().map(|Reverse(entry)| unpack(entry))?;
        let in_flight = &mut self.in_flight[env as usize];
        *in_flight += 1;
        if *in_flight < self.concurrency {
            self.schedule_next(env, start);
        }
        Some((start, env))
    }

    /// One of `env`'s calls taken from [`next_call`](Self::next_call) ended at `at_ms`: if
    /// it held the environment's last worker, the next call is scheduled, no earlier.
    #[inline]
    pub fn ended(&mut self, env: u32, at_ms: u64) {
        let in_flight = &mut self.in_flight[env as usize];
        let was_full = *in_flight >= self.concurrency;
        *in_flight = in_flight.saturating_sub(1);
        if was_full {
            self.schedule_next(env, at_ms);
        }
    }

    /// Draws `env`'s next arrival; its call starts then, or at `free_from_ms` if later.
    #[inline]
    fn schedule_next(&mut self, env: u32, free_from_ms: u64) {
        let arrival = &mut self.arrival[env as usize];
        *arrival = arrival.saturating_add(gap_us(&mut self.rng, self.mean_gap_ms));
        let start = (*arrival / 1000).max(free_from_ms);
        self.heap.push(Reverse(pack(start, env)));
    }
}

/// One arrival gap, µs: whole milliseconds unless the mean is below [`FINE_BELOW_GAP_MS`].
fn gap_us(rng: &mut Rng, mean_gap_ms: f64) -> u64 {
    if !mean_gap_ms.is_finite() {
        (u64::MAX >> ENV_BITS).saturating_mul(1000)
    } else if mean_gap_ms < FINE_BELOW_GAP_MS {
        rng.exponential_millis(mean_gap_ms * 1000.0)
    } else {
        rng.exponential_millis(mean_gap_ms).saturating_mul(1000)
    }
}

#[inline]
fn pack(time_ms: u64, env: u32) -> u64 {
    (time_ms.min(u64::MAX >> ENV_BITS) << ENV_BITS) | u64::from(env)
}

#[inline]
fn unpack(entry: u64) -> (u64, u32) {
    (
        entry >> ENV_BITS,
        (entry & (u64::from(MAX_ENVS) - 1)) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_come_in_time_order_at_the_requested_rate() {
        let mut t = Traffic::new(100, Rate::PerEnv(10.0), 0, 5);
        let mut last = 0;
        let mut calls = 0;
        while let Some((start, env)) = t.next_call() {
            if start >= 10_000 {
                break;
            }
            assert!(start >= last);
            last = start;
            calls += 1;
            t.ended(env, start);
        }
        // 100 environments × 10 calls/s × 10 s.
        assert!((9_500..10_500).contains(&calls), "{calls}");
    }

    #[test]
    fn an_environment_runs_at_most_its_concurrency_and_queues_the_rest() {
        // One environment at 100 calls/s whose calls each last 1 s, 4 at a time: the
        // workers bound it to 4 calls/s, never more than 4 running.
        let mut t = Traffic::new(1, Rate::PerEnv(100.0), 0, 3).with_concurrency(4);
        let mut ends: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
        let mut calls = 0;
        loop {
            let start = t.peek().map(|(start, _)| start);
            match (start, ends.peek().map(|Reverse(end)| *end)) {
                (_, Some(end)) if start.is_none_or(|start| end <= start) => {
                    ends.pop();
                    t.ended(0, end);
                }
                (Some(start), _) if start < 10_000 => {
                    t.next_call();
                    ends.push(Reverse(start + 1_000));
                    assert!(ends.len() <= 4, "{} running at {start}", ends.len());
                    calls += 1;
                }
                _ => break,
            }
        }
        assert_eq!(calls, 40);
    }

    #[test]
    fn at_concurrency_one_the_schedule_is_the_one_at_a_time_one() {
        // The schedule before concurrency existed: one heap entry per environment, drawn
        // when its call ends, in whole milliseconds.
        let (envs, mean_gap_ms, spread_ms, seed) = (50, 100.0, 1_000, 9);
        let mut rng = Rng::new(seed, 0x7af1c);
        let mut arrival = Vec::new();
        let mut heap = BinaryHeap::new();
        for env in 0..envs {
            let first = rng.between(0, spread_ms) + rng.exponential_millis(mean_gap_ms);
            arrival.push(first);
            heap.push(Reverse(pack(first, env)));
        }
        let mut t = Traffic::new(envs, Rate::PerEnv(10.0), spread_ms, seed);
        for call in 0..5_000u64 {
            let Reverse(entry) = heap.pop().unwrap_or_else(|| unreachable!("refilled"));
            let (start, env) = unpack(entry);
            assert_eq!(t.next_call(), Some((start, env)), "call {call}");
            // Some calls outlast the next arrival, and wait.
            let busy_until = start + call % 7 * 40;
            arrival[env as usize] += rng.exponential_millis(mean_gap_ms);
            heap.push(Reverse(pack(arrival[env as usize].max(busy_until), env)));
            t.ended(env, busy_until);
        }
    }

    #[test]
    fn a_busy_environment_keeps_its_rate() {
        // 500 calls/s in one environment, 64 at once, each call instant: 5,000 in 10 s.
        let mut t = Traffic::new(1, Rate::PerEnv(500.0), 0, 7).with_concurrency(64);
        let mut calls = 0;
        while let Some((start, env)) = t.next_call() {
            if start >= 10_000 {
                break;
            }
            calls += 1;
            t.ended(env, start);
        }
        assert!((4_850..5_150).contains(&calls), "{calls}");
    }

    #[test]
    fn a_total_rate_is_spread_over_the_fleet() {
        assert_eq!(Rate::Total(1000.0).per_env(100), 10.0);
    }
}
