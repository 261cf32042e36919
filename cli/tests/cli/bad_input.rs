//! Bad input: a clear message on stderr, a non-zero exit, nothing written, never a panic.

use aws_sdk_dynamodb::types::AttributeValue;

use devstack::wall_clock::unix_secs;

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
    missing.failed(1, "no table 'missing' in region us-east-1 (check --table");
    assert!(
        missing.stderr.contains("ResourceNotFoundException"),
        "{missing:?}"
    );
    assert_eq!(
        missing.stderr.lines().count(),
        1,
        "one line, no response dump: {missing:?}"
    );
    // No region, no credentials: what to set.
    table
        .breaker_with(
            &["list"],
            &[("CIRCUIT_BREAKER_TABLE", TABLE), ("AWS_REGION", "")],
        )
        .await
        .failed(1, "no AWS region: pass --region or set AWS_REGION");
    let anonymous = table
        .breaker_with(
            &["list"],
            &[
                ("CIRCUIT_BREAKER_TABLE", TABLE),
                ("AWS_ACCESS_KEY_ID", ""),
                ("AWS_SECRET_ACCESS_KEY", ""),
                ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"),
                ("AWS_CONFIG_FILE", "/nonexistent"),
            ],
        )
        .await;
    anonymous.failed(
        1,
        "no AWS credentials: set AWS_PROFILE (an SSO profile, after `aws sso login --profile \
         NAME`, or one with a `credential_process`), or AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY",
    );
    assert_eq!(anonymous.stderr.lines().count(), 1, "{anonymous:?}");
    let unreachable = table
        .breaker(&["--endpoint-url", "http://127.0.0.1:1", "list"])
        .await;
    unreachable.failed(1, "Connection refused");
    assert_eq!(unreachable.stderr.lines().count(), 1, "{unreachable:?}");
    table
        .breaker(&["--table", "missing", "open", "x", "--by", "a"])
        .await
        .failed(1, "ResourceNotFoundException");

    // Usage errors exit with 2, refused values with 1; nothing is written.
    let cases: [(&[&str], i32, &str); 9] = [
        (
            &["open", "payments", "--for", "soon"],
            2,
            "examples: 30s, 15m, 2h",
        ),
        (
            &["disable", "payments", "--for", "0s"],
            2,
            "must be at least 1s",
        ),
        (
            &["list", "--pk", "circuit_breaker#orders"],
            2,
            "--sort-key-attr",
        ),
        (
            &["watch", "--once", "--for", "5s"],
            2,
            "cannot be used with",
        ),
        (&["frobnicate"], 2, "unrecognized subcommand"),
        (
            &["open", "payments", "--by", " "],
            1,
            "--by must not be empty",
        ),
        (&["open", " ", "--by", "a"], 1, "must not be empty"),
        (
            &["--state-attr", "override", "list"],
            1,
            "an attribute of operator overrides",
        ),
        (&["show"], 2, "<NAME>"),
    ];
    for (args, code, words) in cases {
        table.breaker(args).await.failed(code, words);
    }
    assert_eq!(table.raw("payments").await, None, "bad input wrote nothing");
}

#[tokio::test]
async fn a_malformed_item_is_shown_and_must_be_closed_before_an_override() {
    let table = Table::new().await;
    table
        .put_raw("broken", &[("state", AttributeValue::S("AJAR".into()))])
        .await;
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
    let now = AttributeValue::N(now.to_string());
    let hand_edited = [
        ("state", AttributeValue::S("OPEN".into())),
        ("opened_at", now.clone()),
        ("override", AttributeValue::S("open".into())),
        ("override_by", AttributeValue::S("ops".into())),
        ("override_at", now),
    ];
    table.put_raw("hand-edited", &hand_edited).await;
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
    table.put_raw("hand-edited", &hand_edited).await;
    table.trip("hand-edited", 5).await;
    let item = table.raw("hand-edited").await.expect("the item");
    assert_eq!(s(&item, "state").as_deref(), Some("OPEN"), "{item:?}");
    assert!(!item.contains_key("override"), "{item:?}");
}

#[tokio::test]
async fn a_mistyped_state_attr_never_lets_close_erase_a_forced_open() {
    let table = Table::new().await;
    table
        .breaker(&["open", "payments", "--create", "--by", "ops"])
        .await
        .ok();
    // `--state-attr stat` names an attribute the item does not have: the item reads as
    // malformed, and a close would overwrite it, override and all.
    table
        .breaker(&["--state-attr", "stat", "close", "payments"])
        .await
        .failed(1, "cannot be read with --state-attr stat");
    let item = table.raw("payments").await.expect("the item");
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"), "{item:?}");
}

#[tokio::test]
async fn a_long_reason_is_refused_and_table_text_is_printed_without_terminal_escapes() {
    let table = Table::new().await;
    let pasted = "x".repeat(257);
    table
        .breaker(&[
            "open", "payments", "--create", "--by", "ops", "--reason", &pasted,
        ])
        .await
        .failed(2, "at most 256 are recorded");
    assert_eq!(table.raw("payments").await, None, "nothing written");

    let escape = "ops\u{1b}[2J\u{1b}[31m";
    table
        .breaker(&[
            "open",
            "payments",
            "--create",
            "--by",
            escape,
            "--reason",
            "INC-1\u{1b}[0m",
        ])
        .await
        .ok();
    for command in [&["list"][..], &["show", "payments"]] {
        let run = table.breaker(command).await;
        let shown = run.ok();
        assert!(
            !shown.contains('\u{1b}'),
            "{command:?} printed an escape: {shown:?}"
        );
        assert!(shown.contains(r"ops\u{1b}[2J"), "{command:?}: {shown}");
    }
}
