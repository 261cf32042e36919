//! Every transition of the machine, with explicit timestamps (unix millis).

use super::*;

const ME: &str = "env-me";
const OTHER: &str = "env-other";
/// 2023-11-14T22:13:20Z in millis; `T0 / 1000` is the stored second.
const T0: u64 = 1_700_000_000_000;

fn policy() -> Policy {
    Policy {
        failure_threshold: 3,
        success_threshold: 2,
        recovery_millis: 30_000,
        probe_lease_secs: 10,
        recovery_secs: 30,
    }
}

fn open_at(opened_secs: u64) -> CircuitRecord {
    CircuitRecord {
        state: CircuitState::Open,
        failure_count: 3,
        opened_at: Some(opened_secs),
        ..CircuitRecord::default()
    }
}

fn half_open(owner: &str, opened_secs: u64, lease: u64) -> CircuitRecord {
    CircuitRecord {
        state: CircuitState::HalfOpen,
        failure_count: 3,
        opened_at: Some(opened_secs),
        half_open_owner: Some(owner.into()),
        probe_lease_expiry: Some(lease),
    }
}

fn election_at(now: u64, expected_opened_at: Option<u64>) -> Transition {
    Transition::Elect {
        owner: ME.into(),
        expected_opened_at,
        now: now / 1000,
        lease_expiry: now / 1000 + 10,
        expiration: now / 1000 + 30 + 3600,
    }
}

#[test]
fn admission_table() {
    let opened = T0 / 1000;
    let cases: Vec<(&str, CircuitRecord, u64, bool, Admission)> = vec![
        (
            "closed runs",
            CircuitRecord::closed(),
            T0,
            false,
            Admission::Run,
        ),
        (
            "closed runs even with a probe flag",
            CircuitRecord::closed(),
            T0,
            true,
            Admission::Run,
        ),
        (
            "open before recovery rejects",
            open_at(opened),
            T0 + 29_999,
            false,
            Admission::Reject,
        ),
        (
            "open at recovery elects",
            open_at(opened),
            T0 + 30_000,
            false,
            Admission::Elect(election_at(T0 + 30_000, Some(opened))),
        ),
        (
            "open at recovery with a local probe rejects",
            open_at(opened),
            T0 + 30_000,
            true,
            Admission::Reject,
        ),
        (
            "half-open owned by me probes",
            half_open(ME, opened, opened + 40),
            T0 + 35_000,
            false,
            Admission::Probe,
        ),
        (
            "half-open owned by me, probe running, rejects",
            half_open(ME, opened, opened + 40),
            T0 + 35_000,
            true,
            Admission::Reject,
        ),
        (
            "half-open owned by another rejects",
            half_open(OTHER, opened, opened + 40),
            T0 + 35_000,
            false,
            Admission::Reject,
        ),
        (
            "half-open lease still live in its last second rejects",
            half_open(OTHER, opened, opened + 40),
            T0 + 40_999,
            false,
            Admission::Reject,
        ),
        (
            "half-open with an expired lease elects (takeover)",
            half_open(OTHER, opened, opened + 40),
            T0 + 41_000,
            false,
            Admission::Elect(election_at(T0 + 41_000, Some(opened))),
        ),
        (
            "my own expired lease re-elects",
            half_open(ME, opened, opened + 40),
            T0 + 41_000,
            false,
            Admission::Elect(election_at(T0 + 41_000, Some(opened))),
        ),
    ];
    for (name, record, now, in_flight, expected) in cases {
        assert_eq!(
            admit(&record, ME, now, &policy(), in_flight),
            expected,
            "{name}"
        );
    }
}

#[test]
fn jitter_delays_recovery() {
    let mut jittered = policy();
    jittered.recovery_millis = 30_000 + 2_500;
    let record = open_at(T0 / 1000);
    assert_eq!(
        admit(&record, ME, T0 + 32_499, &jittered, false),
        Admission::Reject
    );
    assert!(matches!(
        admit(&record, ME, T0 + 32_500, &jittered, false),
        Admission::Elect(_)
    ));
}

#[test]
fn closed_failures_trip_at_the_threshold() {
    assert!(!trips(1, &policy()));
    assert!(!trips(2, &policy()));
    assert!(trips(3, &policy()));
    assert!(trips(7, &policy()));
    assert_eq!(
        trip(3, T0 + 1_500, &policy()),
        Transition::Trip {
            failure_count: 3,
            opened_at: T0 / 1000 + 1,
            expiration: T0 / 1000 + 1 + 30 + 3600
        }
    );
    assert!(matches!(
        trip(7, T0, &policy()),
        Transition::Trip {
            failure_count: 7,
            ..
        }
    ));
}

#[test]
fn probe_outcomes() {
    let now = T0 + 31_000;
    let exp = now / 1000 + 30 + 3600;
    assert_eq!(
        on_probe_outcome(Outcome::Success, 1, ME, now, &policy()),
        None
    );
    assert_eq!(
        on_probe_outcome(Outcome::Success, 2, ME, now, &policy()),
        Some(Transition::Close {
            owner: ME.into(),
            expiration: exp
        })
    );
    assert_eq!(
        on_probe_outcome(Outcome::Failure, 1, ME, now, &policy()),
        Some(Transition::Reopen {
            owner: ME.into(),
            opened_at: now / 1000,
            failure_count: 1,
            expiration: exp
        })
    );
    assert_eq!(
        on_probe_outcome(Outcome::Ignored, 1, ME, now, &policy()),
        None
    );
}

/// `settle` on a reply, from `base`, at `T0 + 30 s`.
fn settled(base: &CircuitRecord, transition: &Transition, reply: Option<WriteOutcome>) -> Settled {
    settle(base, transition, reply, ME, T0 + 30_000, &policy())
}

#[test]
fn records_after_won_writes() {
    let opened = T0 / 1000;
    let won = Some(WriteOutcome::Won);
    let trip = Transition::Trip {
        failure_count: 3,
        opened_at: opened,
        expiration: 1,
    };
    let after = settled(&CircuitRecord::closed(), &trip, won.clone());
    assert_eq!(after.record, open_at(opened));
    assert!(after.committed && after.won && !after.standalone);

    let election = election_at(T0 + 30_000, Some(opened));
    assert_eq!(
        settled(&open_at(opened), &election, won.clone()).record,
        half_open(ME, opened, opened + 40)
    );

    let close = Transition::Close {
        owner: ME.into(),
        expiration: 1,
    };
    assert_eq!(
        settled(&half_open(ME, opened, opened + 40), &close, won.clone()).record,
        CircuitRecord::closed()
    );

    let reopen = Transition::Reopen {
        owner: ME.into(),
        opened_at: opened + 31,
        failure_count: 1,
        expiration: 1,
    };
    let reopened = settled(&half_open(ME, opened, opened + 40), &reopen, won).record;
    assert_eq!(reopened.state, CircuitState::Open);
    assert_eq!(reopened.opened_at, Some(opened + 31));
    assert_eq!(reopened.half_open_owner, None);
    assert_eq!(reopened.probe_lease_expiry, None);
}

#[test]
fn lost_writes_adopt_the_stored_record() {
    let opened = T0 / 1000;
    let trip = Transition::Trip {
        failure_count: 3,
        opened_at: opened + 5,
        expiration: 1,
    };
    let theirs = open_at(opened);
    let after = settled(
        &CircuitRecord::closed(),
        &trip,
        Some(WriteOutcome::Lost(Some(theirs.clone()))),
    );
    assert_eq!(
        after.record, theirs,
        "a lost trip keeps the winner's opened_at"
    );
    assert!(!after.committed && !after.won);
    let close = Transition::Close {
        owner: ME.into(),
        expiration: 1,
    };
    assert_eq!(
        settled(&open_at(opened), &close, Some(WriteOutcome::Lost(None))).record,
        CircuitRecord::closed(),
        "no record at all reads as closed"
    );
    let other_probe = half_open(OTHER, opened, opened + 40);
    let election = election_at(T0 + 30_000, Some(opened));
    let after = settled(
        &open_at(opened),
        &election,
        Some(WriteOutcome::Lost(Some(other_probe.clone()))),
    );
    assert_eq!(after.record, other_probe);
    assert!(!after.committed);
}

#[test]
fn an_election_lost_to_its_own_earlier_write_is_committed() {
    let opened = T0 / 1000;
    let election = election_at(T0 + 30_000, Some(opened));
    let mine = half_open(ME, opened, opened + 40);
    let after = settled(
        &open_at(opened),
        &election,
        Some(WriteOutcome::Lost(Some(mine.clone()))),
    );
    assert_eq!(after.record, mine);
    assert!(after.committed && !after.won && !after.standalone);
}

#[test]
fn a_write_the_store_did_not_answer_is_applied_locally() {
    let opened = T0 / 1000;
    let trip = Transition::Trip {
        failure_count: 3,
        opened_at: opened,
        expiration: 1,
    };
    let after = settled(&CircuitRecord::closed(), &trip, None);
    assert_eq!(after.record, open_at(opened));
    assert!(after.committed && !after.won && after.standalone);
}
