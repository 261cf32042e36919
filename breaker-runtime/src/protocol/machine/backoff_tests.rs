//! The backed-off recovery: every environment waits the same, longer, after each reopen.

use super::*;
use crate::protocol::record::Override;
use crate::protocol::record::OverrideKind;

const ME: &str = "env-me";
const OTHER: &str = "env-other";
/// Unix seconds of the latest opening.
const OPENED: u64 = 1_700_000_000;

/// The machine tests' thresholds (recovery 30 s, fallback 15 s), backed off.
fn thresholds() -> Thresholds {
    Thresholds {
        backoff: RecoveryBackoff::exponential(2, Duration::from_secs(300)),
        ..super::tests::thresholds()
    }
}

fn reopened(reopens: u32) -> CircuitRecord {
    CircuitRecord {
        reopen_count: reopens,
        ..CircuitRecord::open(OPENED, 1)
    }
}

/// The first instant (unix millis) at which `local` may elect itself on `record`.
fn first_admitted(record: &CircuitRecord, local: &Local) -> u64 {
    let start = OPENED * 1000;
    (start..start + 3_600_000)
        .step_by(100)
        .find(|now| admit(record, ME, *now, &thresholds(), local) != Admission::Reject)
        .expect("admitted within the hour")
}

#[test]
fn each_reopen_lengthens_the_wait_of_the_first_right_and_of_a_quiet_environment() {
    let first_right = Local {
        committed_opening: Some(OPENED),
        ..Local::default()
    };
    let quiet = Local {
        quiet: true,
        ..Local::default()
    };
    let mut previous = 0;
    for reopens in 0..6 {
        let record = reopened(reopens);
        let wait = thresholds().recovery_millis_of(&record);
        let full = (30_000u64 << reopens).min(300_000);
        assert!(wait <= full && wait >= full - full / 4, "{reopens}: {wait}");
        assert!(
            wait >= previous || full == 300_000,
            "{reopens}: the wait grows"
        );
        previous = wait;
        for local in [first_right, quiet] {
            let due = OPENED * 1000 + wait;
            assert_eq!(first_admitted(&record, &local), due.div_ceil(100) * 100);
        }
        let busy = Local::default();
        assert_eq!(
            first_admitted(&record, &busy),
            (OPENED * 1000 + wait + 15_000).div_ceil(100) * 100,
            "a busy environment waits the fallback past the backed-off due time"
        );
    }
    assert_eq!(thresholds().recovery_millis_of(&reopened(0)), 30_000);
}

#[test]
fn a_failed_probe_counts_the_reopen_and_its_ttl_outlives_the_longer_wait() {
    let now = (OPENED + 200) * 1000;
    let probing = CircuitRecord {
        reopen_count: 2,
        ..CircuitRecord::half_open(OPENED, 1, ME, OPENED + 210)
    };
    let RecordWrite::Reopen {
        reopen_count,
        opened_at,
        expiration,
        ..
    } = on_probe_outcome(Outcome::Failure, &probing, ME, now, &thresholds(), true)
    else {
        panic!("a failed probe reopens");
    };
    assert_eq!((reopen_count, opened_at), (3, OPENED + 200));
    let next = CircuitRecord {
        reopen_count: 3,
        ..CircuitRecord::open(OPENED + 200, 1)
    };
    let wait_secs = thresholds().recovery_millis_of(&next).div_ceil(1000);
    assert!(wait_secs > 30 * 6, "{wait_secs}");
    assert_eq!(expiration, OPENED + 200 + wait_secs + TTL_GRACE_SECS);
}

#[test]
fn an_election_and_a_pass_keep_the_count_and_a_close_or_trip_resets_it() {
    let record = reopened(4);
    let Admission::Elect(election) = admit(
        &record,
        OTHER,
        (OPENED + 3600) * 1000,
        &thresholds(),
        &Local {
            verified: true,
            ..Local::default()
        },
    ) else {
        panic!("due long ago: elects");
    };
    let probing = election.applied_to(Some(&record));
    assert_eq!(probing.reopen_count, 4);
    let passed = on_probe_outcome(
        Outcome::Success,
        &probing,
        OTHER,
        (OPENED + 3601) * 1000,
        &thresholds(),
        true,
    );
    assert_eq!(passed.applied_to(Some(&probing)).reopen_count, 4);
    let closed = RecordWrite::Close {
        owner: OTHER.into(),
        expiration: 0,
    };
    assert_eq!(closed.applied_to(Some(&probing)).reopen_count, 0);
    let tripped = trip("env-me", 3, (OPENED + 4000) * 1000, &thresholds(), None);
    assert_eq!(tripped.applied_to(None).reopen_count, 0);
    assert_eq!(
        tripped.expiration(),
        Some(OPENED + 4000 + 30 + TTL_GRACE_SECS),
        "a trip waits the recovery timeout"
    );
}

#[test]
fn without_backoff_every_opening_waits_the_timeout() {
    let fixed = Thresholds {
        backoff: RecoveryBackoff::none(),
        ..thresholds()
    };
    assert_eq!(fixed.recovery_millis_of(&reopened(9)), 30_000);
}

#[test]
fn retry_after_is_when_the_first_right_is_admitted_backed_off_or_after_a_forced_opens_end() {
    let first_right = Local {
        committed_opening: Some(OPENED),
        ..Local::default()
    };
    for reopens in 0..4 {
        let record = reopened(reopens);
        let due = retry_after(&record, OPENED, &thresholds()).expect("an open circuit's due time");
        let admitted = first_admitted(&record, &first_right);
        assert!(
            due * 1000 >= admitted && due * 1000 < admitted + 1000,
            "{reopens} reopens: due {due}, first admitted at {admitted} ms"
        );
    }
    assert_eq!(
        retry_after(&CircuitRecord::default(), OPENED, &thresholds()),
        None,
        "closed"
    );

    // A forced open: at its end, unless the opening's own wait runs longer; none without one.
    let forced = |until: Option<u64>| {
        let mut set = Override::new(OverrideKind::ForcedOpen, "ops", OPENED);
        set.until = until;
        CircuitRecord {
            operator_override: Some(set),
            ..reopened(0)
        }
    };
    assert_eq!(
        retry_after(&forced(Some(OPENED + 600)), OPENED, &thresholds()),
        Some(OPENED + 600)
    );
    assert_eq!(
        retry_after(&forced(Some(OPENED + 10)), OPENED, &thresholds()),
        Some(OPENED + 30)
    );
    assert_eq!(retry_after(&forced(None), OPENED, &thresholds()), None);
}
