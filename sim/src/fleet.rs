//! The discrete-event loop: real `CircuitBreaker`s, one per environment, driven through
//! virtual time.
//!
//! Each environment has its own breaker (its own id, cache and store adapter) and its own
//! `ManualClock`, which reads global virtual time plus the environment's skew. Calls are
//! taken from [`Traffic`] in order of start time and run one at a time on this thread with
//! `call_blocking_with`, the public API a sync Lambda handler uses: the breaker's store
//! requests hop to its store runtime thread and answer at once from the item model. A call
//! lasts the sum of its store requests' latencies plus the downstream's latency if it was
//! admitted, and keeps its environment busy that long.
//!
//! The approximation (docs/scale.md): a call's store requests are applied at its start, in
//! the order calls start. Each conditional write is atomic, so the outcomes are those of a
//! serialization of the requests; the serialization differs from DynamoDB's arrival order
//! by at most one call's store latency.

use std::sync::Arc;

use breaker_runtime::store::CircuitRecord;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigError, CircuitBreakerOpenError,
    CircuitState,
};

use crate::downstream::Downstream;
use crate::env_store::{EnvStore, SharedTable, StoreRequest};
use crate::metrics::{Call, Metrics};
use crate::model::ItemModel;
use crate::rng::Rng;
use crate::scenario::Scenario;
use crate::traffic::Traffic;

/// The one circuit every environment protects the downstream with.
pub const CIRCUIT: &str = "downstream";

/// What a simulated handler's call returns as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallError {
    /// The breaker rejected the call.
    Open,
    /// The downstream failed it: counts as a failure.
    Downstream,
}

impl From<CircuitBreakerOpenError> for CallError {
    fn from(_: CircuitBreakerOpenError) -> Self {
        Self::Open
    }
}

/// One execution environment.
#[derive(Debug)]
struct Env {
    breaker: CircuitBreaker,
    clock: ManualClock,
    skew_ms: i64,
}

/// A finished run.
#[derive(Debug)]
pub struct Run {
    /// What was run.
    pub scenario: Scenario,
    /// What was measured.
    pub metrics: Metrics,
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
    let mut metrics = Metrics::new(
        &scenario.name,
        scenario.envs,
        scenario.seed,
        scenario.duration_ms,
        scenario.trip_burst_ms(),
        scenario.health.recovered_at(),
    );
    if scenario.initially_open {
        let opened = CircuitRecord::open(epoch_ms / 1000, scenario.breaker.failure_threshold);
        table.model().put(CIRCUIT, opened, 0);
        metrics.opened_before_start(0);
    }
    let envs = environments(scenario, &table, epoch_ms)?;
    let mut downstream = Downstream::new(
        scenario.downstream_latency_ms,
        scenario.health.clone(),
        scenario.seed,
    );
    let mut traffic = Traffic::new(
        scenario.envs,
        scenario.rate,
        scenario.start_spread_ms,
        scenario.seed,
    );
    let mut requests: Vec<StoreRequest> = Vec::with_capacity(16);
    let mut next_second = 0u64;

    while let Some((start, index)) = traffic.next_call() {
        if start >= scenario.duration_ms {
            break;
        }
        while next_second * 1000 <= start {
            sample(&envs, &mut metrics, next_second);
            next_second += 1;
        }
        let env = &envs[index as usize];
        table.set_now(start);
        env.clock
            .set_unix_millis(epoch_ms.saturating_add_signed(start as i64 + env.skew_ms));

        let mut admitted = false;
        let mut probe_start = None;
        let result = env.breaker.call_blocking_with(
            |e: &CallError| *e == CallError::Downstream,
            || {
                admitted = true;
                // Only probes run while an environment does not believe the circuit closed.
                let at = start + table.pending_latency_ms();
                if env.breaker.state() != CircuitState::Closed {
                    probe_start = Some(at);
                }
                downstream.call(at).map_err(|_| CallError::Downstream)
            },
        );
        table.drain_into(&mut requests);
        let store_ms: u64 = requests.iter().map(|r| r.latency_ms).sum();
        let downstream_ms = if admitted { downstream.latency_ms() } else { 0 };
        metrics.on_call(&Call {
            env: index,
            start_ms: start,
            admitted,
            probe: probe_start.map(|at| (at, at + downstream_ms)),
            failed: result == Err(CallError::Downstream),
        });
        for request in &requests {
            metrics.on_request(request);
        }
        traffic.schedule_next(index, start + store_ms + downstream_ms);
    }
    while next_second * 1000 < scenario.duration_ms {
        sample(&envs, &mut metrics, next_second);
        next_second += 1;
    }
    Ok(Run {
        scenario: scenario.clone(),
        metrics,
    })
}

/// Builds every environment's breaker, clock and store adapter.
fn environments(
    scenario: &Scenario,
    table: &Arc<SharedTable>,
    epoch_ms: u64,
) -> Result<Vec<Env>, CircuitBreakerConfigError> {
    let b = &scenario.breaker;
    let mut skews = Rng::new(scenario.seed, 0x5c3e);
    (0..scenario.envs)
        .map(|i| {
            let skew_ms = skews.symmetric(scenario.max_skew_ms);
            let clock = ManualClock::at_unix_millis(epoch_ms.saturating_add_signed(skew_ms));
            let config = CircuitBreakerConfig::builder()
                .environment_id(format!("env-{i}"))
                .clock(clock.clone())
                .failure_threshold(b.failure_threshold)
                .recovery_timeout(b.recovery_timeout)
                .success_threshold(b.success_threshold)
                .local_cache_max_age(b.local_cache_max_age)
                .recovery_jitter(b.recovery_jitter)
                .store_error_backoff(b.store_error_backoff)
                .probe_lease(b.probe_lease)
                .build()?;
            let store = Arc::new(EnvStore::new(i, Arc::clone(table)));
            Ok(Env {
                breaker: CircuitBreaker::new(CIRCUIT, store, config),
                clock,
                skew_ms,
            })
        })
        .collect()
}

/// Environments per believed state, at the start of `second`.
fn sample(envs: &[Env], metrics: &mut Metrics, second: u64) {
    let (mut closed, mut open, mut half_open) = (0, 0, 0);
    for env in envs {
        match env.breaker.state() {
            CircuitState::Closed => closed += 1,
            CircuitState::Open => open += 1,
            CircuitState::HalfOpen => half_open += 1,
        }
    }
    metrics.sample(second, closed, open, half_open);
}
