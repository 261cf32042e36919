//! Who calls when: Poisson arrivals per environment, and a Lambda environment's one
//! invocation at a time.
//!
//! Every environment has exactly one entry in a binary heap: its next call, at its arrival
//! time or, if the environment is still busy with its previous call, when that ends. A call
//! that arrives while its environment is busy waits (Lambda would start another
//! environment; the simulator's fleet has a fixed size), and the next arrival is drawn from
//! the previous arrival, not from the start, so a backlog keeps its Poisson arrivals.
//! Entries are packed into one `u64` (time << 20 | environment), so the heap compares
//! integers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::rng::Rng;

/// Bits of a heap entry that hold the environment.
const ENV_BITS: u32 = 20;

/// The largest fleet the packing allows.
pub const MAX_ENVS: u32 = 1 << ENV_BITS;

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
    /// Each environment's latest arrival.
    arrival: Vec<u64>,
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
    /// t.schedule_next(env, start + 1_000);
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
            let first = rng
                .between(0, spread_ms)
                .saturating_add(gap(&mut rng, mean_gap_ms));
            arrival.push(first);
            heap.push(Reverse(pack(first, env)));
        }
        Self {
            heap,
            arrival,
            mean_gap_ms,
            rng,
        }
    }

    /// The next call's start and environment, without taking it.
    #[inline]
    pub fn peek(&self) -> Option<(u64, u32)> {
        self.heap.peek().map(|Reverse(entry)| unpack(*entry))
    }

    /// The next call to start: (virtual ms, environment).
    #[inline]
    pub fn next_call(&mut self) -> Option<(u64, u32)> {
        self.heap.pop().map(|Reverse(entry)| unpack(entry))
    }

    /// Schedules `env`'s next call after the one just taken from [`next_call`](Self::next_call),
    /// which keeps the environment busy until `busy_until_ms`.
    #[inline]
    pub fn schedule_next(&mut self, env: u32, busy_until_ms: u64) {
        let arrival = &mut self.arrival[env as usize];
        *arrival = arrival.saturating_add(gap(&mut self.rng, self.mean_gap_ms));
        let start = (*arrival).max(busy_until_ms);
        self.heap.push(Reverse(pack(start, env)));
    }
}

fn gap(rng: &mut Rng, mean_gap_ms: f64) -> u64 {
    if mean_gap_ms.is_finite() {
        rng.exponential_millis(mean_gap_ms)
    } else {
        u64::MAX >> ENV_BITS
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
            t.schedule_next(env, start);
        }
        // 100 environments × 10 calls/s × 10 s.
        assert!((9_500..10_500).contains(&calls), "{calls}");
    }

    #[test]
    fn a_total_rate_is_spread_over_the_fleet() {
        assert_eq!(Rate::Total(1000.0).per_env(100), 10.0);
    }
}
