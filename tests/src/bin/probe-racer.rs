//! One execution environment racing for every probe of many half-open circuits (the test
//! `dynamodb::probe_admission`): for each round, from its start instant on (or at once, if
//! the previous round ran late), it calls the round's circuit through a `DynamoDbStore` on
//! the default table until it sees the circuit closed. A call that runs while the item names this environment the prober is a
//! probe: it prints `probe ROUND START_US END_US RACER` (unix microseconds) and takes 15 ms.
//!
//! Settings: `CIRCUIT_BREAKER_TABLE` (and the standard AWS environment), `RACER_INDEX`,
//! `RACER_ROUNDS`, `RACER_START_MS` (unix ms of round 0), `RACER_ROUND_MS`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use breaker_runtime::store::StateStore;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig, CircuitState};
use devstack::circuits::BoxError;

/// How long a racer goes on calling one round's circuit that has not closed: past a
/// 10 s lease that nobody probes under.
const GIVE_UP_MS: u64 = 30_000;

fn var(name: &str) -> anyhow::Result<u64> {
    std::env::var(name)
        .with_context(|| format!("{name} is not set"))?
        .parse()
        .with_context(|| format!("{name} is not a number"))
}

fn unix_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let index = var("RACER_INDEX")?;
    let rounds = var("RACER_ROUNDS")?;
    let start_ms = var("RACER_START_MS")?;
    let round_ms = var("RACER_ROUND_MS")?;
    let store = breaker_runtime::default_store();
    // Opens the connection (and loads the client) before the first round, so no election
    // of round 0 times out on the client's start and leaves a lease nobody probes under.
    store.read("warm-up").await?;
    let me = format!("racer-{index}");
    for round in 0..rounds {
        let circuit = format!("race-{round}");
        // Cache age 0: every call reads, so every call may race for a handed-over probe.
        let config = CircuitBreakerConfig::builder()
            .success_threshold(3)
            .recovery_timeout(Duration::from_secs(1))
            .local_cache_max_age(Duration::ZERO)
            .probe_lease(Duration::from_secs(10))
            .fleet_detection(false)
            .environment_id(me.clone())
            .build()?;
        let breaker = CircuitBreaker::new(circuit.clone(), Arc::clone(&store), config);
        // Rounds start together on schedule; one that runs late (a loaded machine, or a
        // lease left by an election whose answer timed out) goes on until it closes.
        let begin = start_ms + round * round_ms;
        let wait = begin.saturating_sub(u64::try_from(unix_micros() / 1000)?);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let give_up = u64::try_from(unix_micros() / 1000)? + GIVE_UP_MS;
        while u64::try_from(unix_micros() / 1000)? < give_up {
            let ran = breaker
                .call(|| probe_or_closed(&*store, &circuit, &me, round))
                .await;
            if ran.is_ok() && breaker.state() == CircuitState::Closed {
                break;
            }
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    Ok(())
}

/// The guarded call: a probe if the item names this environment the prober.
async fn probe_or_closed(
    store: &dyn StateStore,
    circuit: &str,
    me: &str,
    round: u64,
) -> Result<(), BoxError> {
    let record = store.read_consistent(circuit).await?.unwrap_or_default();
    let probing =
        record.state == CircuitState::HalfOpen && record.half_open_owner.as_deref() == Some(me);
    if probing {
        let start = unix_micros();
        tokio::time::sleep(Duration::from_millis(15)).await;
        println!("probe {round} {start} {} {me}", unix_micros());
    }
    Ok(())
}
