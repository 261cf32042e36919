//! Orders buffered during an outage are replayed within seconds of the payment API's
//! return, with the template's jitter (120 s): `overflow-replay`, which did not open the
//! circuit and calls it seconds apart, is a quiet environment, so it probes at the recovery
//! timeout instead of waiting up to the jitter, and its successes count for the fleet.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use devstack::harness::function_process::LogEcho;
use devstack::harness::sample_stack::{QueueSettings, SampleStack};
use serde_json::json;

use crate::support::{dead_letters, overflow_depth};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_orders_are_replayed_within_seconds_of_the_apis_return() {
    let stack = SampleStack::start_with(QueueSettings {
        max_receive_count: 50,
        visibility_timeout: Duration::from_secs(2),
    })
    .await
    .unwrap();
    let tunables = [
        ("CIRCUIT_FAILURE_THRESHOLD", "3".to_owned()),
        ("CIRCUIT_RECOVERY_TIMEOUT_SECS", "3".to_owned()),
        ("CIRCUIT_RECOVERY_JITTER_SECS", "120".to_owned()),
    ];
    let charge = stack
        .start_function("charge", LogEcho::Quiet, &tunables)
        .await
        .unwrap();
    let replay = Arc::new(
        stack
            .start_function("overflow-replay", LogEcho::Quiet, &tunables)
            .await
            .unwrap(),
    );
    // Room for every record of a batch within the replay's per-record budget.
    replay.set_timeout(Duration::from_secs(60));
    let poller = stack.poll(Arc::clone(&replay));

    let outage = Instant::now();
    stack.payments.set_down(true);
    const ORDERS: usize = 20;
    for n in 0..ORDERS {
        let order =
            json!({"order_id": format!("back-{n:03}"), "amount": 10 + n, "currency": "EUR"});
        let response = charge.invoke(order).await.unwrap().expect_response();
        assert_eq!(response["statusCode"], 202, "{response}");
    }
    tokio::time::sleep(Duration::from_secs(20).saturating_sub(outage.elapsed())).await;
    assert_eq!(stack.payments.charged(), BTreeSet::new());
    // `charge` gets no more traffic: only the replay calls the circuit from here.
    stack.payments.set_down(false);
    let back = Instant::now();
    let mut first_charge = None;
    while overflow_depth(&stack).await > 0 {
        if first_charge.is_none() && !stack.payments.charged().is_empty() {
            first_charge = Some(back.elapsed());
        }
        assert!(
            back.elapsed() < Duration::from_secs(90),
            "not drained 90 s after the API's return: {} left",
            overflow_depth(&stack).await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let drained = back.elapsed();
    let first_charge = first_charge.unwrap_or(drained);
    poller.stop().await.unwrap();
    let expected: BTreeSet<String> = (0..ORDERS).map(|n| format!("back-{n:03}")).collect();
    assert_eq!(stack.payments.charged(), expected);
    assert_eq!(stack.payments.charged_twice(), BTreeSet::new());
    assert_eq!(dead_letters(&stack).await, 0);
    // The replay probes within one recovery window of the return (the windows lengthen
    // with each failed probe of the outage) or two 5 s cache ages and a second: well
    // within a minute, where a busy environment would wait its jitter, up to 120 s.
    println!("first charge {first_charge:?}, drained {drained:?} after the API's return");
    assert!(
        first_charge <= Duration::from_secs(60),
        "first charge {first_charge:?} after the API's return"
    );
    assert!(
        drained <= Duration::from_secs(75),
        "drained {drained:?} after the API's return"
    );
}
