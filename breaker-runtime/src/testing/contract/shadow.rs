//! The contract's shadow case: an operator's `SHADOW` override closes the circuit like a
//! disable, round-trips through the store, refuses every breaker write while it holds,
//! and its release leaves the state as it is.

use super::support::*;
use crate::protocol::{CircuitRecord, OverrideKind, WriteOutcome};
use crate::store::StateStore;

pub(super) async fn shadow_closes_refuses_breaker_writes_and_releases(
    store: &dyn StateStore,
    circuit: &str,
) {
    apply(store, circuit, &trip_at(T0, 5)).await;
    let shadow = an_override(OverrideKind::Shadow, "erin", Some(T0 + 600));
    assert_eq!(
        apply(store, circuit, &override_with(&shadow, None)).await,
        WriteOutcome::Won
    );
    let expected = CircuitRecord {
        operator_override: Some(shadow.clone()),
        ..CircuitRecord::closed()
    };
    assert_eq!(read(store, circuit).await, Some(expected.clone()));
    // No breaker write wins under it: a shadowed fleet writes no trip, and a stale
    // environment that still believes the opening cannot elect itself.
    for write in [trip_at(T0 + 30, 9), election("env-a", Some(T0), T0 + 40)] {
        assert_eq!(
            lost(apply(store, circuit, &write).await),
            Some(expected.clone())
        );
    }
    assert_eq!(
        apply(store, circuit, &release(&shadow, T0 + 60)).await,
        WriteOutcome::Won
    );
    assert_eq!(read(store, circuit).await, Some(CircuitRecord::closed()));
    assert_eq!(
        apply(store, circuit, &trip_at(T0 + 61, 5)).await,
        WriteOutcome::Won,
        "released, failures trip it again"
    );
}
