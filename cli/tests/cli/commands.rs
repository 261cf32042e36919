//! Each subcommand's output, exit status and the item it leaves.

use breaker_runtime::store::{RecordWrite, StateStore as _, WriteOutcome};
use breaker_runtime::unstable::OPENED_AT_UNTIL_RELEASED;
use devstack::wall_clock::unix_secs;

use crate::support::{Table, USER, n, s};

#[tokio::test]
async fn list_shows_every_circuit_as_a_table_and_as_json() {
    let table = Table::new().await;
    let empty = table.breaker(&["list"]).await;
    assert!(
        empty.ok().contains("no circuits in table 'circuits'"),
        "{empty:?}"
    );

    table.trip("payments", 5).await;
    table.half_open("ledger", "env-7").await;
    let listed = table.breaker(&["list"]).await;
    let text = listed.ok();
    for expected in [
        "CIRCUIT",
        "payments",
        "OPEN",
        "ledger",
        "HALF_OPEN",
        "env-7 (lease",
        "ago",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from\n{text}");
    }
    // Sorted by name: ledger before payments.
    assert!(text.find("ledger") < text.find("payments"), "{text}");

    let json = table.breaker(&["list", "--json"]).await.json();
    let circuits = json.as_array().expect("an array");
    assert_eq!(circuits.len(), 2);
    assert_eq!(circuits[0]["name"], "ledger");
    assert_eq!(circuits[0]["state"], "HALF_OPEN");
    assert_eq!(circuits[0]["half_open_owner"], "env-7");
    assert_eq!(circuits[1]["name"], "payments");
    assert_eq!(circuits[1]["failure_count"], 5);
    assert_eq!(circuits[1]["override"], serde_json::Value::Null);
    assert!(circuits[1]["expiration"].as_u64().expect("a TTL") > unix_secs());
}

#[tokio::test]
async fn show_prints_one_circuit_in_full() {
    let table = Table::new().await;
    let opened = table.trip("payments", 3).await;
    let text = table.breaker(&["show", "payments"]).await.ok().to_owned();
    assert!(text.contains("circuit      payments"), "{text}");
    assert!(text.contains("state        OPEN"), "{text}");
    assert!(text.contains("failures     3"), "{text}");
    let json = table.breaker(&["show", "payments", "--json"]).await.json();
    assert_eq!(json["opened_at"], opened);
    assert_eq!(json["effective_state"], "OPEN");
}

#[tokio::test]
async fn open_for_a_while_forces_open_and_records_who_when_why() {
    let table = Table::new().await;
    table.half_open("payments", "env-1").await;
    let before = unix_secs();
    let run = table
        .breaker(&[
            "open",
            "payments",
            "--for",
            "30m",
            "--reason",
            "INC-42 provider down",
            "--by",
            "alice",
        ])
        .await;
    let after = unix_secs();
    let text = run.ok();
    assert!(text.contains("payments: forced open fleet-wide"), "{text}");
    assert!(text.contains("state        FORCED OPEN"), "{text}");
    assert!(text.contains("forced open by alice until"), "{text}");

    let item = table.raw("payments").await.expect("the item");
    let until = n(&item, "override_until").expect("an end");
    assert!(
        (before + 1_800..=after + 1_800).contains(&until),
        "{item:?}"
    );
    // Powertools' view: OPEN since the override's end, nobody probing.
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"));
    assert_eq!(n(&item, "opened_at"), Some(until));
    assert_eq!(n(&item, "failure_count"), Some(5));
    assert!(!item.contains_key("half_open_owner") && !item.contains_key("probe_lease_expiry"));
    // Who, when, why; and the item outlives the override.
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"));
    assert_eq!(s(&item, "override_by").as_deref(), Some("alice"));
    assert_eq!(
        s(&item, "override_reason").as_deref(),
        Some("INC-42 provider down")
    );
    assert!((before..=after).contains(&n(&item, "override_at").expect("a time")));
    // Past the end: the default recovery bound (24 h) and the breaker's TTL grace (1 h).
    assert_eq!(n(&item, "expiration"), Some(until + 86_400 + 3_600));
}

#[tokio::test]
async fn a_timed_override_keeps_its_item_past_its_end_for_the_recovery_and_the_grace() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    for (command, recovery, recovery_secs) in [("open", "2h", 7_200), ("disable", "3h", 10_800)] {
        let args = [command, "payments", "--for", "10m", "--recovery", recovery];
        table
            .breaker(&[&args[..], &["--by", "a"]].concat())
            .await
            .ok();
        let item = table.raw("payments").await.expect("the item");
        let until = n(&item, "override_until").expect("an end");
        assert_eq!(
            n(&item, "expiration"),
            Some(until + recovery_secs + 3_600),
            "{command}: {item:?}"
        );
    }

    // A recovery timeout only matters for an override that ends.
    table
        .breaker(&["open", "payments", "--recovery", "2h", "--by", "a"])
        .await
        .failed(2, "--for");
}

#[tokio::test]
async fn open_or_disable_of_a_circuit_without_an_item_is_refused_unless_asked() {
    let table = Table::new().await;
    for command in ["open", "disable"] {
        let run = table.breaker(&[command, "paymnets", "--by", "a"]).await;
        run.failed(1, "no circuit 'paymnets' in table 'circuits'");
        run.failed(1, "a circuit that never failed has no item");
        run.failed(1, "--create");
        assert_eq!(table.raw("paymnets").await, None, "{command} wrote nothing");
    }
    let created = table
        .breaker(&["open", "paymnets", "--create", "--by", "a"])
        .await;
    assert!(created.ok().contains("(new item)"), "{created:?}");
    assert!(table.raw("paymnets").await.is_some());
}

#[tokio::test]
async fn an_override_until_released_creates_the_item_and_removes_its_ttl() {
    let table = Table::new().await;
    // Without --by: the caller's identity, here the local user (STS is unreachable).
    let run = table
        .breaker(&["open", "fresh", "--create", "--json"])
        .await;
    let json = run.json();
    assert_eq!(json["override"]["by"], USER);
    assert_eq!(json["override"]["until"], serde_json::Value::Null);
    assert_eq!(json["override"]["active"], true);
    let item = table.raw("fresh").await.expect("open creates the item");
    assert_eq!(n(&item, "opened_at"), Some(OPENED_AT_UNTIL_RELEASED));
    assert!(
        !item.contains_key("expiration"),
        "no TTL until released: {item:?}"
    );

    table.trip("expiring", 2).await;
    table
        .breaker(&["disable", "expiring", "--by", "bob"])
        .await
        .ok();
    let item = table.raw("expiring").await.expect("the item");
    assert!(
        !item.contains_key("expiration"),
        "the trip's TTL is removed: {item:?}"
    );
}

#[tokio::test]
async fn disable_closes_and_release_restores_normal_operation() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    let text = table
        .breaker(&["disable", "payments", "--for", "10m", "--by", "bob"])
        .await
        .ok()
        .to_owned();
    assert!(text.contains("payments: disabled fleet-wide"), "{text}");
    assert!(text.contains("state        DISABLED"), "{text}");
    let item = table.raw("payments").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"));
    assert_eq!(n(&item, "failure_count"), Some(0));
    assert!(!item.contains_key("opened_at"));

    // Replacing one override by another names the one replaced.
    let text = table
        .breaker(&["open", "payments", "--by", "carol"])
        .await
        .ok()
        .to_owned();
    assert!(text.contains("(replaces: disabled by bob)"), "{text}");

    let before = unix_secs();
    let text = table
        .breaker(&["release", "payments"])
        .await
        .ok()
        .to_owned();
    assert!(
        text.contains("payments: released (forced open by carol)"),
        "{text}"
    );
    let item = table.raw("payments").await.expect("the item");
    assert!(
        !item.contains_key("override") && !item.contains_key("override_by"),
        "{item:?}"
    );
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"));
    assert!(
        n(&item, "opened_at").expect("opened") >= before,
        "recovery starts now"
    );
    assert!(
        n(&item, "expiration").is_some(),
        "a released item expires again"
    );

    table
        .breaker(&["release", "payments"])
        .await
        .failed(1, "circuit 'payments' has no override to release");
}

#[tokio::test]
async fn close_resets_like_a_successful_probe_and_is_refused_under_an_override() {
    let table = Table::new().await;
    table.half_open("payments", "env-1").await;
    let text = table.breaker(&["close", "payments"]).await.ok().to_owned();
    assert!(text.contains("payments: closed"), "{text}");
    let item = table.raw("payments").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"));
    assert!(!item.contains_key("half_open_owner") && !item.contains_key("opened_at"));

    table
        .breaker(&["open", "payments", "--by", "alice"])
        .await
        .ok();
    table
        .breaker(&["close", "payments"])
        .await
        .failed(1, "release it first: breaker release payments");
    assert_eq!(
        s(&table.raw("payments").await.expect("item"), "override").as_deref(),
        Some("OPEN"),
        "a refused close changes nothing"
    );
}

#[tokio::test]
async fn releasing_a_forced_open_that_ended_leaves_the_probe_that_followed() {
    let table = Table::new().await;
    table
        .breaker(&[
            "open", "payments", "--create", "--for", "1s", "--by", "carol",
        ])
        .await
        .ok();
    let until = n(
        &table.raw("payments").await.expect("the item"),
        "override_until",
    )
    .expect("an end");
    while unix_secs() < until + 1 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // After the end, an environment elects itself on the override's opening.
    let now = unix_secs();
    let elect = RecordWrite::Elect {
        owner: "env-7".into(),
        expected_opened_at: Some(until),
        expected_successes: 0,
        now,
        lease_expiry: now + 60,
        expiration: now + 3_630,
    };
    assert_eq!(
        table.store.apply("payments", &elect).await,
        Ok(WriteOutcome::Won)
    );

    let released = table.breaker(&["release", "payments"]).await;
    assert!(
        released
            .ok()
            .contains("it had already ended, so the circuit's state is unchanged"),
        "{released:?}"
    );
    let item = table.raw("payments").await.expect("the item");
    assert!(!item.contains_key("override"), "{item:?}");
    assert_eq!(s(&item, "state").as_deref(), Some("HALF_OPEN"), "{item:?}");
    assert_eq!(s(&item, "half_open_owner").as_deref(), Some("env-7"));
}
