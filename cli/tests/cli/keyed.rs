//! Keyed circuits: every per-circuit command acts on one key's item with `--key`; `list`
//! shows a keyed circuit as one row with its open-key count and its keys' items under it;
//! `show NAME --keys` lists the open keys; an index item is no circuit to act on.

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use breaker_runtime::__protocol::{key_index_id, key_item_id};
use breaker_runtime::store::StateStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::unstable::OperatorWrites as _;
use devstack::circuits::keyed::{environment, succeed, trip};
use devstack::wall_clock::unix_secs;

use crate::support::{Table, n, s};

/// A key holding every character the encoding escapes.
const ODD_KEY: &str = "shop#17 %~";

/// Writes `circuit`'s index naming `keys` as a breaker's adds would (docs/dynamodb.md): no
/// TTL.
async fn index(table: &Table, circuit: &str, keys: &[&str]) {
    let now_ms = unix_secs() * 1000;
    let names: Vec<String> = keys
        .iter()
        .map(|key| {
            let id = key_item_id(circuit, key);
            format!("k:{}", &id[circuit.len() + "#key=".len()..])
        })
        .collect();
    let mut attributes = vec![
        ("key_index", AttributeValue::N("1".into())),
        ("open_keys", AttributeValue::N(keys.len().to_string())),
    ];
    for name in &names {
        attributes.push((name.as_str(), AttributeValue::N(format!("{}123", now_ms))));
    }
    table.put_raw(&key_index_id(circuit), &attributes).await;
}

#[tokio::test]
async fn per_circuit_commands_act_on_one_keys_item() {
    let table = Table::new().await;
    let id = key_item_id("webhooks", ODD_KEY);
    assert_eq!(id, "webhooks#key=shop%2317 %25%7E");

    table
        .breaker(&["open", "webhooks", "--key", ODD_KEY, "--by", "alice"])
        .await
        .failed(1, "no item for key 'shop#17 %~' of circuit 'webhooks'");
    assert!(table.raw(&id).await.is_none(), "refused: nothing written");

    let opened = table
        .breaker(&[
            "open", "webhooks", "--key", ODD_KEY, "--create", "--by", "alice",
        ])
        .await;
    let text = opened.ok();
    assert!(
        text.contains("webhooks[shop#17 %~]: forced open fleet-wide"),
        "{text}"
    );
    assert!(text.contains("key          shop#17 %~"), "{text}");
    let item = table.raw(&id).await.expect("the key's item");
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"));
    assert!(
        table.raw("webhooks").await.is_none(),
        "the circuit's name has no item"
    );

    let shown = table
        .breaker(&["show", "webhooks", "--key", ODD_KEY, "--json"])
        .await
        .json();
    assert_eq!(shown["name"], "webhooks");
    assert_eq!(shown["key"], ODD_KEY);
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["effective_state"], "FORCED OPEN");

    table
        .breaker(&["close", "webhooks", "--key", ODD_KEY])
        .await
        .failed(
            1,
            "release it first: breaker release webhooks --key 'shop#17 %~'",
        );
    let released = table
        .breaker(&["release", "webhooks", "--key", ODD_KEY])
        .await;
    assert!(
        released.ok().contains("webhooks[shop#17 %~]: released"),
        "{released:?}"
    );
    let closed = table
        .breaker(&["close", "webhooks", "--key", ODD_KEY])
        .await;
    assert!(
        closed.ok().contains("webhooks[shop#17 %~]: closed"),
        "{closed:?}"
    );
    let item = table.raw(&id).await.expect("the key's item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"));
    assert!(!item.contains_key("override"), "{item:?}");

    // A key's item id names the same key.
    let by_id = table.breaker(&["show", &id]).await;
    assert!(by_id.ok().contains("key          shop#17 %~"), "{by_id:?}");
    // Another key of the same circuit has an item of its own, or none.
    table
        .breaker(&["show", "webhooks", "--key", "shop-18"])
        .await
        .failed(1, "no item for key 'shop-18' of circuit 'webhooks'");
}

#[tokio::test]
async fn list_shows_a_keyed_circuit_with_its_open_key_count_and_its_keys_under_it() {
    let table = Table::new().await;
    table.trip("payments", 5).await;
    table.trip(&key_item_id("webhooks", "shop-17"), 5).await;
    table
        .half_open(&key_item_id("webhooks", ODD_KEY), "env-3")
        .await;
    index(&table, "webhooks", &["shop-17", ODD_KEY]).await;
    table.trip("zebra", 5).await;

    let text = table.breaker(&["list"]).await.ok().to_owned();
    assert!(text.contains("KEYED: 2 open keys"), "{text}");
    for row in [
        "webhooks[shop-17]",
        "webhooks[shop#17 %~]",
        "payments",
        "zebra",
    ] {
        assert!(text.contains(row), "{row:?} missing from\n{text}");
    }
    assert!(
        !text.contains("#key") && !text.contains("warning"),
        "{text}"
    );
    // The keyed circuit's row, then its keys, in the order of circuit names.
    let at = |row: &str| text.find(row).unwrap_or_else(|| panic!("{row}: {text}"));
    assert!(at("payments") < at("KEYED"), "{text}");
    assert!(at("KEYED") < at("webhooks[shop#17"), "{text}");
    assert!(at("webhooks[shop-17]") < at("zebra"), "{text}");

    let json = table.breaker(&["list", "--json"]).await.json();
    let rows = json.as_array().expect("an array");
    let names: Vec<(&str, Option<&str>)> = rows
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["key"].as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("payments", None),
            ("webhooks", None),
            ("webhooks", Some(ODD_KEY)),
            ("webhooks", Some("shop-17")),
            ("zebra", None),
        ]
    );
    assert_eq!(rows[1]["keyed"], true);
    assert_eq!(rows[1]["open_keys"], 2);
    assert_eq!(rows[1]["keys"], serde_json::json!([ODD_KEY, "shop-17"]));
    assert_eq!(rows[2]["state"], "HALF_OPEN");
    assert_eq!(rows[3]["id"], "webhooks#key=shop-17");
}

#[tokio::test]
async fn show_keys_lists_the_open_keys_with_their_states() {
    let table = Table::new().await;
    table.trip(&key_item_id("webhooks", "shop-17"), 4).await;
    // Named but without an item: the fleet reads it as closed, and a reader drops it.
    index(&table, "webhooks", &["shop-17", "gone"]).await;

    let text = table
        .breaker(&["show", "webhooks", "--keys"])
        .await
        .ok()
        .to_owned();
    assert!(text.contains("state        KEYED: 2 open keys"), "{text}");
    assert!(text.contains("shop-17") && text.contains("OPEN"), "{text}");
    assert!(
        text.contains("gone") && text.contains("CLOSED (no item)"),
        "{text}"
    );

    let json = table
        .breaker(&["show", "webhooks", "--keys", "--json"])
        .await
        .json();
    assert_eq!(json["open_keys"], 2);
    let keys = json["keys"].as_array().expect("keys");
    assert_eq!(keys[0]["key"], "gone");
    assert_eq!(keys[0]["item"], serde_json::Value::Null);
    assert_eq!(keys[1]["key"], "shop-17");
    assert_eq!(keys[1]["item"]["failure_count"], 4);

    let none = table.breaker(&["show", "ledger", "--keys"]).await;
    assert!(none.ok().contains("no key index for 'ledger'"), "{none:?}");
    table
        .breaker(&["show", "webhooks", "--keys", "--key", "x"])
        .await
        .failed(2, "cannot be used with");
}

#[tokio::test]
async fn watch_a_keyed_circuit_shows_its_open_keys() {
    let table = Table::new().await;
    table.trip(&key_item_id("webhooks", "shop-17"), 5).await;
    index(&table, "webhooks", &["shop-17"]).await;
    let text = table
        .breaker(&["watch", "webhooks", "--once"])
        .await
        .ok()
        .to_owned();
    assert!(text.contains("KEYED: 1 open key "), "{text}");
    assert!(
        text.contains("webhooks[shop-17]") && text.contains("OPEN"),
        "{text}"
    );
    let one = table
        .breaker(&["watch", "webhooks", "--key", "shop-17", "--once"])
        .await
        .ok()
        .to_owned();
    assert!(
        one.contains("webhooks[shop-17]") && !one.contains("KEYED"),
        "{one}"
    );
}

#[tokio::test]
async fn commands_given_an_index_items_id_refuse_it_and_write_nothing() {
    let table = Table::new().await;
    index(&table, "webhooks", &["shop-17"]).await;
    let id = key_index_id("webhooks");
    let before = table.raw(&id).await;
    for args in [
        vec!["show", id.as_str()],
        vec!["open", id.as_str(), "--for", "5m", "--create"],
        vec!["disable", id.as_str()],
        vec!["shadow", id.as_str()],
        vec!["close", id.as_str()],
        vec!["release", id.as_str()],
        vec!["watch", id.as_str(), "--once"],
    ] {
        table.breaker(&args).await.failed(
            1,
            "holds the key index of keyed circuit 'webhooks', not a circuit",
        );
    }
    let after = table.raw(&id).await.expect("the index");
    assert_eq!(Some(&after), before.as_ref(), "the index is untouched");
    assert_eq!(n(&after, "open_keys"), Some(1));
}

#[tokio::test]
async fn an_override_of_a_key_names_it_in_the_index_past_the_cap_and_a_close_keeps_it() {
    let table = Table::new().await;
    // An index at a cap of 2, full: a breaker's add of a third key would be refused.
    index(&table, "webhooks", &["shop-1", "shop-2"]).await;
    let index_id = key_index_id("webhooks");
    let entry = format!(
        "k:{}",
        &key_item_id("webhooks", ODD_KEY)["webhooks#key=".len()..]
    );

    let opened = table
        .breaker(&[
            "open", "webhooks", "--key", ODD_KEY, "--create", "--by", "alice",
        ])
        .await;
    opened.ok();
    let after_open = table.raw(&index_id).await.expect("the index");
    let token = n(&after_open, &entry).expect("the key is named");
    assert_eq!(
        n(&after_open, "open_keys"),
        Some(3),
        "an operator is not capped"
    );
    assert_eq!(
        n(&after_open, "expiration"),
        None,
        "the index has no TTL: its deletion would unname the key"
    );

    // Another override of the key refreshes its entry: a new token, the same count.
    table
        .breaker(&["disable", "webhooks", "--key", ODD_KEY, "--by", "bob"])
        .await
        .ok();
    let after_disable = table.raw(&index_id).await.expect("the index");
    assert_ne!(n(&after_disable, &entry), Some(token), "refreshed");
    assert_eq!(n(&after_disable, "open_keys"), Some(3));

    // Release and close leave the entry to a reader, who drops it once the key reads closed.
    table
        .breaker(&["release", "webhooks", "--key", ODD_KEY])
        .await
        .ok();
    table
        .breaker(&["close", "webhooks", "--key", ODD_KEY])
        .await
        .ok();
    let after_close = table.raw(&index_id).await.expect("the index");
    assert!(after_close.contains_key(&entry), "{after_close:?}");

    // A plain circuit's override writes no index.
    table.trip("payments", 5).await;
    table
        .breaker(&["open", "payments", "--by", "alice"])
        .await
        .ok();
    assert!(table.raw(&key_index_id("payments")).await.is_none());
}

#[tokio::test]
async fn the_cli_reads_what_keyed_breakers_write_and_a_keys_override_reaches_them() {
    let table = Table::new().await;
    let store: Arc<dyn StateStore> = table.store.clone();
    let clock = ManualClock::new();
    let first = environment("env-1", Arc::clone(&store), &clock, 10);
    trip(&first, "shop-17").await;

    let json = table.breaker(&["list", "--json"]).await.json();
    let rows = json.as_array().expect("an array");
    assert_eq!(rows.len(), 2, "{json:#}");
    assert_eq!(
        (rows[0]["name"].as_str(), rows[0]["keyed"].as_bool()),
        (Some("webhooks"), Some(true))
    );
    assert_eq!(rows[0]["open_keys"], 1);
    assert_eq!(rows[0]["keys"], serde_json::json!(["shop-17"]));
    assert_eq!(
        (rows[1]["key"].as_str(), rows[1]["state"].as_str()),
        (Some("shop-17"), Some("OPEN"))
    );

    // An operator forces a healthy key open: an environment that never saw it rejects it.
    table
        .breaker(&[
            "open", "webhooks", "--key", "shop-18", "--create", "--by", "alice",
        ])
        .await
        .ok();
    let second = environment("env-2", Arc::clone(&store), &clock, 10);
    assert!(
        !succeed(&second, "shop-18").await,
        "the override reaches the fleet"
    );
    assert!(
        !succeed(&second, "shop-17").await,
        "the tripped key is open there too"
    );
    assert!(succeed(&second, "shop-19").await, "other keys run");
}

#[tokio::test]
async fn whole_circuit_commands_on_a_keyed_circuit_are_refused_and_point_at_key() {
    let table = Table::new().await;
    index(&table, "webhooks", &["shop-17"]).await;
    // A plain item of the name, left from before the circuit was keyed: no key reads it.
    table.trip("webhooks", 5).await;
    let (index_before, item_before) = (
        table.raw(&key_index_id("webhooks")).await,
        table.raw("webhooks").await,
    );
    for args in [
        vec!["open", "webhooks", "--create", "--by", "alice"],
        vec!["open", "webhooks", "--for", "5m"],
        vec!["disable", "webhooks", "--create"],
        vec!["shadow", "webhooks", "--create", "--for", "5m"],
        vec!["close", "webhooks"],
        vec!["release", "webhooks"],
    ] {
        let run = table.breaker(&args).await;
        run.failed(1, "'webhooks' is a keyed circuit");
        for words in [
            "nothing was written",
            "--key KEY",
            "breaker show webhooks --keys",
        ] {
            assert!(run.stderr.contains(words), "{words:?}: {run:?}");
        }
    }
    assert_eq!(
        table.raw("webhooks").await,
        item_before,
        "the item is untouched"
    );
    assert_eq!(
        table.raw(&key_index_id("webhooks")).await,
        index_before,
        "the index is untouched"
    );
    // A key's own commands still work, and so do a plain circuit's.
    table
        .breaker(&[
            "open", "webhooks", "--key", "shop-17", "--create", "--by", "alice",
        ])
        .await
        .ok();
    table.trip("payments", 5).await;
    table
        .breaker(&["open", "payments", "--by", "alice"])
        .await
        .ok();
}

/// A key longer than its id can hold: its id has a prefix and a hash, not the key.
fn long_key() -> String {
    format!("https://hooks.example.com/{}", "x".repeat(80))
}

#[tokio::test]
async fn a_hashed_key_is_shown_by_its_item_id_which_commands_take_back() {
    let table = Table::new().await;
    let long = long_key();
    let id = key_item_id("webhooks", &long);
    assert!(id.contains('~'), "hashed: {id}");
    table.trip(&id, 5).await;
    index(&table, "webhooks", &[&long]).await;

    let text = table.breaker(&["list"]).await.ok().to_owned();
    assert!(text.contains(&id), "{id} missing from\n{text}");
    assert!(
        !text.contains('…'),
        "no display form that names nothing: {text}"
    );
    let keys = table
        .breaker(&["show", "webhooks", "--keys"])
        .await
        .ok()
        .to_owned();
    assert!(keys.contains(&id) && !keys.contains('…'), "{keys}");

    // What the listing gives names the key's item again: list -> command.
    let json = table.breaker(&["list", "--json"]).await.json();
    let rows = json.as_array().expect("an array");
    assert_eq!(rows[0]["ids"], serde_json::json!([id]));
    assert_eq!(
        rows[0]["keys"],
        serde_json::json!([null]),
        "the key is not known"
    );
    assert_eq!(rows[1]["id"], id.as_str());
    assert_eq!(rows[1]["key"], serde_json::Value::Null);
    let listed = rows[1]["id"].as_str().expect("an id").to_owned();
    let opened = table
        .breaker(&["open", &listed, "--for", "5m", "--by", "alice"])
        .await;
    assert!(opened.ok().contains(&id), "{opened:?}");
    let item = table.raw(&id).await.expect("the key's item");
    assert_eq!(s(&item, "override").as_deref(), Some("OPEN"));

    let shown = table
        .breaker(&["show", "webhooks", "--keys", "--json"])
        .await
        .json();
    let listed = shown["keys"][0]["id"].as_str().expect("an id").to_owned();
    assert_eq!(listed, id);
    assert_eq!(shown["keys"][0]["key"], serde_json::Value::Null);
    // A refusal names the command that works: the id, not the display form.
    let refused = table.breaker(&["close", &listed]).await;
    refused.failed(1, &format!("release it first: breaker release '{id}'"));
    table.breaker(&["release", &listed]).await.ok();
    table.breaker(&["close", &listed]).await.ok();
    let item = table.raw(&id).await.expect("the key's item");
    assert_eq!(s(&item, "state").as_deref(), Some("CLOSED"));
}

#[tokio::test]
async fn show_keys_reports_malformed_entries_and_a_count_that_disagrees() {
    let table = Table::new().await;
    table.trip(&key_item_id("webhooks", "shop-17"), 5).await;
    let now_ms = unix_secs() * 1000;
    table
        .put_raw(
            &key_index_id("webhooks"),
            &[
                ("key_index", AttributeValue::N("1".into())),
                ("open_keys", AttributeValue::N("5".into())),
                ("k:shop-17", AttributeValue::N(format!("{now_ms}123"))),
                ("k:shop-18", AttributeValue::S("soon".into())),
                ("k:a#b", AttributeValue::N(format!("{now_ms}123"))),
                ("suspected_keys", AttributeValue::N("1".into())),
                ("s:tenant%239", AttributeValue::N(format!("{now_ms}456"))),
            ],
        )
        .await;

    let text = table
        .breaker(&["show", "webhooks", "--keys"])
        .await
        .ok()
        .to_owned();
    assert!(text.contains("shop-17") && text.contains("OPEN"), "{text}");
    for words in [
        "'k:shop-18' is not a number (N)",
        "'k:a#b'",
        "the breaker cannot read this index",
        "open_keys is 5 but the index has 3 entries",
        "breaker reconcile webhooks",
    ] {
        assert!(text.contains(words), "{words:?} missing from\n{text}");
    }
    let json = table
        .breaker(&["show", "webhooks", "--keys", "--json"])
        .await
        .json();
    assert_eq!(json["open_keys"], 5);
    assert_eq!(json["entries"], 3);
    assert_eq!(json["suspected_keys"], 1);
    assert_eq!(json["suspected"][0]["key"], "tenant#9", "{json:#}");
    assert!(
        text.contains("suspected    1 (named apart from the cap"),
        "{text}"
    );
    let malformed = json["malformed"].as_array().expect("malformed entries");
    let attributes: Vec<_> = malformed.iter().map(|m| m["attribute"].as_str()).collect();
    assert_eq!(attributes, [Some("k:a#b"), Some("k:shop-18")], "{json:#}");
    // `list` says so too, under its table.
    let listed = table.breaker(&["list"]).await.ok().to_owned();
    assert!(
        listed.contains("warning: webhooks: open_keys is 5 but the index has 3 entries"),
        "{listed}"
    );
}

#[tokio::test]
async fn reconcile_sets_open_keys_to_the_entries_counted_if_unchanged() {
    let table = Table::new().await;
    let id = key_index_id("webhooks");
    // An entry deleted by hand: the count keeps a slot nobody holds.
    index(&table, "webhooks", &["shop-17", "shop-18"]).await;
    let mut item = table.raw(&id).await.expect("the index");
    item.remove("k:shop-18");
    // And a TTL an older version set: a write to the index takes it off.
    item.insert(
        "expiration".into(),
        AttributeValue::N((unix_secs() + 3_600).to_string()),
    );
    let attributes: Vec<(&str, AttributeValue)> = item
        .iter()
        .filter(|(name, _)| name.as_str() != "id")
        .map(|(name, value)| (name.as_str(), value.clone()))
        .collect();
    table.put_raw(&id, &attributes).await;

    // A count that changed since it was read is left alone.
    let stale = table.store.reconcile_key_index("webhooks", 7, 1).await;
    assert_eq!(stale, Ok(false));
    assert_eq!(
        n(&table.raw(&id).await.expect("the index"), "open_keys"),
        Some(2)
    );

    let run = table.breaker(&["reconcile", "webhooks"]).await;
    assert!(run.ok().contains("open_keys 2 -> 1"), "{run:?}");
    let after = table.raw(&id).await.expect("the index");
    assert_eq!(n(&after, "open_keys"), Some(1));
    assert!(after.contains_key("k:shop-17"));
    assert_eq!(n(&after, "expiration"), None, "{after:?}");
    // Agreeing already: nothing to do, nothing written.
    let again = table.breaker(&["reconcile", "webhooks"]).await;
    assert!(again.ok().contains("nothing to do"), "{again:?}");
    table
        .breaker(&["reconcile", "ledger"])
        .await
        .failed(1, "no key index for 'ledger'");
}

#[tokio::test]
async fn the_index_shows_no_ttl_and_one_left_by_an_older_version_is_a_warning() {
    let table = Table::new().await;
    table.trip(&key_item_id("webhooks", "shop-17"), 5).await;
    index(&table, "webhooks", &["shop-17"]).await;
    let text = table
        .breaker(&["show", "webhooks", "--keys"])
        .await
        .ok()
        .to_owned();
    assert!(!text.contains("ttl") && !text.contains("warning"), "{text}");
    let json = table
        .breaker(&["show", "webhooks", "--keys", "--json"])
        .await
        .json();
    assert!(json.get("expiration").is_none(), "{json:#}");
    let listed = table.breaker(&["list", "--json"]).await.json();
    assert!(listed[0].get("expiration").is_none(), "{listed:#}");

    // An index an older version wrote, with a TTL: DynamoDB would delete it, unnaming keys.
    let id = key_index_id("webhooks");
    let mut item = table.raw(&id).await.expect("the index");
    item.insert(
        "expiration".into(),
        AttributeValue::N((unix_secs() + 3_600).to_string()),
    );
    let attributes: Vec<(&str, AttributeValue)> = (item.iter())
        .filter(|(name, _)| name.as_str() != "id")
        .map(|(name, value)| (name.as_str(), value.clone()))
        .collect();
    table.put_raw(&id, &attributes).await;
    let text = table
        .breaker(&["show", "webhooks", "--keys"])
        .await
        .ok()
        .to_owned();
    assert!(
        text.contains("warning: the index has a TTL") && text.contains("next write"),
        "{text}"
    );
    let listed = table.breaker(&["list"]).await.ok().to_owned();
    assert!(
        listed.contains("warning: webhooks: the index has a TTL"),
        "{listed}"
    );
}
