use super::*;

fn forced_open(at: u64) -> Override {
    Override::new(OverrideKind::ForcedOpen, "operator", at)
}

#[test]
fn a_reopen_records_its_count_of_reopens() {
    let reopen = RecordWrite::Reopen {
        owner: "A".into(),
        opened_at: 1_000,
        failure_count: 1,
        reopen_count: 3,
        expiration: 0,
        open_until: None,
    };
    let record = reopen.applied_to(Some(&CircuitRecord::open(900, 5)));
    assert_eq!(
        (record.state, record.opened_at, record.reopen_count),
        (CircuitState::Open, Some(1_000), 3)
    );
    assert_eq!(reopen.to_state(), CircuitState::Open);
}

#[test]
fn releasing_a_forced_open_reopens_only_while_it_held() {
    let mut current = CircuitRecord::open(OPENED_AT_UNTIL_RELEASED, 2);
    current.operator_override = Some(forced_open(100).until(200));
    let release = |now| RecordWrite::Release {
        released: forced_open(100).until(200),
        now,
        expiration: 0,
    };
    let held = release(150).applied_to(Some(&current));
    assert_eq!(
        (held.state, held.opened_at, held.operator_override),
        (CircuitState::Open, Some(150), None)
    );
    // Ended already: the record is left as it is, the override taken off.
    let ended = release(250).applied_to(Some(&current));
    assert_eq!(ended.opened_at, Some(OPENED_AT_UNTIL_RELEASED));
    assert_eq!(ended.operator_override, None);
}

#[test]
fn each_write_names_the_state_it_leads_to() {
    let disabled = Override::new(OverrideKind::Disabled, "operator", 100);
    let cases = [
        (
            RecordWrite::Close {
                owner: "A".into(),
                expiration: 0,
            },
            CircuitState::Closed,
        ),
        (
            RecordWrite::HandOver {
                owner: "A".into(),
                probe_successes: 1,
                lease_expiry: 10,
                expiration: 0,
            },
            CircuitState::HalfOpen,
        ),
        (
            RecordWrite::Override {
                set: forced_open(100),
                replaces: None,
                expiration: None,
            },
            CircuitState::Open,
        ),
        (
            RecordWrite::Release {
                released: disabled,
                now: 100,
                expiration: 0,
            },
            CircuitState::Closed,
        ),
    ];
    for (write, state) in cases {
        assert_eq!(write.to_state(), state, "{write:?}");
    }
}
