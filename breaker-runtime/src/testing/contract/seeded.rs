//! The cases that start from a record no breaker write leaves, as a Powertools environment's
//! writes leave it: the store's test puts it as the item directly (a [`Seed`]).

use super::support::*;
use crate::protocol::{CircuitRecord, WriteOutcome};
use crate::store::StateStore;

/// An `OPEN` record carrying `probe_successes`, as a Powertools reopen (an unconditional
/// `UpdateItem` that keeps the attributes it does not name) leaves it after a breaker
/// environment handed a probe over: an election from it starts the count at 0, and an
/// election that expects the count (a takeover's) loses, so no taker closes early.
pub(super) async fn an_election_from_an_open_record_carrying_a_count_starts_at_zero(
    store: &dyn StateStore,
    circuit: &str,
    seed: &Seed,
) {
    let reopened = CircuitRecord {
        probe_successes: 2,
        ..open_record(T0, 0)
    };
    seed(circuit.to_owned(), reopened.clone()).await;
    assert_eq!(read(store, circuit).await, Some(reopened.clone()), "seeded");

    // A takeover's election expects the count it read.
    let counting = takeover("env-a", 2, T0 + 30);
    assert_eq!(
        lost(apply(store, circuit, &counting).await),
        Some(reopened),
        "only a takeover reads a count"
    );
    let fresh = election("env-a", Some(T0), T0 + 30);
    assert_eq!(apply(store, circuit, &fresh).await, WriteOutcome::Won);
    let elected = read(store, circuit).await.expect("elected");
    assert_eq!(
        elected.probe_successes, 0,
        "the opening's count starts at 0"
    );
}

/// Puts `record` as `circuit`'s item, as the store's own backend can (a raw write).
pub type Seed = Box<
    dyn Fn(String, CircuitRecord) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync,
>;
