//! The item model is a store like any other: it passes the public store contract suite
//! (through an environment's adapter, as the breakers use it), and it agrees with
//! `InMemoryStore`, the reference, on random sequences of transitions.

use std::sync::Arc;

use breaker_runtime::store::{InMemoryStore, RecordWrite, StateStore, WriteOutcome};
use breaker_runtime::testing::contract::run_contract;
use breaker_sim::env_store::{EnvStore, SharedTable};
use breaker_sim::model::{ItemModel, ModelConfig};
use breaker_sim::rng::Rng;

/// The contract reads right after each write, and its virtual time does not move: reads
/// must not lag.
fn no_lag() -> ModelConfig {
    ModelConfig {
        max_lag_ms: 0,
        ..ModelConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_passes_the_store_contract() {
    let table = SharedTable::new(ItemModel::new(no_lag(), 1));
    run_contract(Arc::new(EnvStore::new(0, table))).await;
}

fn random_transition(rng: &mut Rng) -> RecordWrite {
    let owner = format!("env-{}", rng.between(0, 2));
    let at = 1_000 + rng.between(0, 6);
    match rng.between(0, 4) {
        0 => RecordWrite::Trip {
            opened_by: None,
            failure_count: rng.between(1, 5) as u32,
            opened_at: at,
            expiration: at + 3630,
            open_until: None,
        },
        1 => RecordWrite::Elect {
            owner,
            expected_opened_at: rng.chance(0.8).then(|| 1_000 + rng.between(0, 6)),
            expected_successes: rng.between(0, 2) as u32,
            now: at,
            lease_expiry: at + rng.between(0, 3),
            expiration: at + 3630,
        },
        2 => RecordWrite::Close {
            owner,
            expiration: at + 3630,
        },
        3 => RecordWrite::HandOver {
            owner,
            probe_successes: rng.between(1, 2) as u32,
            lease_expiry: at - 1,
            expiration: at + 3630,
        },
        _ => RecordWrite::Reopen {
            owner,
            opened_at: at,
            failure_count: 1,
            reopen_count: 1,
            expiration: at + 3630,
            open_until: None,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_agrees_with_the_in_memory_store_on_random_transitions() {
    let reference = InMemoryStore::new();
    let table = SharedTable::new(ItemModel::new(no_lag(), 2));
    let model = EnvStore::new(0, table);
    let mut rng = Rng::new(42, 0);
    let mut won = std::collections::HashSet::new();
    for sequence in 0..200 {
        let circuit = format!("c-{sequence}");
        for step in 0..30 {
            let transition = random_transition(&mut rng);
            let expected = reference.apply(&circuit, &transition).await.unwrap();
            let got = model.apply(&circuit, &transition).await.unwrap();
            assert_eq!(
                got, expected,
                "sequence {sequence} step {step}: {transition:?}"
            );
            if got == WriteOutcome::Won {
                won.insert(std::mem::discriminant(&transition));
            }
            assert_eq!(
                model.read(&circuit).await.unwrap(),
                reference.read(&circuit).await.unwrap()
            );
        }
    }
    assert_eq!(won.len(), 5, "every kind of transition won somewhere");
}
