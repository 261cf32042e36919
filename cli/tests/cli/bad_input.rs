//! Bad input: a clear message on stderr, a non-zero exit, nothing written, never a panic.

use aws_sdk_dynamodb::types::AttributeValue;

use breaker_tests::wall_clock::unix_secs;

use crate::support::{TABLE, Table, s};

#[tokio::test]
async fn unknown_circuits_missing_tables_and_bad_flags_are_clear_errors() {
    let table = Table::new().await;
    for command in [["show", "nope"], ["close", "nope"], ["release", "nope"]] {
        table
            .breaker(&command)
            .await
            .failed(1, "no circuit 'nope' in table 'circuits'");
    }
    table
        .breaker(&["watch", "nope", "--once"])
        .await
        .failed(1, "no circuit 'nope'");

    // No table named anywhere; a table that does not exist.
    table.breaker_with(&["list"], &[]).await.failed(
        1,
        "no circuit table: pass --table NAME or set CIRCUIT_BREAKER_TABLE",
    );
    let missing = table.breaker(&["--table", "missing", "show", "x"]).await;
    missing.failed(1, "table 'missing'");
    assert!(
        missing.stderr.contains("ResourceNotFoundException"),
        "{missing:?}"
    );
    assert_eq!(
        missing.stderr.lines().count(),
        1,
        "one line, no response dump: {missing:?}"
    );
    let unreachable = table
        .breaker(&["--endpoint-url", "http://127.0.0.1:1", "list"])
        .await;
    unreachable.failed(1, "Connection refused");
    assert_eq!(unreachable.stderr.lines().count(), 1, "{unreachable:?}");
    table
        .breaker(&["--table", "missing", "open", "x", "--by", "a"])
        .await
        .failed(1, "ResourceNotFoundException");

    // Usage errors: exit status 2, nothing written.
    table
        .breaker(&["open", "payments", "--for", "soon"])
        .await
        .failed(2, "examples: 30s, 15m, 2h");
    table
        .breaker(&["disable", "payments", "--for", "0s"])
        .await
        .failed(2, "must be at least 1s");
    table
        .breaker(&["list", "--pk", "circuit_breaker#orders"])
        .await
        .failed(2, "--sort-key-attr");
    table
        .breaker(&["watch", "--once", "--for", "5s"])
        .await
        .failed(2, "cannot be used with");
    table
        .breaker(&["frobnicate"])
        .await
        .failed(2, "unrecognized subcommand");
    table
        .breaker(&["open", "payments", "--by", " "])
        .await
        .failed(1, "--by must not be empty");
    table
        .breaker(&["open", " ", "--by", "a"])
        .await
        .failed(1, "must not be empty");
    table
        .breaker(&["--state-attr", "override", "list"])
        .await
        .failed(1, "an attribute of operator overrides");
    assert_eq!(table.raw("payments").await, None, "bad input wrote nothing");
}

#[tokio::test]
async fn a_malformed_item_is_shown_and_must_be_closed_before_an_override() {
    let table = Table::new().await;
    table
        .dynalite
        .client()
        .put_item()
        .table_name(TABLE)
        .item("id", AttributeValue::S("broken".into()))
        .item("state", AttributeValue::S("AJAR".into()))
        .send()
        .await
        .expect("PutItem");
    let listed = table.breaker(&["list"]).await;
    let text = listed.ok();
    assert!(text.contains("MALFORMED (read as CLOSED)"), "{text}");
    assert!(
        text.contains("warning: broken: attribute 'state' is not CLOSED"),
        "{text}"
    );

    table
        .breaker(&["open", "broken", "--by", "ops"])
        .await
        .failed(1, "malformed item");
    table.breaker(&["close", "broken"]).await.ok();
    table.breaker(&["open", "broken", "--by", "ops"]).await.ok();
    let item = table.raw("broken").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"), "{item:?}");
}

#[tokio::test]
async fn a_malformed_override_is_read_as_none_and_a_close_or_a_trip_replaces_it() {
    let table = Table::new().await;
    let now = unix_secs();
    // A hand-written override in lower case, without an end: the fleet reads the item as
    // closed with no override, so its writes must treat it so too.
    let put = || async {
        table
            .dynalite
            .client()
            .put_item()
            .table_name(TABLE)
            .item("id", AttributeValue::S("hand-edited".into()))
            .item("state", AttributeValue::S("OPEN".into()))
            .item("opened_at", AttributeValue::N(now.to_string()))
            .item("override", AttributeValue::S("open".into()))
            .item("override_by", AttributeValue::S("ops".into()))
            .item("override_at", AttributeValue::N(now.to_string()))
            .send()
            .await
            .expect("PutItem");
    };
    put().await;
    let listed = table.breaker(&["list"]).await;
    assert!(
        listed.ok().contains("MALFORMED (read as CLOSED)"),
        "{listed:?}"
    );
    table.breaker(&["close", "hand-edited"]).await.ok();
    let item = table.raw("hand-edited").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"), "{item:?}");
    assert!(!item.contains_key("override"), "{item:?}");

    // A breaker environment's trip repairs it as it repairs any unreadable item.
    put().await;
    table.trip("hand-edited", 5).await;
    let item = table.raw("hand-edited").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"), "{item:?}");
    assert!(!item.contains_key("override"), "{item:?}");
}
