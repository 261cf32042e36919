//! The keys of a keyed scenario: their names, how often each is called (Zipf), and which
//! of them have a failing downstream.
//!
//! Keys are ranked 1 to `count`; the key of rank `r` is called with probability
//! proportional to `1 / r^exponent` (exponent 1: the rank-1 key gets about 11 % of 5,000
//! keys' calls, the rank-100 key 0.11 %, the rank-5,000 key 0.002 %). Each environment draws
//! its keys from a stream of its own, so two runs of one seed give every environment the
//! same sequence of keys whatever the breakers do.

use crate::rng::Rng;

/// Which keys' downstream follows the scenario's health schedule; the others are always up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailingKeys {
    /// The key of this rank only.
    Rank(u32),
    /// This share (0 to 1) of the keys, spread evenly over the ranks: with 0.1, every
    /// tenth rank (10, 20, …); with 0.9, every rank but each tenth.
    Share(f64),
    /// None: a healthy fleet.
    None,
}

impl FailingKeys {
    /// Whether the key of `rank` (1-based) fails.
    ///
    /// ```
    /// use breaker_sim::keys::FailingKeys;
    /// assert!(FailingKeys::Rank(100).fails(100));
    /// assert!(!FailingKeys::Rank(100).fails(99));
    /// let tenth = FailingKeys::Share(0.1);
    /// assert_eq!((1..=5_000).filter(|r| tenth.fails(*r)).count(), 500);
    /// let most = FailingKeys::Share(0.9);
    /// assert_eq!((1..=5_000).filter(|r| most.fails(*r)).count(), 4_500);
    /// ```
    pub fn fails(self, rank: u32) -> bool {
        match self {
            Self::Rank(failing) => rank == failing,
            // Rank r fails when the running count of failing keys steps up at r:
            // floor(r × share) > floor((r − 1) × share), an even spread of exactly
            // round-down(count × share) keys.
            Self::Share(share) => {
                let at = |r: u32| (f64::from(r) * share + 1e-9).floor() as u64;
                at(rank) > at(rank - 1)
            }
            Self::None => false,
        }
    }
}

/// How a keyed scenario's fleet guards its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarding {
    /// One `KeyedCircuitBreaker` per environment: a circuit per key.
    Keyed,
    /// One plain circuit per environment for every key's calls: today's answer, for the
    /// reads it costs.
    OneCircuit,
    /// One plain circuit for the calls to the key of this rank; the other keys' calls run
    /// unguarded and are not measured: the same traffic restricted to that key.
    OnlyKey(u32),
    /// A plain `CircuitBreaker` per key on the key's item, kept for the whole run, without
    /// an index or a cap: what a user builds by hand today, and what each key would do on
    /// a circuit of its own.
    PlainPerKey,
}

/// The keyed breaker's default `max_open_keys`.
///
/// ```
/// # use std::sync::Arc;
/// # use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
/// # use breaker_runtime::store::InMemoryStore;
/// let keyed = KeyedCircuitBreaker::new("k", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
/// assert_eq!(keyed.max_open_keys(), breaker_sim::keys::DEFAULT_MAX_OPEN_KEYS);
/// ```
pub const DEFAULT_MAX_OPEN_KEYS: u32 = 1_000;

/// A keyed scenario's keys.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpace {
    /// How many keys (5,000).
    pub count: u32,
    /// The Zipf exponent (1).
    pub exponent: f64,
    /// Which keys' downstream fails (as the scenario's health schedule says).
    pub failing: FailingKeys,
    /// How the environments guard their calls.
    pub guarding: Guarding,
    /// The keyed breaker's `max_open_keys`; `None`: its default.
    pub max_open_keys: Option<u32>,
}

impl KeySpace {
    /// `count` keys, Zipf with `exponent`, `failing` down, one keyed breaker per environment
    /// at its defaults.
    pub fn new(count: u32, exponent: f64, failing: FailingKeys) -> Self {
        Self {
            count,
            exponent,
            failing,
            guarding: Guarding::Keyed,
            max_open_keys: None,
        }
    }

    /// The cap on open keys the keyed breakers are built with.
    pub fn cap(&self) -> u32 {
        self.max_open_keys.unwrap_or(DEFAULT_MAX_OPEN_KEYS)
    }

    /// The same keys scaled by `factor` (a reduced fleet's): the count, and the cap with
    /// it, so a reduced fleet's cap binds where the full one's does.
    ///
    /// ```
    /// use breaker_sim::keys::{FailingKeys, KeySpace};
    /// let small = KeySpace::new(5_000, 1.0, FailingKeys::Share(0.9)).scaled(0.1);
    /// assert_eq!((small.count, small.cap()), (500, 100));
    /// ```
    pub fn scaled(mut self, factor: f64) -> Self {
        let scale = |n: u32| ((f64::from(n) * factor).round() as u32).max(1);
        self.max_open_keys = Some(scale(self.cap()));
        self.count = scale(self.count);
        self
    }

    /// The name of the key of `rank`: `tenant-{rank}`, zero-padded to four digits (11
    /// bytes for 5,000 keys, a typical tenant or host id's length).
    ///
    /// ```
    /// assert_eq!(breaker_sim::keys::KeySpace::name(100), "tenant-0100");
    /// ```
    pub fn name(rank: u32) -> String {
        format!("tenant-{rank:04}")
    }

    /// Whether the key of `rank` fails.
    pub fn fails(&self, rank: u32) -> bool {
        self.failing.fails(rank)
    }

    /// The ranks that fail.
    pub fn failing_ranks(&self) -> Vec<u32> {
        (1..=self.count).filter(|r| self.fails(*r)).collect()
    }
}

/// Draws keys by rank with Zipf's law, by inverting its cumulative distribution.
#[derive(Debug, Clone)]
pub struct Zipf {
    /// `cumulative[i]`: the probability of a rank up to `i + 1`.
    cumulative: Vec<f64>,
}

impl Zipf {
    /// Ranks 1 to `count`, weighted `1 / r^exponent`.
    ///
    /// ```
    /// use breaker_sim::keys::Zipf;
    /// use breaker_sim::rng::Rng;
    /// let zipf = Zipf::new(5_000, 1.0);
    /// // H(5000) ≈ 9.09: the first key takes about 11 % of the calls.
    /// assert!((zipf.probability(1) - 0.11).abs() < 0.001);
    /// let mut rng = Rng::new(1, 0);
    /// let firsts = (0..100_000).filter(|_| zipf.draw(&mut rng) == 1).count();
    /// assert!((10_500..11_500).contains(&firsts), "{firsts}");
    /// ```
    pub fn new(count: u32, exponent: f64) -> Self {
        let weights: Vec<f64> = (1..=count.max(1))
            .map(|r| 1.0 / f64::from(r).powf(exponent))
            .collect();
        let total: f64 = weights.iter().sum();
        let mut running = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                running += w / total;
                running
            })
            .collect();
        Self { cumulative }
    }

    /// The probability of drawing `rank`.
    pub fn probability(&self, rank: u32) -> f64 {
        let i = rank as usize - 1;
        self.cumulative[i] - i.checked_sub(1).map_or(0.0, |j| self.cumulative[j])
    }

    /// A rank, 1-based.
    pub fn draw(&self, rng: &mut Rng) -> u32 {
        let u = rng.unit();
        let i = self.cumulative.partition_point(|c| *c <= u);
        (i.min(self.cumulative.len() - 1) + 1) as u32
    }
}

/// Each environment's stream of keys.
#[derive(Debug)]
pub struct KeyDraws {
    zipf: Zipf,
    streams: Vec<Rng>,
}

impl KeyDraws {
    /// Streams for `envs` environments over `keys`, from `seed`.
    pub fn new(keys: &KeySpace, envs: u32, seed: u64) -> Self {
        Self {
            zipf: Zipf::new(keys.count, keys.exponent),
            streams: (0..envs)
                .map(|env| Rng::new(seed ^ 0x6b65_7973, 0x1_0000_0000 + u64::from(env)))
                .collect(),
        }
    }

    /// The rank of environment `env`'s next call's key.
    pub fn next(&mut self, env: u32) -> u32 {
        self.zipf.draw(&mut self.streams[env as usize])
    }
}
