use super::*;
use crate::model::ModelConfig;
use breaker_runtime::__protocol::key_item_id;
use breaker_runtime::store::WriteOutcome;

const NOW_S: u64 = 1_700_000_000;

fn model() -> ItemModel {
    ItemModel::new(ModelConfig::default(), 3)
}

fn add(key: &str, token: u64, cap: u32) -> KeyIndexWrite {
    KeyIndexWrite::Add {
        key: key.into(),
        token,
        cap: Some(cap),
    }
}

fn trip() -> RecordWrite {
    RecordWrite::Trip {
        failure_count: 5,
        opened_at: NOW_S,
        expiration: NOW_S + 3_630,
        opened_by: None,
        open_until: None,
    }
}

fn close_of(owner: &str) -> [RecordWrite; 2] {
    [
        RecordWrite::Elect {
            owner: owner.into(),
            expected_opened_at: Some(NOW_S),
            expected_successes: 0,
            now: NOW_S + 30,
            lease_expiry: NOW_S + 60,
            expiration: NOW_S + 3_660,
        },
        RecordWrite::Close {
            owner: owner.into(),
            expiration: NOW_S + 3_660,
        },
    ]
}

use breaker_runtime::store::RecordWrite;

#[test]
fn adds_are_capped_and_conditional_and_removes_need_the_token() {
    let mut m = model();
    let won = |s: Served<KeyIndexOutcome>| s.result.unwrap();
    assert_eq!(
        won(m.apply_index("c", &add("a", 11, 2), 0)),
        KeyIndexOutcome::Won
    );
    assert_eq!(
        won(m.apply_index("c", &add("a", 12, 2), 0)),
        KeyIndexOutcome::Exists(Some(11))
    );
    assert_eq!(
        won(m.apply_index("c", &add("b", 21, 2), 0)),
        KeyIndexOutcome::Won
    );
    assert_eq!(
        won(m.apply_index("c", &add("x", 31, 2), 0)),
        KeyIndexOutcome::CapReached(2)
    );
    let refresh = KeyIndexWrite::Refresh {
        key: "x".into(),
        token: 32,
    };
    assert!(matches!(
        won(m.apply_index("c", &refresh, 0)),
        KeyIndexOutcome::Lost(Some(_))
    ));
    let stale = KeyIndexWrite::Remove {
        key: "a".into(),
        token: 10,
    };
    assert!(matches!(
        won(m.apply_index("c", &stale, 0)),
        KeyIndexOutcome::Lost(Some(_))
    ));
    let remove = KeyIndexWrite::Remove {
        key: "a".into(),
        token: 11,
    };
    assert_eq!(won(m.apply_index("c", &remove, 0)), KeyIndexOutcome::Won);
    let index = &m.current_index("c").expect("written").index;
    assert_eq!(index.open_keys, 1);
    assert_eq!(index.entries.keys().collect::<Vec<_>>(), ["b"]);
    // Without a cap (an operator's override) the count may pass it.
    let forced = KeyIndexWrite::Add {
        key: "y".into(),
        token: 41,
        cap: None,
    };
    assert_eq!(won(m.apply_index("c", &forced, 0)), KeyIndexOutcome::Won);
    assert_eq!(
        won(m.apply_index("c", &add("z", 51, 2), 0)),
        KeyIndexOutcome::CapReached(2)
    );
    assert_eq!(m.census().max_index_open_keys, 2);
}

#[test]
fn an_index_costs_units_by_its_size_and_is_throttled_as_one_item() {
    let mut m = model();
    let token = 1_700_000_000_000_123;
    for rank in 0..1_000 {
        let key = format!("tenant-{rank:04}");
        let served = m.apply_index("c", &add(&key, token, 1_000), rank * 100);
        assert_eq!(served.outcome, RequestOutcome::Won);
    }
    let bytes = m.current_index("c").unwrap().size_bytes("c#keys");
    // 1,000 entries of 11-byte keys: "k:" + key + a 16-digit token (9) = 22 bytes each.
    assert!((22_000..22_100).contains(&bytes), "{bytes}");
    assert_eq!(m.census().max_index_bytes, bytes);
    let read = m.read_index("c", 200_000, Consistency::Eventual);
    assert_eq!(
        read.cost.read_half_units, 6,
        "22 KB: 6 started 4 KB, half a unit each"
    );
    assert_eq!(read.result.unwrap().unwrap().entries.len(), 1_000);
    let strong = m.read_index("c", 200_000, Consistency::Strong);
    assert_eq!(strong.cost.read_half_units, 12);
    // A write of a 22 KB item costs 22 or 23 WCU: 43 of them fill a second's 1,000.
    let refresh = |token| KeyIndexWrite::Refresh {
        key: "tenant-0000".into(),
        token,
    };
    let mut landed = 0;
    for i in 0..60 {
        let served = m.apply_index("c", &refresh(token + i), 300_000);
        assert!((22..=23).contains(&served.cost.write_units) || served.cost.write_units == 0);
        landed += u32::from(served.outcome == RequestOutcome::Won);
    }
    assert!((43..=45).contains(&landed), "{landed}");
    // An absent index costs half a unit to find absent.
    assert_eq!(
        m.read_index("other", 0, Consistency::Eventual)
            .cost
            .read_half_units,
        1
    );
}

#[test]
fn the_census_counts_open_key_items_and_flags_one_the_index_does_not_name() {
    let mut m = model();
    let (a, b) = (key_item_id("c", "a"), key_item_id("c", "b"));
    assert_eq!(
        m.apply_index("c", &add("a", 7, 10), 0).result.unwrap(),
        KeyIndexOutcome::Won
    );
    assert_eq!(m.apply(&a, &trip(), 0).result, Ok(WriteOutcome::Won));
    assert_eq!(
        (m.census().open_key_items, m.census().unindexed_open_keys),
        (1, 0)
    );
    // b trips without an entry: the invariant is broken, and the census says so.
    m.apply(&b, &trip(), 0);
    assert_eq!(
        (m.census().open_key_items, m.census().unindexed_open_keys),
        (2, 1)
    );
    // Removing a's entry while a is open breaks it too.
    let remove = KeyIndexWrite::Remove {
        key: "a".into(),
        token: 7,
    };
    m.apply_index("c", &remove, 0);
    assert_eq!(m.census().unindexed_open_keys, 2);
    for write in close_of("env-1") {
        assert_eq!(m.apply(&a, &write, 0).result, Ok(WriteOutcome::Won));
    }
    assert_eq!(
        (m.census().open_key_items, m.census().max_open_key_items),
        (1, 2)
    );
    // A plain circuit's item is no key item.
    m.apply("plain", &trip(), 0);
    assert_eq!(m.census().open_key_items, 1);
}
