//! Every write the store sends, evaluated as DynamoDB evaluates it (the model's reading,
//! `breaker_model::dynamodb::as_sent`) on items far beyond those the models reach, agrees
//! with the protocol's own reading (`RecordWrite::allowed` and `applied_to`, which the
//! in-memory store and the machine use): a condition or update string that drifts from
//! the protocol fails here, reached by a model or not.

use breaker_model::dynamodb;
use breaker_model::item::Item;
use breaker_runtime::__protocol::{item_as_stored, record_as_read};
use breaker_runtime::CircuitState;
use breaker_runtime::store::{CircuitRecord, Override, OverrideKind, RecordWrite};
use proptest::prelude::*;

fn time() -> impl Strategy<Value = u64> {
    prop::sample::select(vec![5u64, 10, 15, 20])
}

fn owner() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["A".to_owned(), "B".to_owned()])
}

fn an_override() -> impl Strategy<Value = Override> {
    let kind = prop::sample::select(vec![
        OverrideKind::ForcedOpen,
        OverrideKind::Disabled,
        OverrideKind::Shadow,
    ]);
    (
        kind,
        prop::option::of(time()),
        owner(),
        time(),
        prop::option::of(Just("why")),
    )
        .prop_map(|(kind, until, by, at, reason)| {
            let mut o = Override::new(kind, by, at);
            if let Some(until) = until {
                o = o.until(until);
            }
            if let Some(reason) = reason {
                o = o.reason(reason);
            }
            o
        })
}

/// A record both readers decode: `OPEN` has `opened_at`, `HALF_OPEN` an owner and lease.
fn record() -> impl Strategy<Value = CircuitRecord> {
    let state = prop::sample::select(vec![
        CircuitState::Closed,
        CircuitState::Open,
        CircuitState::HalfOpen,
    ]);
    (
        state,
        0u32..7,
        prop::option::of(time()),
        prop::option::of(owner()),
        prop::option::of(time()),
        0u32..3,
        0u32..2,
        prop::option::of(an_override()),
        prop::option::of(time()),
        prop::option::of(owner()),
    )
        .prop_map(
            |(state, fc, opened_at, owner, lease, ps, rc, ov, suspected, opened_by)| {
                let mut r = CircuitRecord::closed();
                r.state = state;
                r.failure_count = fc;
                r.opened_at = opened_at;
                r.half_open_owner = owner;
                r.probe_lease_expiry = lease;
                r.probe_successes = ps;
                r.reopen_count = rc;
                r.operator_override = ov;
                r.suspected_until = suspected;
                r.opened_by = opened_by;
                match r.state {
                    CircuitState::Open => {
                        r.opened_at.get_or_insert(10);
                    }
                    CircuitState::HalfOpen => {
                        r.opened_at.get_or_insert(10);
                        r.half_open_owner.get_or_insert_with(|| "A".to_owned());
                        r.probe_lease_expiry.get_or_insert(15);
                    }
                    CircuitState::Closed => {}
                }
                // As the store reads it back (a trip's writer on a closed item is not).
                record_as_read(&item_as_stored(&r, None))
                    .expect("a decodable record")
                    .0
            },
        )
}

fn item() -> impl Strategy<Value = Item> {
    (prop::option::of(record()), prop::option::of(Just(100u64)))
        .prop_map(|(record, ttl)| Item { record, ttl })
}

/// One of every kind of write, each with the variations its request has.
fn write() -> impl Strategy<Value = RecordWrite> {
    prop_oneof![
        (prop::option::of(owner()), 1u32..6, time()).prop_map(|(opened_by, fc, at)| {
            RecordWrite::Trip {
                opened_by,
                failure_count: fc,
                opened_at: at,
                expiration: at + 100,
                open_until: None,
            }
        }),
        (owner(), prop::option::of(time()), 0u32..3, time()).prop_map(
            |(owner, expected, successes, now)| RecordWrite::Elect {
                owner,
                expected_opened_at: expected,
                expected_successes: successes,
                now,
                lease_expiry: now + 4,
                expiration: now + 100,
            }
        ),
        (owner(), 1u32..3, time()).prop_map(|(owner, successes, lease)| RecordWrite::HandOver {
            owner,
            probe_successes: successes,
            lease_expiry: lease,
            expiration: lease + 100,
        }),
        owner().prop_map(|owner| RecordWrite::Close {
            owner,
            expiration: 100,
        }),
        (owner(), time(), 0u32..3).prop_map(|(owner, at, rc)| RecordWrite::Reopen {
            owner,
            opened_at: at,
            failure_count: 1,
            reopen_count: rc,
            expiration: at + 100,
            open_until: None,
        }),
        time().prop_map(|now| RecordWrite::Suspect {
            now,
            until: now + 10,
            expiration: now + 110,
        }),
        time().prop_map(|now| RecordWrite::Reset {
            now,
            expiration: now + 100,
        }),
        (
            an_override(),
            prop::option::of(an_override()),
            prop::option::of(Just(200u64))
        )
            .prop_map(|(set, replaces, expiration)| RecordWrite::Override {
                set,
                replaces,
                expiration,
            }),
        (an_override(), time()).prop_map(|(released, now)| RecordWrite::Release {
            released,
            now,
            expiration: now + 100,
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn the_store_requests_do_what_the_protocol_says(item in item(), write in write()) {
        let current = item.record.as_ref();
        let sent = dynamodb::as_sent(&write, &item);
        prop_assert_eq!(
            sent.is_some(),
            write.allowed(current),
            "the condition of {:?} on {:?}", write, current
        );
        if let Some(after) = sent {
            prop_assert_eq!(
                after.record,
                Some(write.applied_to(current)),
                "what {:?} leaves on {:?}", write, current
            );
            prop_assert_eq!(after.ttl, write.expiration(), "the TTL {:?} leaves", write);
        }
    }
}
