//! `breaker shadow` on dynalite: a breaker environment reads the `SHADOW` override with its
//! regular read, runs every call of a failing downstream and reports what it would have
//! done, and the item stays closed; `breaker release` ends it and failures trip again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use breaker_runtime::ShadowDecision;
use tokio::time::sleep;

use crate::protocol::{CACHE_AGE, SEEN, call, recovering_after, rejected};
use crate::support::{Table, s};

/// Long enough that the trip after the release is still OPEN at the next call: a trip's
/// `opened_at` is whole seconds, so a 1 s recovery may already be due a moment after it.
const RECOVERY: std::time::Duration = std::time::Duration::from_secs(60);

#[tokio::test]
async fn a_shadowed_circuit_runs_every_call_and_reports_what_it_would_have_done() {
    let table = Table::new().await;
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&verdicts);
    let env = Arc::new(
        Arc::into_inner(recovering_after(&table, "env-a", CACHE_AGE, RECOVERY))
            .expect("one owner")
            .with_on_shadow(move |event| seen.lock().unwrap().push(event.decision)),
    );
    let ran = AtomicU32::new(0);
    call(&env, &ran, true).await.expect("closed: the call runs");

    let set = table
        .breaker(&["shadow", "svc", "--create", "--for", "1h", "--by", "ops"])
        .await;
    assert!(
        set.ok().contains("svc: shadowed fleet-wide (new item)"),
        "{set:?}"
    );
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(s(&item, "override").as_deref(), Some("SHADOW"));
    assert_eq!(
        s(&item, "state").as_deref(),
        Some("CLOSED"),
        "Powertools runs too"
    );
    let listed = table.breaker(&["list"]).await;
    assert!(listed.ok().contains("SHADOW"), "{listed:?}");
    assert!(listed.ok().contains("shadowed by ops until"), "{listed:?}");

    // Seen with the regular read, within the cache age: the threshold is 2 failures.
    sleep(SEEN).await;
    for _ in 0..6 {
        let failed = call(&env, &ran, false).await;
        assert!(!rejected(failed), "every call runs under a shadow");
    }
    assert_eq!(ran.load(Ordering::SeqCst), 7);
    let mut expected = vec![ShadowDecision::WouldOpen];
    expected.extend([ShadowDecision::WouldReject; 4]);
    assert_eq!(*verdicts.lock().unwrap(), expected);
    let item = table.raw("svc").await.expect("the item");
    assert_eq!(
        s(&item, "state").as_deref(),
        Some("CLOSED"),
        "no trip written: {item:?}"
    );
    assert!(
        !item.contains_key("half_open_owner"),
        "no election: {item:?}"
    );

    // Released: the breaker acts on its verdicts again.
    let released = table.breaker(&["release", "svc"]).await;
    assert!(
        released.ok().contains("released (shadowed by ops)"),
        "{released:?}"
    );
    sleep(SEEN).await;
    let before = ran.load(Ordering::SeqCst);
    while !rejected(call(&env, &ran, false).await) {
        assert!(
            ran.load(Ordering::SeqCst) - before <= 2,
            "still running calls"
        );
    }
    assert_eq!(
        ran.load(Ordering::SeqCst) - before,
        2,
        "the threshold's failures trip it"
    );
    let tripped = table.raw("svc").await.expect("the item");
    assert_eq!(s(&tripped, "state").as_deref(), Some("OPEN"), "{tripped:?}");
    assert!(!tripped.contains_key("override"));
    assert_eq!(
        verdicts.lock().unwrap().len(),
        5,
        "no verdict once released"
    );
}
