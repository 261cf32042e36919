//! The discrete-event loop: real `CircuitBreaker`s, one per environment, driven through
//! virtual time.
//!
//! Each environment has its own breaker (its own id, cache and store adapter) and its own
//! `ManualClock`, which reads global virtual time plus the environment's skew. A call is
//! the async path a Lambda handler uses, `call_with` inside the invocation's deadline
//! scope, polled by this loop at the virtual instants something can happen to it: its
//! start, the downstream's answer, its abandonment (call timeout or deadline minus margin)
//! and the function timeout, past which Lambda ends the invocation and the environment
//! starts again cold (a new breaker: new id, empty cache, local counts lost). An
//! environment with a concurrency above 1 (Managed Instances) runs that many invocations
//! at once, each in a slot of its own, all through its one breaker; a function timeout
//! ends only that invocation. The breaker's store requests hop to its store runtime thread
//! and answer at once from the item model, at the virtual time of the poll that made
//! them; their latencies lengthen the call.
//!
//! The approximation (docs/scale.md): the requests of one poll are applied at that poll's
//! instant, in the order polls run. Each conditional write is atomic, so the outcomes are
//! those of a serialization of the requests; the serialization differs from DynamoDB's
//! arrival order by at most one call's store latency.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use breaker_runtime::__protocol::key_item_id;
use breaker_runtime::store::CircuitRecord;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigError, KeyedCircuitBreaker,
};

use crate::downstream::Downstream;
use crate::env_store::{EnvStore, SharedTable, StoreRequest};
use crate::invocation::{CallError, Flight, Polled};
use crate::keyed_metrics::{KeyedMetrics, KeyedSummary};
use crate::keys::{Guarding, KeyDraws, KeySpace};
use crate::metrics::Metrics;
use crate::model::ItemModel;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::traffic::Traffic;

/// The one circuit every environment protects the downstream with (a keyed circuit in a
/// keyed scenario).
pub const CIRCUIT: &str = "downstream";

/// What an environment guards its calls with.
#[derive(Debug)]
enum Guard {
    /// One circuit for every call.
    Plain(CircuitBreaker),
    /// A circuit per key.
    Keyed(KeyedCircuitBreaker),
    /// A plain circuit per key, built on the key's first call, kept.
    PlainPerKey(Box<PlainPerKey>),
}

/// An environment's plain circuits, one per key, and what it builds them with.
#[derive(Debug)]
struct PlainPerKey {
    circuits: HashMap<u32, CircuitBreaker>,
    store: Arc<EnvStore>,
    config: CircuitBreakerConfig,
}

impl Guard {
    /// The circuit a call to the key of `rank` goes through.
    fn breaker(&mut self, rank: Option<u32>) -> CircuitBreaker {
        let key = KeySpace::name(rank.unwrap_or(0));
        match self {
            Self::Plain(breaker) => breaker.clone(),
            Self::Keyed(keyed) => keyed.breaker(&key),
            Self::PlainPerKey(per_key) => {
                let PlainPerKey {
                    circuits,
                    store,
                    config,
                } = &mut **per_key;
                circuits
                    .entry(rank.unwrap_or(0))
                    .or_insert_with(|| {
                        let item = key_item_id(CIRCUIT, &key);
                        CircuitBreaker::new(item, Arc::clone(store) as _, config.clone())
                    })
                    .clone()
            }
        }
    }

    /// The one circuit's believed state; `None` for a circuit per key.
    fn state(&self) -> Option<breaker_runtime::CircuitState> {
        match self {
            Self::Plain(breaker) => Some(breaker.state()),
            Self::Keyed(_) | Self::PlainPerKey(_) => None,
        }
    }
}

/// One execution environment.
#[derive(Debug)]
struct Env {
    guard: Guard,
    clock: ManualClock,
    skew_ms: i64,
    /// Cold starts so far: part of the environment id, which is new at each.
    incarnation: u32,
    /// The invocations in progress, one slot per worker, each with the rank of its key
    /// (keyed scenarios).
    flights: Vec<Option<(Flight, Option<u32>)>>,
    /// Per slot: bumped when its flight ends, so a wake-up scheduled for it is recognised
    /// as stale.
    tokens: Vec<u32>,
}

/// A wake-up of a call in flight: (virtual ms, environment, slot, token).
type Wake = (u64, u32, u32, u32);

/// The slot of a wake-up that frees a worker whose call has returned and whose store
/// requests' latency has passed.
const RELEASE: u32 = u32::MAX;

/// A finished run.
#[derive(Debug)]
pub struct Run {
    /// What was run.
    pub scenario: Scenario,
    /// What was measured.
    pub metrics: Metrics,
    /// A keyed scenario's figures.
    pub keyed: Option<KeyedSummary>,
}

/// Runs `scenario` to its end.
///
/// ```
/// use breaker_sim::scenario::Scenario;
/// let mut light = Scenario::named("light").unwrap().scaled_to(4);
/// light.duration_ms = 60_000;
/// let run = breaker_sim::fleet::run(&light).unwrap();
/// assert!(run.metrics.summary().calls > 0);
/// ```
pub fn run(scenario: &Scenario) -> Result<Run, CircuitBreakerConfigError> {
    let epoch_ms = ManualClock::new().unix_millis();
    let model = ItemModel::new(scenario.model.clone(), scenario.seed)
        .with_faults(scenario.store_faults.clone());
    let table = SharedTable::new(model);
    let mut metrics = Metrics::of(scenario);
    if scenario.initially_open {
        let opened = CircuitRecord::open(epoch_ms / 1000, scenario.breaker.failure_threshold);
        table.model().put(CIRCUIT, opened, 0);
        metrics.opened_before_start(0);
    }
    let mut skews = Rng::new(scenario.seed, 0x5c3e);
    let mut envs = (0..scenario.envs)
        .map(|i| {
            let skew_ms = skews.symmetric(scenario.max_skew_ms);
            new_env(scenario, &table, epoch_ms, i, skew_ms, 0)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut downstream = Downstream::new(
        scenario.downstream_latency_ms,
        scenario.health.clone(),
        scenario.seed,
    )
    .with_capacity(scenario.capacity.clone());
    let mut traffic = Traffic::new(
        scenario.envs,
        scenario.rate,
        scenario.start_spread_ms,
        scenario.seed,
    )
    .with_concurrency(scenario.concurrency);
    let mut wakes: BinaryHeap<Reverse<Wake>> = BinaryHeap::new();
    let mut requests: Vec<StoreRequest> = Vec::with_capacity(16);
    let mut next_second = 0u64;
    let mut keyed = scenario
        .keys
        .as_ref()
        .map(|keys| KeyedMetrics::new(scenario, keys, keys.cap()));
    let mut key_draws = scenario
        .keys
        .as_ref()
        .map(|keys| KeyDraws::new(keys, scenario.envs, scenario.seed));

    loop {
        let next_start = traffic.peek();
        let next_wake = wakes.peek().map(|Reverse((at, ..))| *at);
        // A wake-up carries the slot and token of the flight it was scheduled for; a start
        // none.
        let (now, index, woken) = match (next_start, next_wake) {
            (None, None) => break,
            (Some((start, _)), Some(wake)) if wake < start => pop_wake(&mut wakes),
            (None, Some(_)) => pop_wake(&mut wakes),
            (Some(_), _) => {
                let (start, index) = traffic
                    .next_call()
                    .unwrap_or_else(|| unreachable!("peeked"));
                (start, index, None)
            }
        };
        if now >= scenario.duration_ms {
            break;
        }
        while next_second * 1000 <= now {
            sample(&envs, &mut metrics, next_second);
            next_second += 1;
        }
        let env = &mut envs[index as usize];
        let slot = match woken {
            Some((RELEASE, _)) => {
                traffic.ended(index, now);
                continue;
            }
            // The flight this wake-up was for has ended.
            Some((slot, token)) if token != env.tokens[slot as usize] => continue,
            Some((slot, _)) => slot as usize,
            None => {
                let key = key_draws.as_mut().map(|draws| draws.next(index));
                if let (Some(keys), Some(rank)) = (&scenario.keys, key)
                    && matches!(keys.guarding, Guarding::OnlyKey(only) if only != rank)
                {
                    // Another key's call, outside the measured traffic: it keeps its
                    // worker busy as long as a healthy call does.
                    let until = now + scenario.downstream_latency_ms;
                    free_worker(&mut traffic, &mut wakes, scenario, (index, now, until));
                    continue;
                }
                let follows_schedule = match (&scenario.keys, key) {
                    (Some(keys), Some(rank)) => keys.fails(rank),
                    _ => true,
                };
                let flight = Flight::start(
                    &env.guard.breaker(key),
                    scenario,
                    now,
                    (epoch_ms, env.skew_ms),
                    follows_schedule,
                );
                // The traffic starts a call only when a worker is free.
                let slot = env
                    .flights
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or_else(|| unreachable!("a free worker"));
                env.flights[slot] = Some((flight, key));
                slot
            }
        };
        table.set_now(now);
        env.clock
            .set_unix_millis(epoch_ms.saturating_add_signed(now as i64 + env.skew_ms));
        let (flight, _) = env.flights[slot]
            .as_mut()
            .unwrap_or_else(|| unreachable!("started above"));
        let polled = flight.poll(now, &mut downstream, &table);
        table.drain_into(&mut requests);
        if let Some(keyed) = &mut keyed {
            for request in &requests {
                keyed.on_request(request);
            }
        }
        if let Polled::Waiting { until_ms } = polled {
            for request in &requests {
                metrics.on_request(request);
            }
            wakes.push(Reverse((until_ms, index, slot as u32, env.tokens[slot])));
            continue;
        }
        let (flight, key) = env.flights[slot]
            .take()
            .unwrap_or_else(|| unreachable!("polled"));
        env.tokens[slot] = env.tokens[slot].wrapping_add(1);
        let (ended, result) = match polled {
            Polled::Done(result) => (flight.end_ms(now), result),
            _ => (now, Err(CallError::Killed)),
        };
        let call = flight.call(index, now, ended, result);
        metrics.on_call(&call);
        if let Some(probe) = flight.probe_at_downstream(now) {
            metrics.on_probe_at_downstream(probe);
        }
        on_keyed_call(&mut keyed, key, &call);
        for request in &requests {
            metrics.on_request(request);
        }
        if polled == Polled::Killed && scenario.concurrency <= 1 {
            // Lambda ended the invocation at its function timeout: the process and
            // everything it counted are gone; the next invocation starts cold. (On
            // Managed Instances it ends the one invocation; the environment serves on.)
            metrics.on_cold_start();
            let tokens = std::mem::take(&mut env.tokens);
            let (skew_ms, incarnation) = (env.skew_ms, env.incarnation + 1);
            *env = new_env(scenario, &table, epoch_ms, index, skew_ms, incarnation)?;
            env.tokens = tokens;
        }
        free_worker(&mut traffic, &mut wakes, scenario, (index, now, ended));
    }
    while next_second * 1000 < scenario.duration_ms {
        sample(&envs, &mut metrics, next_second);
        next_second += 1;
    }
    metrics.on_downstream_load(downstream.load_per_second());
    let keyed = keyed.map(|keyed| {
        keyed.summary(table.model().census(), |rank| {
            key_item_id(CIRCUIT, &KeySpace::name(rank))
        })
    });
    Ok(Run {
        scenario: scenario.clone(),
        metrics,
        keyed,
    })
}

fn on_keyed_call(keyed: &mut Option<KeyedMetrics>, key: Option<u32>, call: &crate::metrics::Call) {
    if let (Some(keyed), Some(rank)) = (keyed, key) {
        keyed.on_call(rank, call);
    }
}

/// Environment `index`'s worker, busy at `now`, is free from `until`. A worker of an
/// environment that runs one invocation at a time is the environment, which is busy
/// until then whatever happens; one of many is freed by a wake-up then, so that the
/// environment's other workers go on meanwhile.
fn free_worker(
    traffic: &mut Traffic,
    wakes: &mut BinaryHeap<Reverse<Wake>>,
    scenario: &Scenario,
    (index, now, until): (u32, u64, u64),
) {
    if scenario.concurrency <= 1 || until <= now {
        traffic.ended(index, until);
    } else {
        wakes.push(Reverse((until, index, RELEASE, 0)));
    }
}

fn pop_wake(wakes: &mut BinaryHeap<Reverse<Wake>>) -> (u64, u32, Option<(u32, u32)>) {
    let Reverse((at, env, slot, token)) = wakes.pop().unwrap_or_else(|| unreachable!("peeked"));
    (at, env, Some((slot, token)))
}

/// Builds environment `index`'s breaker, clock and store adapter, at its `incarnation`.
fn new_env(
    scenario: &Scenario,
    table: &Arc<SharedTable>,
    epoch_ms: u64,
    index: u32,
    skew_ms: i64,
    incarnation: u32,
) -> Result<Env, CircuitBreakerConfigError> {
    let b = &scenario.breaker;
    let clock = ManualClock::at_unix_millis(epoch_ms.saturating_add_signed(skew_ms));
    let id = match incarnation {
        0 => format!("env-{index}"),
        n => format!("env-{index}.{n}"),
    };
    let config = b
        .apply(CircuitBreakerConfig::builder())
        .environment_id(id)
        .clock(clock.clone())
        .build()?;
    let store = Arc::new(EnvStore::new(index, Arc::clone(table)));
    let guard = match &scenario.keys {
        Some(keys) if keys.guarding == Guarding::Keyed => {
            let keyed = KeyedCircuitBreaker::new(CIRCUIT, store, config);
            Guard::Keyed(match keys.max_open_keys {
                Some(cap) => keyed.with_max_open_keys(cap)?,
                None => keyed,
            })
        }
        Some(keys) if keys.guarding == Guarding::PlainPerKey => {
            Guard::PlainPerKey(Box::new(PlainPerKey {
                circuits: HashMap::new(),
                store,
                config,
            }))
        }
        _ => Guard::Plain(CircuitBreaker::new(CIRCUIT, store, config)),
    };
    let workers = scenario.concurrency.max(1) as usize;
    Ok(Env {
        guard,
        clock,
        skew_ms,
        incarnation,
        flights: std::iter::repeat_with(|| None).take(workers).collect(),
        tokens: vec![0; workers],
    })
}

/// Environments per believed state, at the start of `second`.
fn sample(envs: &[Env], metrics: &mut Metrics, second: u64) {
    let (mut closed, mut open, mut half_open) = (0, 0, 0);
    for env in envs {
        match env.guard.state() {
            Some(breaker_runtime::CircuitState::Closed) => closed += 1,
            Some(breaker_runtime::CircuitState::Open) => open += 1,
            Some(breaker_runtime::CircuitState::HalfOpen) => half_open += 1,
            None => {}
        }
    }
    metrics.sample(second, closed, open, half_open);
}
