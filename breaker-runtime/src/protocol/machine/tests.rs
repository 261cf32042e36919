//! Every transition of the machine, with explicit timestamps (unix millis).

use super::*;
use crate::protocol::record::OverrideKind;
use crate::protocol::state::CircuitState;
use crate::protocol::write::WriteOutcome;

const ME: &str = "env-me";
const OTHER: &str = "env-other";
/// 2023-11-14T22:13:20Z in millis; `T0 / 1000` is the stored second.
const T0: u64 = 1_700_000_000_000;

pub(super) fn thresholds() -> Thresholds {
    Thresholds {
        failure_threshold: 3,
        success_threshold: 2,
        recovery_millis: 30_000,
        fallback_millis: 15_000,
        probe_lease_secs: 10,
        probe_secs: 5,
        recovery_secs: 30,
        refused_elections_millis: 90_000,
        backoff: RecoveryBackoff::none(),
        max_open_for_secs: 300,
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
        probe_successes: 0,
        reopen_count: 0,
        operator_override: None,
        suspected_until: None,
        opened_by: None,
        open_until: None,
    }
}

fn election_at(now: u64, expected_opened_at: Option<u64>) -> RecordWrite {
    RecordWrite::Elect {
        owner: ME.into(),
        expected_opened_at,
        expected_successes: 0,
        now: now / 1000,
        lease_expiry: now / 1000 + 10,
        expiration: now / 1000 + 30 + 3600,
    }
}

/// What this environment knows: the opening it committed, if any, and a probe in flight.
fn local(committed_opening: Option<u64>, probe_in_flight: bool) -> Local {
    Local {
        probe_in_flight,
        committed_opening,
        ..Local::default()
    }
}

#[test]
fn admission_table() {
    let opened = T0 / 1000;
    let mine = Some(opened);
    let elect_at = |now| Admission::Elect(election_at(now, Some(opened)));
    #[rustfmt::skip]
    let cases: Vec<(&str, CircuitRecord, u64, Local, Admission)> = vec![
        ("closed runs", CircuitRecord::closed(), T0, local(None, false), Admission::Run),
        ("closed runs even with a probe flag", CircuitRecord::closed(), T0, local(None, true), Admission::Run),
        ("open before recovery rejects, even with the first right", open_at(opened), T0 + 29_999, local(mine, false), Admission::Reject),
        ("open at recovery: the environment that opened it elects", open_at(opened), T0 + 30_000, local(mine, false), elect_at(T0 + 30_000)),
        ("open at recovery: any other environment waits the fallback", open_at(opened), T0 + 44_999, local(None, false), Admission::Reject),
        ("open after recovery and fallback: verify before electing", open_at(opened), T0 + 45_000, local(None, false), Admission::Verify),
        ("an opening committed earlier gives no first right to this one", open_at(opened), T0 + 30_000, local(Some(opened - 60), false), Admission::Reject),
        ("open at recovery with a local probe rejects", open_at(opened), T0 + 30_000, local(mine, true), Admission::Reject),
        ("half-open owned by me probes", half_open(ME, opened, opened + 40), T0 + 35_000, local(None, false), Admission::Probe),
        ("half-open owned by me, probe running, rejects", half_open(ME, opened, opened + 40), T0 + 35_000, local(None, true), Admission::Reject),
        ("half-open owned by another rejects", half_open(OTHER, opened, opened + 40), T0 + 35_000, local(mine, false), Admission::Reject),
        ("half-open lease still live in its last second rejects", half_open(OTHER, opened, opened + 40), T0 + 40_999, local(None, false), Admission::Reject),
        ("another's expired lease: wait the fallback", half_open(OTHER, opened, opened + 40), T0 + 41_000, local(mine, false), Admission::Reject),
        ("another's expired lease after the fallback: verify (takeover)", half_open(OTHER, opened, opened + 40), T0 + 56_000, local(None, false), Admission::Verify),
        ("my own expired lease re-elects at once", half_open(ME, opened, opened + 40), T0 + 41_000, local(None, false), elect_at(T0 + 41_000)),
    ];
    for (name, record, now, local, expected) in cases {
        assert_eq!(
            admit(&record, ME, now, &thresholds(), &local),
            expected,
            "{name}"
        );
    }
}

/// This environment's first reopen, at `opened_at`, after its probe failed.
fn my_reopen(opened_at: u64) -> RecordWrite {
    RecordWrite::Reopen {
        owner: ME.into(),
        opened_at,
        failure_count: 1,
        reopen_count: 1,
        expiration: 1,
        open_until: None,
    }
}

/// What this environment knows beyond the defaults: whether it is quiet, whether its
/// record was just read strongly consistently, and whether the store is out of reach.
fn knowing(quiet: bool, verified: bool, store_unreachable: bool) -> Local {
    Local {
        quiet,
        verified,
        store_unreachable,
        ..Local::default()
    }
}

/// What a call at `now` is admitted to on a circuit that opened at `opened`.
fn open_admits(opened: u64, now: u64, local: &Local) -> Admission {
    admit(&open_at(opened), ME, now, &thresholds(), local)
}

#[test]
fn a_verified_record_may_be_elected_on_and_an_unreachable_store_elects_alone() {
    let opened = T0 / 1000;
    let now = T0 + 45_000;
    let verified = knowing(false, true, false);
    assert_eq!(
        open_admits(opened, now, &verified),
        Admission::Elect(election_at(now, Some(opened)))
    );
    let cut_off = knowing(false, false, true);
    assert_eq!(
        open_admits(opened, now, &cut_off),
        Admission::ElectAlone(election_at(now, Some(opened)))
    );
    assert_eq!(
        open_admits(opened, now - 1, &cut_off),
        Admission::Reject,
        "alone, too, no earlier than recovery plus the fallback"
    );
}

#[test]
fn a_quiet_environment_elects_at_the_recovery_timeout_after_verifying() {
    let opened = T0 / 1000;
    let due = T0 + 30_000;
    let quiet = knowing(true, false, false);
    let verified = knowing(true, true, false);
    let busy = Local::default();
    let cut_off = knowing(true, false, true);
    #[rustfmt::skip]
    let cases = [
        ("not before the recovery timeout", due - 1, &quiet, Admission::Reject),
        ("without the fallback, but on a strongly consistent read", due, &quiet, Admission::Verify),
        ("verified, it elects", due, &verified, Admission::Elect(election_at(due, Some(opened)))),
        ("a busy environment without the first right waits the fallback", due, &busy, Admission::Reject),
        ("alone, a quiet environment still spreads its probe over the fallback", due, &cut_off, Admission::Reject),
    ];
    for (why, now, local, expected) in cases {
        assert_eq!(open_admits(opened, now, local), expected, "{why}");
    }
    // A probe handed over (its lease ended a second ago) is due at once for a quiet caller.
    let handed_over = CircuitRecord {
        probe_successes: 1,
        ..half_open(OTHER, opened, due / 1000 - 1)
    };
    assert_eq!(
        admit(&handed_over, ME, due, &thresholds(), &quiet),
        Admission::Verify
    );
    assert_eq!(
        admit(&handed_over, ME, due, &thresholds(), &busy),
        Admission::Reject
    );
}

#[test]
fn closed_failures_trip_at_the_threshold() {
    assert!(!trips(1, &thresholds()));
    assert!(!trips(2, &thresholds()));
    assert!(trips(3, &thresholds()));
    assert!(trips(7, &thresholds()));
    assert_eq!(
        trip(ME, 3, T0 + 1_500, &thresholds(), None),
        RecordWrite::Trip {
            opened_by: Some(ME.into()),
            failure_count: 3,
            opened_at: T0 / 1000 + 1,
            expiration: T0 / 1000 + 1 + 30 + 3600,
            open_until: None,
        }
    );
    assert!(matches!(
        trip(ME, 7, T0, &thresholds(), None),
        RecordWrite::Trip {
            failure_count: 7,
            ..
        }
    ));
}

fn verified_quiet() -> Local {
    Local {
        quiet: true,
        verified: true,
        ..Local::default()
    }
}

#[test]
fn probe_outcomes_count_the_fleets_successes() {
    let now = T0 + 31_000;
    let exp = now / 1000 + 30 + 3600;
    let probing = |successes| CircuitRecord {
        probe_successes: successes,
        ..half_open(ME, T0 / 1000, now / 1000 + 10)
    };
    let hand_over = |successes| RecordWrite::HandOver {
        owner: ME.into(),
        probe_successes: successes,
        lease_expiry: now / 1000 - 1,
        expiration: exp,
    };
    assert_eq!(
        on_probe_outcome(Outcome::Success, &probing(0), ME, now, &thresholds(), true),
        hand_over(1),
        "short of the threshold: counted, and handed over"
    );
    assert_eq!(
        on_probe_outcome(Outcome::Success, &probing(1), ME, now, &thresholds(), true),
        RecordWrite::Close {
            owner: ME.into(),
            expiration: exp
        },
        "the fleet's second success in a row closes, whoever made the first"
    );
    assert_eq!(
        on_probe_outcome(Outcome::Failure, &probing(1), ME, now, &thresholds(), true),
        RecordWrite::Reopen {
            owner: ME.into(),
            opened_at: now / 1000,
            failure_count: 1,
            reopen_count: 1,
            expiration: exp,
            open_until: None,
        }
    );
    assert_eq!(
        on_probe_outcome(Outcome::Ignored, &probing(1), ME, now, &thresholds(), true),
        hand_over(1),
        "an ignored outcome counts nothing but frees the probe"
    );
    let kept = on_probe_outcome(Outcome::Success, &probing(0), ME, now, &thresholds(), false);
    assert_eq!(
        kept,
        RecordWrite::HandOver {
            owner: ME.into(),
            probe_successes: 1,
            lease_expiry: now / 1000 + 10,
            expiration: exp,
        },
        "a busy prober counts the success and keeps its lease for its next call"
    );
    let kept = kept.applied_to(Some(&probing(0)));
    assert_eq!(
        admit(&kept, ME, now + 1_000, &thresholds(), &Local::default()),
        Admission::Probe
    );
    assert_eq!(
        admit(&kept, ME, now + 6_000, &thresholds(), &Local::default()),
        Admission::Reject,
        "less than the probe's time (5 s) left: no new probe under it"
    );
    let handed = hand_over(1).applied_to(Some(&probing(0)));
    assert_eq!(handed.probe_successes, 1);
    assert_eq!(
        handed.half_open_owner.as_deref(),
        Some(ME),
        "Powertools' shape"
    );
    let takeover = match admit(&handed, OTHER, now, &thresholds(), &verified_quiet()) {
        Admission::Elect(takeover) => takeover,
        other => panic!("a verified quiet caller takes the probe over: {other:?}"),
    };
    assert!(takeover.allowed(Some(&handed)), "the lease is free at once");
    assert!(
        !election_at(now, Some(T0 / 1000)).allowed(Some(&handed)),
        "a taker that read no successes loses"
    );
    let taken = takeover.applied_to(Some(&handed));
    assert_eq!(
        taken.probe_successes, 1,
        "a takeover keeps the fleet's count"
    );
    let from_open = election_at(now, Some(T0 / 1000)).applied_to(Some(&open_at(T0 / 1000)));
    assert_eq!(from_open.probe_successes, 0);
}

/// Race 2: a kept lease starts a probe only while the probe's time (`call_timeout` and two
/// store writes) is left, the rule the config applies to an election's lease; with lease
/// 30 s and a 25 s call timeout, not with 15 s left (half the lease, the rule before).
#[test]
fn a_kept_lease_starts_a_probe_only_while_it_covers_the_probe() {
    let long_calls = Thresholds {
        probe_lease_secs: 30,
        probe_secs: 27,
        ..thresholds()
    };
    let elected = T0 / 1000;
    let kept = CircuitRecord {
        probe_successes: 1,
        ..half_open(ME, elected - 30, elected + 30)
    };
    assert_eq!(
        admit(&kept, ME, T0 + 3_000, &long_calls, &Local::default()),
        Admission::Probe,
        "27 s left: a 25 s call and its writes fit"
    );
    assert_eq!(
        admit(&kept, ME, T0 + 15_999, &long_calls, &Local::default()),
        Admission::Reject,
        "15 s left: a call hanging to its timeout would outlive the lease"
    );
}

/// `settle` on a reply, from `base`, at `T0 + 30 s`.
fn settled(base: &CircuitRecord, transition: &RecordWrite, reply: Option<WriteOutcome>) -> Settled {
    settle(base, transition, reply, ME, T0 + 30_000, &thresholds())
}

#[test]
fn records_after_won_writes() {
    let opened = T0 / 1000;
    let won = Some(WriteOutcome::Won);
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 3,
        opened_at: opened,
        expiration: 1,
        open_until: None,
    };
    let after = settled(&CircuitRecord::closed(), &trip, won.clone());
    assert_eq!(after.record, open_at(opened));
    assert!(after.committed && after.won);

    let election = election_at(T0 + 30_000, Some(opened));
    assert_eq!(
        settled(&open_at(opened), &election, won.clone()).record,
        half_open(ME, opened, opened + 40)
    );

    let close = RecordWrite::Close {
        owner: ME.into(),
        expiration: 1,
    };
    assert_eq!(
        settled(&half_open(ME, opened, opened + 40), &close, won.clone()).record,
        CircuitRecord::closed()
    );

    let reopen = my_reopen(opened + 31);
    let reopened = settled(&half_open(ME, opened, opened + 40), &reopen, won).record;
    assert_eq!(reopened.state, CircuitState::Open);
    assert_eq!(reopened.opened_at, Some(opened + 31));
    assert_eq!(reopened.half_open_owner, None);
    assert_eq!(reopened.probe_lease_expiry, None);
}

#[test]
fn lost_writes_adopt_the_stored_record() {
    let opened = T0 / 1000;
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 3,
        opened_at: opened + 5,
        expiration: 1,
        open_until: None,
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
    let close = RecordWrite::Close {
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
    assert!(after.committed && !after.won);
}

/// Race 5: the SDK retried a trip or reopen whose first attempt landed; the retry lost to
/// the record that attempt left. It is ours: its first right and its hook stay. Another
/// environment's trip in the same second with the same count is not: it names its writer.
#[test]
fn a_trip_or_reopen_lost_to_its_own_landed_attempt_is_committed() {
    let opened = T0 / 1000;
    let trip = trip(ME, 3, T0, &thresholds(), None);
    let landed = trip.applied_to(None);
    assert_eq!(landed.opened_by.as_deref(), Some(ME));
    let after = settled(
        &CircuitRecord::closed(),
        &trip,
        Some(WriteOutcome::Lost(Some(landed.clone()))),
    );
    assert_eq!(after.record, landed);
    assert!(after.committed && after.won, "the landed trip is ours");
    assert_eq!(committed_opening(&trip, &after), Some(opened));

    // The same second, the same count, another writer: not ours.
    let theirs = super::trip(OTHER, 3, T0, &thresholds(), None).applied_to(None);
    let after = settled(
        &CircuitRecord::closed(),
        &trip,
        Some(WriteOutcome::Lost(Some(theirs.clone()))),
    );
    assert_eq!(after.record, theirs);
    assert!(!after.committed && !after.won, "another environment's trip");
    assert_eq!(committed_opening(&trip, &after), None);

    let probing = half_open(ME, opened, opened + 40);
    let reopen = my_reopen(opened + 31);
    let landed = reopen.applied_to(Some(&probing));
    let after = settled(&probing, &reopen, Some(WriteOutcome::Lost(Some(landed))));
    assert!(after.committed, "the landed reopen is ours");
    assert_eq!(committed_opening(&reopen, &after), Some(opened + 31));

    // Another environment's trip a second later is not.
    let later = super::trip(OTHER, 3, T0 + 1_000, &thresholds(), None).applied_to(None);
    let after = settled(
        &CircuitRecord::closed(),
        &trip,
        Some(WriteOutcome::Lost(Some(later))),
    );
    assert!(!after.committed && !after.won);
}

#[test]
fn a_write_the_store_did_not_answer_is_applied_locally() {
    let opened = T0 / 1000;
    let trip = RecordWrite::Trip {
        opened_by: None,
        failure_count: 3,
        opened_at: opened,
        expiration: 1,
        open_until: None,
    };
    let after = settled(&CircuitRecord::closed(), &trip, None);
    assert_eq!(after.record, open_at(opened));
    assert!(after.committed && !after.won);
    assert_eq!(committed_opening(&trip, &after), Some(opened));
}

#[test]
fn an_election_the_store_did_not_answer_is_not_won() {
    let opened = T0 / 1000;
    let election = election_at(T0 + 30_000, Some(opened));
    let after = settled(&open_at(opened), &election, None);
    assert_eq!(after.record, open_at(opened));
    assert!(!after.committed && !after.won);
}

fn overridden(record: CircuitRecord, kind: OverrideKind, until: Option<u64>) -> CircuitRecord {
    let set = crate::protocol::Override::new(kind, "ops", T0 / 1000);
    CircuitRecord {
        operator_override: Some(match until {
            Some(until) => set.until(until),
            None => set,
        }),
        ..record
    }
}

#[test]
fn a_forced_open_rejects_without_electing_even_with_the_first_right() {
    let opened = T0 / 1000;
    // The record Powertools may leave under a forced open: any state, override kept.
    for record in [
        open_at(opened),
        CircuitRecord::closed(),
        half_open(ME, opened, opened + 10),
    ] {
        let forced = overridden(record, OverrideKind::ForcedOpen, Some(opened + 600));
        let long_after_recovery = T0 + 300_000;
        let first_right = local(Some(opened), false);
        assert_eq!(
            admit(
                &forced,
                ME,
                long_after_recovery,
                &thresholds(),
                &first_right
            ),
            Admission::Reject,
            "{forced:?}"
        );
        assert!(!runs_closed(&forced, long_after_recovery));
        assert!(!may_trip(&forced, long_after_recovery));
    }
}

#[test]
fn a_disable_runs_every_call_and_never_trips() {
    let opened = T0 / 1000;
    let disabled = overridden(CircuitRecord::closed(), OverrideKind::Disabled, None);
    assert_eq!(
        admit(&disabled, ME, T0, &thresholds(), &Local::default()),
        Admission::Run
    );
    assert!(runs_closed(&disabled, T0) && !may_trip(&disabled, T0));
    // Reopened under it by an environment that cannot honour it: still runs.
    let reopened = overridden(open_at(opened), OverrideKind::Disabled, None);
    assert_eq!(
        admit(&reopened, ME, T0, &thresholds(), &Local::default()),
        Admission::Run
    );
    assert!(may_trip(&CircuitRecord::closed(), T0));
}

#[test]
fn an_override_that_ended_leaves_the_protocol_to_the_record() {
    let until = T0 / 1000 + 60;
    let ended_at = until * 1000;
    let forced = overridden(open_at(until), OverrideKind::ForcedOpen, Some(until));
    // At its end the opening is `until`: recovery runs from there, fallback for everyone.
    assert_eq!(
        admit(&forced, ME, ended_at, &thresholds(), &Local::default()),
        Admission::Reject
    );
    let due = ended_at + thresholds().recovery_millis + thresholds().fallback_millis;
    assert_eq!(
        admit(&forced, ME, due, &thresholds(), &Local::default()),
        Admission::Verify
    );
    let disabled = overridden(CircuitRecord::closed(), OverrideKind::Disabled, Some(until));
    assert!(may_trip(&disabled, ended_at) && !may_trip(&disabled, ended_at - 1000));
}

#[test]
fn another_environments_lease_is_taken_over_only_after_its_expiry_second() {
    let opened = T0 / 1000 - 3_600;
    let lease = T0 / 1000 + 10;
    let record = CircuitRecord {
        state: CircuitState::HalfOpen,
        half_open_owner: Some(OTHER.into()),
        probe_lease_expiry: Some(lease),
        ..open_at(opened)
    };
    let fallback = thresholds().fallback_millis;
    let at = |millis: u64, local: &Local| admit(&record, ME, millis, &thresholds(), local);
    // Long past the opening's recovery timeout, but the lease runs through its second.
    let quiet = knowing(true, true, false);
    assert_eq!(at(lease * 1000 + 999, &quiet), Admission::Reject);
    assert!(matches!(
        at((lease + 1) * 1000, &quiet),
        Admission::Elect(_)
    ));
    // A busy environment without the first right waits the fallback after the lease's end,
    // not after the opening's recovery timeout.
    let busy = knowing(false, true, false);
    let ended = (lease + 1) * 1000;
    assert_eq!(at(ended + fallback - 1, &busy), Admission::Reject);
    assert!(matches!(at(ended + fallback, &busy), Admission::Elect(_)));
}
