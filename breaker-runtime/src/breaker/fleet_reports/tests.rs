use super::*;

/// The failure threshold of every circuit below.
const THRESHOLD: u32 = 5;

impl FleetReports {
    /// [`FleetReports::on_failure`] at [`THRESHOLD`] without a suspicion: a window's
    /// report.
    fn on_window_failure(
        &self,
        now: u64,
        calls: u64,
        consecutive: Option<u32>,
        abandoned_after: Option<u64>,
    ) -> Option<FailureReport> {
        let report = self.on_failure(now, calls, consecutive, THRESHOLD, abandoned_after, None);
        report.map(|report| match report {
            Report::Window(report) => report,
            Report::Epoch(report) => panic!("no suspicion, yet {report:?}"),
        })
    }
}

#[test]
fn under_a_suspicion_reports_go_to_its_epoch_with_the_sampled_successes() {
    let r = reports_from(100_000);
    // The suspicion ends at 110 s: its epoch runs from 100 s.
    let Some(Report::Epoch(first)) = r.on_sampled_success(100_000, 1, 110) else {
        panic!("the first sample is reported at once");
    };
    assert_eq!(
        (first.failures, first.successes, first.new_reporter),
        (0, 8, 1)
    );
    assert_eq!(first.slice, 0);
    // Within the interval, a sample waits, and goes with the next failure.
    assert_eq!(r.on_sampled_success(100_200, 2, 110), None);
    let Some(Report::Epoch(next)) = r.on_failure(101_500, 3, Some(1), THRESHOLD, None, Some(110))
    else {
        panic!("a failure under a suspicion goes to its epoch");
    };
    assert_eq!(
        (next.failures, next.successes, next.new_reporter),
        (1, 8, 0)
    );
    assert_eq!(next.slice, 3);
}

#[test]
fn about_one_call_in_the_sample_weight_is_sampled() {
    let r = reports();
    let sampled = (0..8_000).filter(|i| r.sampled(100_000 + i * 7)).count();
    assert!((800..1_200).contains(&sampled), "{sampled} of 8,000");
}

fn reporter(environment: &str, store: &Arc<dyn StateStore>) -> Reporter {
    Reporter {
        environment: environment.into(),
        circuit: "c".into(),
        store: Arc::downgrade(store),
    }
}

fn reports_of(environment: &str, store: &Arc<dyn StateStore>) -> FleetReports {
    FleetReports::new(Some(FleetPolicy::default()), reporter(environment, store))
}

/// Reports of an environment of its own (tests run concurrently in one process).
fn reports() -> FleetReports {
    static ENVIRONMENTS: AtomicU64 = AtomicU64::new(0);
    let store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
    let environment = format!("env-{}", ENVIRONMENTS.fetch_add(1, Ordering::Relaxed));
    reports_of(&environment, &store)
}

/// [`reports`] whose first refresh, at `now`, marks no calls yet.
fn reports_from(now: u64) -> FleetReports {
    let r = reports();
    r.on_refresh(now, 0);
    r
}

#[test]
fn a_quiet_environment_reports_its_first_failure_at_once() {
    let r = reports_from(100_000);
    let report = r
        .on_window_failure(100_000, 1, Some(1), None)
        .expect("reported");
    assert_eq!(
        (report.failures, report.calls, report.new_reporter),
        (1, 1, 1)
    );
    assert_eq!(report.window_start, 100);
}

#[test]
fn failures_within_the_interval_wait_for_the_next_report() {
    let r = reports_from(0);
    for (calls, at) in [(1, 10_000), (2, 10_400), (3, 10_900)] {
        let report = r.on_window_failure(at, calls, Some(1), None);
        assert_eq!(report.is_some(), at == 10_000, "at {at}");
    }
    let report = r
        .on_window_failure(11_000, 4, Some(1), None)
        .expect("the interval passed");
    assert_eq!(
        (report.failures, report.calls, report.new_reporter),
        (3, 3, 0)
    );
}

#[test]
fn a_busy_environment_about_to_trip_holds_its_failures_back() {
    let r = reports_from(0);
    // 10 calls a second for 5 s, then failures: its own policy trips in 0.4 s.
    assert_eq!(r.on_window_failure(5_000, 51, Some(1), None), None);
    assert_eq!(r.on_window_failure(5_100, 52, Some(2), None), None);
    // Right after a new mark too: its rate is known from the mark before.
    let r = reports_from(0);
    r.on_refresh(10_000, 100);
    assert_eq!(r.on_window_failure(10_050, 101, Some(1), None), None);
}

#[test]
fn the_calls_of_a_report_start_at_the_mark_before_the_last() {
    let r = reports_from(0);
    r.on_refresh(10_000, 1_000);
    // A refresh a window later marks again: the span starts at the mark before it.
    r.on_refresh(20_000, 2_000);
    let report = r
        .on_window_failure(25_000, 2_003, None, None)
        .expect("reported");
    assert_eq!(
        (report.failures, report.calls),
        (1, 1_003),
        "right after a mark, a busy environment's failure is one of a window's calls"
    );
}

#[test]
fn a_quiet_environment_counts_its_previous_call_only_within_two_windows() {
    let r = reports();
    // Calls 20 s apart: each refreshes, and each refresh marks.
    r.on_refresh(100_000, 0);
    r.on_refresh(120_000, 1);
    let report = r
        .on_window_failure(120_000, 2, Some(1), None)
        .expect("reported at once");
    assert_eq!((report.failures, report.calls), (1, 2));
    // Calls 50 s apart: the previous mark is too old to count.
    let r = reports_from(100_000);
    r.on_refresh(150_000, 1);
    let report = r
        .on_window_failure(150_000, 2, Some(1), None)
        .expect("reported at once");
    assert_eq!((report.failures, report.calls), (1, 1));
}

#[test]
fn failures_since_a_recent_report_count_the_calls_since_it() {
    let r = reports_from(0);
    // Under a rate policy (no consecutive count), nothing is held back.
    r.on_window_failure(1_000, 10, None, None)
        .expect("the first report");
    // A refresh marks the span again; the next report still counts from the last one.
    r.on_refresh(10_500, 100);
    let report = r.on_window_failure(10_800, 110, None, None).expect("due");
    assert_eq!((report.failures, report.calls), (1, 100));
}

#[test]
fn an_abandoned_call_counts_against_the_calls_that_ended_while_it_ran() {
    let r = reports_from(0);
    // Nine successes, then a call that hung from the tenth call on.
    let report = r
        .on_window_failure(19_000, 10, Some(1), Some(9))
        .expect("reported");
    assert_eq!((report.failures, report.calls), (1, 1));
}

#[test]
fn an_abandoned_call_of_a_managed_instance_counts_against_the_other_invocations_calls() {
    let r = reports_from(0);
    // Many invocations at once: the call hung from the 100th call on, and the other
    // invocations ended 400 calls while it ran. It is one failure of those, not of one.
    let report = r
        .on_window_failure(19_000, 500, None, Some(100))
        .expect("reported");
    assert_eq!((report.failures, report.calls), (1, 400));
}

#[test]
fn two_breakers_of_one_circuit_in_one_environment_are_one_reporter() {
    let store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
    let (first, second) = (
        reports_of("env-twice", &store),
        reports_of("env-twice", &store),
    );
    let other_store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
    let elsewhere = reports_of("env-twice", &other_store);
    let new = |r: &FleetReports, at| r.on_window_failure(at, 1, None, None).unwrap().new_reporter;
    assert_eq!(new(&first, 100_000), 1);
    assert_eq!(
        new(&second, 100_500),
        0,
        "the same environment, circuit and store"
    );
    assert_eq!(new(&elsewhere, 100_600), 1, "another store counts apart");
    assert_eq!(new(&second, 110_000), 1, "a new window");
}

#[test]
fn pruning_forgets_reporters_of_ended_windows_and_of_dropped_stores() {
    let store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
    let dropped: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
    let mut windows = Windows::default();
    let now = 1_000_000;
    for (circuit, store, mark, until) in [
        ("open-window", &store, now - 5, now + 5),
        ("open-epoch", &store, (now + 10) | EPOCH_MARK, now + 10),
        ("ended-window", &store, now - 20, now - 10),
        ("ended-epoch", &store, (now - 1) | EPOCH_MARK, now - 1),
        ("dropped", &dropped, now - 5, now + 5),
    ] {
        let key = Arc::from(circuit);
        let store = Arc::downgrade(store);
        windows.last.insert(key, LastReport { store, mark, until });
    }
    drop(dropped);
    windows.prune(now);
    let mut left: Vec<_> = windows.last.keys().map(|c| c.to_string()).collect();
    left.sort();
    assert_eq!(left, ["open-epoch", "open-window"]);
    assert_eq!(windows.prune_at, PRUNE_AT_LEAST);
}

#[tokio::test(flavor = "current_thread")]
async fn a_stream_of_distinct_failing_keys_is_remembered_within_a_bound() {
    use crate::testing::ManualClock;
    use crate::{CircuitBreakerConfig, KeyedCircuitBreaker};
    let clock = ManualClock::new();
    // An environment of its own: the bound is per environment, and other tests of this
    // process report as theirs.
    let config = CircuitBreakerConfig::builder()
        .clock(clock.clone())
        .environment_id("env-one-off-keys")
        .build()
        .unwrap();
    let store = Arc::new(crate::store::InMemoryStore::with_fleet_counters());
    let keyed = KeyedCircuitBreaker::new("one-off-keys", store, config);
    let remembered = || {
        let environments = LAST_WINDOWS.lock().unwrap();
        environments
            .values()
            .map(|w| w.last.len())
            .max()
            .unwrap_or(0)
    };
    for i in 0..100_000u32 {
        let key = format!("tenant-{i}");
        let failed: Result<(), anyhow::Error> = keyed
            .call(&key, || async { Err(anyhow::anyhow!("503")) })
            .await;
        assert!(failed.is_err());
        if i % 1_000 == 999 {
            clock.advance(std::time::Duration::from_millis(300));
        }
        assert!(
            remembered() <= MAX_REMEMBERED,
            "{} at key {i}",
            remembered()
        );
    }
    assert!(
        remembered() >= MAX_REMEMBERED / 2,
        "the keys of the open windows are remembered: {}",
        remembered()
    );
}

#[test]
fn without_a_policy_or_a_store_that_counts_nothing_is_reported() {
    let store: Arc<dyn StateStore> = Arc::new(crate::store::InMemoryStore::new());
    let none = FleetReports::new(None, reporter("env-none", &store));
    assert_eq!(none.on_window_failure(1_000, 1, Some(1), None), None);
    let r = reports();
    r.unsupported();
    assert_eq!(r.on_window_failure(1_000, 1, Some(1), None), None);
}
