//! The store contract on `DynamoDbStore`: simple key, composite key, and renamed
//! attributes. Every case on dynalite; the sequential cases (all but the races) also on
//! moto's DynamoDB, whose conditional writes are not atomic under concurrency.

use std::sync::Arc;

use breaker_runtime::testing::contract::{run_contract, run_sequential_contract};
use devstack::fixtures::local_dynamodb::{DynamoDbServer as _, Emulator};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simple_key_meets_the_contract() {
    let (_dynalite, store) = crate::simple_table_on(Emulator::Dynalite).await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn composite_key_meets_the_contract() {
    let (_dynalite, store) = crate::shared_table_on(Emulator::Dynalite).await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renamed_attributes_meet_the_contract() {
    let (_dynalite, store) = crate::renamed_table_on(Emulator::Dynalite).await;
    run_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simple_key_meets_the_sequential_contract_on_moto() {
    let (_moto, store) = crate::simple_table_on(Emulator::Moto).await;
    run_sequential_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn composite_key_meets_the_sequential_contract_on_moto() {
    let (_moto, store) = crate::shared_table_on(Emulator::Moto).await;
    run_sequential_contract(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renamed_attributes_meet_the_sequential_contract_on_moto() {
    let (_moto, store) = crate::renamed_table_on(Emulator::Moto).await;
    run_sequential_contract(Arc::new(store)).await;
}

on_both!(
    the_seeded_cases_hold,
    flavor = "multi_thread",
    worker_threads = 2
);

/// The cases that start from an item no breaker write leaves (an `OPEN` item carrying a
/// probe count, as a Powertools reopen leaves it), seeded by a raw `PutItem`.
async fn the_seeded_cases_hold(emulator: Emulator) {
    use breaker_runtime::store::CircuitRecord;
    use breaker_runtime::testing::contract::{Seed, run_seeded_contract};

    use crate::item_layout::{Item, n, s};

    fn raw_item(circuit: &str, record: &CircuitRecord) -> Item {
        let mut item: Item = [
            ("id", s(circuit)),
            ("state", s(record.state.as_str())),
            ("failure_count", n(record.failure_count.into())),
            ("expiration", n(1_700_003_630)),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        let optional = [
            ("opened_at", record.opened_at.map(n)),
            ("half_open_owner", record.half_open_owner.as_deref().map(s)),
            ("probe_lease_expiry", record.probe_lease_expiry.map(n)),
            (
                "probe_successes",
                (record.probe_successes > 0).then(|| n(record.probe_successes.into())),
            ),
            (
                "reopen_count",
                (record.reopen_count > 0).then(|| n(record.reopen_count.into())),
            ),
            ("opened_by", record.opened_by.as_deref().map(s)),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                item.insert(name.to_owned(), value);
            }
        }
        item
    }

    let (db, store) = crate::simple_table_on(emulator).await;
    let client = db.client();
    let seed: Seed = Box::new(move |circuit, record| {
        let client = client.clone();
        Box::pin(async move {
            client
                .put_item()
                .table_name("circuits")
                .set_item(Some(raw_item(&circuit, &record)))
                .send()
                .await
                .expect("PutItem");
        })
    });
    run_seeded_contract(Arc::new(store), seed).await;
}
