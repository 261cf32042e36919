//! The `metrics` feature: every name and label docs/metrics.md lists, read back from
//! metrics-util's `DebuggingRecorder`. Each circuit is built under a recorder of its own test
//! (`with_local_recorder`): a circuit resolves its handles when it is built, so the calls
//! that follow count into that recorder on any thread.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, KeyedCircuitBreaker,
};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One metric as the recorder holds it: its name and labels, sorted.
type Series = (String, Vec<(String, String)>);

/// A circuit named `name` whose metrics go to a recorder of its own, returned with it.
fn observed(
    name: &str,
    config: impl FnOnce(CircuitBreakerConfigBuilder) -> CircuitBreakerConfigBuilder,
) -> (CircuitBreaker, DebuggingRecorder) {
    let recorder = DebuggingRecorder::new();
    let config = config(CircuitBreakerConfig::builder()).build().unwrap();
    let breaker = metrics::with_local_recorder(&recorder, || {
        CircuitBreaker::new(name, Arc::new(InMemoryStore::new()), config)
    });
    (breaker, recorder)
}

/// Every series the recorder holds, by name and labels (a snapshot resets the counters).
fn snapshot(recorder: &DebuggingRecorder) -> BTreeMap<Series, DebugValue> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let (_, key) = key.into_parts();
            let mut labels: Vec<_> = key
                .labels()
                .map(|label| (label.key().to_owned(), label.value().to_owned()))
                .collect();
            labels.sort();
            ((key.name().to_owned(), labels), value)
        })
        .collect()
}

fn series(name: &str, labels: &[(&str, &str)]) -> Series {
    let mut labels: Vec<_> = labels
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    labels.sort();
    (name.to_owned(), labels)
}

fn counter(metrics: &BTreeMap<Series, DebugValue>, name: &str, labels: &[(&str, &str)]) -> u64 {
    match metrics.get(&series(name, labels)) {
        Some(DebugValue::Counter(n)) => *n,
        other => panic!("{name} {labels:?}: not a counter: {other:?}"),
    }
}

fn gauge(metrics: &BTreeMap<Series, DebugValue>, name: &str, labels: &[(&str, &str)]) -> f64 {
    match metrics.get(&series(name, labels)) {
        Some(DebugValue::Gauge(value)) => value.into_inner(),
        other => panic!("{name} {labels:?}: not a gauge: {other:?}"),
    }
}

fn calls(metrics: &BTreeMap<Series, DebugValue>, circuit: &str, outcome: &str) -> u64 {
    let labels = [("circuitbreaker_name", circuit), ("outcome", outcome)];
    counter(metrics, "circuitbreaker_calls_total", &labels)
}

fn transitions(metrics: &BTreeMap<Series, DebugValue>, circuit: &str, from: &str, to: &str) -> u64 {
    let labels = [("circuitbreaker_name", circuit), ("from", from), ("to", to)];
    counter(metrics, "circuitbreaker_transitions_total", &labels)
}

/// The three state gauges, closed, open and half open.
fn states(metrics: &BTreeMap<Series, DebugValue>, circuit: &str) -> [f64; 3] {
    ["closed", "open", "half_open"].map(|state| {
        let labels = [("circuitbreaker_name", circuit), ("state", state)];
        gauge(metrics, "circuitbreaker_state", &labels)
    })
}

#[tokio::test]
async fn calls_by_outcome_transitions_and_the_state_gauge() {
    let name = "metrics-outcomes";
    let clock = ManualClock::new();
    let (breaker, recorder) = observed(name, |config| {
        config
            .failure_threshold(2)
            .success_threshold(1)
            .recovery_timeout(Duration::from_secs(30))
            .clock(clock.clone())
    });
    for _ in 0..3 {
        let _: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
    }
    let not_counted = |_: &Error| false;
    let _: Result<u8, Error> = breaker
        .call_with(not_counted, || async { Err("404".into()) })
        .await;
    for _ in 0..2 {
        let _: Result<u8, Error> = breaker.call_blocking(|| Err("boom".into()));
    }
    let rejected: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
    assert!(rejected.is_err(), "the circuit tripped");
    let _: Result<u8, Error> = breaker.call_blocking(|| Ok(1));

    let open = snapshot(&recorder);
    assert_eq!(calls(&open, name, "success"), 3);
    assert_eq!(calls(&open, name, "ignored"), 1);
    assert_eq!(calls(&open, name, "failure"), 2);
    assert_eq!(calls(&open, name, "rejected"), 2);
    assert_eq!(calls(&open, name, "timeout"), 0);
    assert_eq!(transitions(&open, name, "closed", "open"), 1);
    assert_eq!(transitions(&open, name, "open", "half_open"), 0);
    assert_eq!(states(&open, name), [0.0, 1.0, 0.0]);

    clock.advance(Duration::from_secs(30));
    let probed: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
    assert_eq!(probed.unwrap(), 1);
    let closed = snapshot(&recorder);
    assert_eq!(calls(&closed, name, "success"), 1, "the probe");
    assert_eq!(transitions(&closed, name, "open", "half_open"), 1);
    assert_eq!(transitions(&closed, name, "half_open", "closed"), 1);
    assert_eq!(
        transitions(&closed, name, "closed", "open"),
        0,
        "reset by the snapshot"
    );
    assert_eq!(states(&closed, name), [1.0, 0.0, 0.0]);
}

#[tokio::test]
async fn a_call_abandoned_at_its_timeout_counts_as_timeout() {
    let name = "metrics-timeout";
    let (breaker, recorder) = observed(name, |config| {
        config.call_timeout(Duration::from_millis(20))
    });
    let late: Result<u8, Error> = breaker
        .call(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(1)
        })
        .await;
    assert!(late.is_err());
    let metrics = snapshot(&recorder);
    assert_eq!(calls(&metrics, name, "timeout"), 1);
    assert_eq!(calls(&metrics, name, "failure"), 0);
}

#[tokio::test]
async fn a_call_dropped_before_its_end_counts_as_ignored() {
    let name = "metrics-dropped";
    let (breaker, recorder) = observed(name, |config| config);
    let call = breaker.call(|| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok::<u8, Error>(1)
    });
    let timed_out = tokio::time::timeout(Duration::from_millis(10), call).await;
    assert!(timed_out.is_err(), "dropped while running");
    let metrics = snapshot(&recorder);
    assert_eq!(calls(&metrics, name, "ignored"), 1);
    assert_eq!(calls(&metrics, name, "success"), 0);
}

#[tokio::test]
async fn slow_calls_are_counted_besides_their_outcome() {
    let name = "metrics-slow";
    let clock = ManualClock::new();
    let (breaker, recorder) = observed(name, |config| {
        config
            .slow_calls(Duration::from_millis(100), 90)
            .clock(clock.clone())
    });
    let _: Result<u8, Error> = breaker
        .call(|| async {
            clock.advance(Duration::from_millis(150));
            Ok(1)
        })
        .await;
    let _: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
    let metrics = snapshot(&recorder);
    assert_eq!(calls(&metrics, name, "success"), 2);
    let slow = [("circuitbreaker_name", name)];
    assert_eq!(
        counter(&metrics, "circuitbreaker_slow_calls_total", &slow),
        1
    );
}

#[tokio::test]
async fn call_durations_are_recorded_only_when_asked() {
    let (timed, timed_recorder) = observed("metrics-durations", |config| {
        config.record_call_durations(true)
    });
    let (untimed, untimed_recorder) = observed("metrics-no-durations", |config| config);
    for breaker in [&timed, &untimed] {
        for _ in 0..4 {
            let _: Result<u8, Error> = breaker.call(|| async { Ok(1) }).await;
        }
        let _: Result<u8, Error> = breaker.call(|| async { Err("boom".into()) }).await;
    }
    let duration = series(
        "circuitbreaker_call_duration_seconds",
        &[("circuitbreaker_name", "metrics-durations")],
    );
    match snapshot(&timed_recorder).get(&duration) {
        Some(DebugValue::Histogram(seconds)) => {
            assert_eq!(seconds.len(), 5, "every call, its failure too");
            assert!(
                seconds
                    .iter()
                    .all(|s| s.into_inner() >= 0.0 && s.into_inner() < 1.0)
            );
        }
        other => panic!("no duration histogram: {other:?}"),
    }
    let untimed = snapshot(&untimed_recorder);
    assert!(
        untimed.keys().all(|(name, _)| !name.contains("duration")),
        "{untimed:?}"
    );
    assert_eq!(calls(&untimed, "metrics-no-durations", "success"), 4);
}

#[tokio::test]
async fn shadow_verdicts_are_counted_by_decision_and_every_call_runs() {
    let name = "metrics-shadow";
    let (breaker, recorder) = observed(name, |config| {
        config
            .shadow(true)
            .failure_threshold(2)
            .clock(ManualClock::new())
    });
    for _ in 0..5 {
        let result: Result<(), Error> = breaker.call(|| async { Err("503".into()) }).await;
        assert_eq!(result.unwrap_err().to_string(), "503", "the call ran");
    }
    let metrics = snapshot(&recorder);
    let decisions = |decision| {
        let labels = [("circuitbreaker_name", name), ("decision", decision)];
        counter(&metrics, "circuitbreaker_shadow_decisions_total", &labels)
    };
    assert_eq!(
        decisions("would_open"),
        1,
        "the second failure would have opened it"
    );
    assert_eq!(decisions("would_reject"), 3, "the three calls after it ran");
    assert_eq!(decisions("would_probe"), 0);
    assert_eq!(calls(&metrics, name, "rejected"), 0, "nothing was rejected");
    assert_eq!(calls(&metrics, name, "failure"), 5);
}

/// The tower layer counts its calls' outcomes and durations like every other path.
#[cfg(feature = "tower")]
#[tokio::test]
async fn the_tower_layer_counts_outcomes_and_durations() {
    use breaker_runtime::tower::CircuitBreakerLayer;
    use tower::{Layer, Service, ServiceExt, service_fn};

    let name = "metrics-tower";
    let (breaker, recorder) = observed(name, |config| {
        config.failure_threshold(2).record_call_durations(true)
    });
    let mut service = CircuitBreakerLayer::new(breaker).layer(service_fn(|ok: bool| async move {
        match ok {
            true => Ok::<u8, Error>(1),
            false => Err("503".into()),
        }
    }));
    for ok in [true, true, true, false, false, true] {
        let _ = service.ready().await.unwrap().call(ok).await;
    }
    let metrics = snapshot(&recorder);
    assert_eq!(calls(&metrics, name, "success"), 3);
    assert_eq!(calls(&metrics, name, "failure"), 2);
    assert_eq!(calls(&metrics, name, "rejected"), 1, "the circuit tripped");
    assert_eq!(transitions(&metrics, name, "closed", "open"), 1);
    let duration = series(
        "circuitbreaker_call_duration_seconds",
        &[("circuitbreaker_name", name)],
    );
    match metrics.get(&duration) {
        Some(DebugValue::Histogram(seconds)) => {
            assert_eq!(seconds.len(), 5, "every admitted call, its failures too");
        }
        other => panic!("no duration histogram: {other:?}"),
    }
}

/// A probe's outcome is counted when the call ends; the recording of it, dropped before
/// it was polled, counts nothing more (no "ignored" besides the success), and frees the
/// probe slot for the next call.
#[tokio::test]
async fn a_probe_whose_recording_is_dropped_unpolled_counts_once() {
    use breaker_runtime::__private::{Outcome, request_permit};
    let name = "metrics-probe-dropped";
    let clock = ManualClock::new();
    let (breaker, recorder) = observed(name, |config| {
        config
            .failure_threshold(1)
            .recovery_timeout(Duration::from_secs(1))
            .recovery_jitter(Duration::ZERO)
            .clock(clock.clone())
    });
    let failed = breaker
        .call(|| async { Err::<(), Error>("down".into()) })
        .await;
    assert!(failed.is_err());
    clock.advance(Duration::from_secs(2));
    snapshot(&recorder);

    let probe = request_permit(&breaker).await.expect("the probe");
    drop(probe.record(Outcome::Success));
    let metrics = snapshot(&recorder);
    assert_eq!(calls(&metrics, name, "success"), 1);
    assert_eq!(calls(&metrics, name, "ignored"), 0, "counted once");

    let next = request_permit(&breaker).await;
    assert!(next.is_ok(), "the slot was freed: the next call probes");
}

#[tokio::test]
async fn a_keyed_circuit_counts_under_its_name_and_counts_refusals_by_its_cap() {
    let name = "metrics-keyed";
    let recorder = DebuggingRecorder::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let (keyed, shops) = metrics::with_local_recorder(&recorder, || {
        let keyed = KeyedCircuitBreaker::new(name, Arc::new(InMemoryStore::new()), config)
            .with_max_open_keys(1)
            .unwrap();
        let shops = [keyed.breaker("shop-1"), keyed.breaker("shop-2")];
        (keyed, shops)
    });
    for shop in &shops {
        let _: Result<u8, Error> = shop.call(|| async { Err("503".into()) }).await;
    }
    assert_eq!(keyed.open_keys(), vec!["shop-1".to_owned()]);
    let metrics = snapshot(&recorder);
    assert_eq!(
        calls(&metrics, name, "failure"),
        2,
        "one series for every key"
    );
    assert_eq!(transitions(&metrics, name, "closed", "open"), 1);
    let refused = [("circuitbreaker_name", name)];
    assert_eq!(
        counter(
            &metrics,
            "circuitbreaker_keys_refused_by_cap_total",
            &refused
        ),
        1
    );
}

#[tokio::test]
async fn a_keyed_circuit_shows_its_open_keys_not_a_keys_state() {
    let name = "metrics-keyed-gauges";
    let recorder = DebuggingRecorder::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let (shop_1, shop_2) = metrics::with_local_recorder(&recorder, || {
        let keyed = KeyedCircuitBreaker::new(name, Arc::new(InMemoryStore::new()), config);
        (keyed.breaker("shop-1"), keyed.breaker("shop-2"))
    });
    let _: Result<u8, Error> = shop_1.call(|| async { Err("503".into()) }).await;
    let answered: Result<u8, Error> = shop_2.call(|| async { Ok(7) }).await;
    assert_eq!(answered.unwrap(), 7);

    let metrics = snapshot(&recorder);
    let state_series: Vec<_> = metrics
        .keys()
        .filter(|(metric, labels)| {
            metric == "circuitbreaker_state"
                && labels.contains(&("circuitbreaker_name".into(), name.into()))
        })
        .collect();
    assert!(
        state_series.is_empty(),
        "one gauge written by every key says nothing: {state_series:?}"
    );
    let labels = [("circuitbreaker_name", name)];
    assert_eq!(gauge(&metrics, "circuitbreaker_open_keys", &labels), 1.0);
    assert_eq!(
        gauge(&metrics, "circuitbreaker_suspected_keys", &labels),
        0.0,
        "a trip names no suspicion"
    );
}

/// A store that refuses every call with one kind of error.
#[derive(Debug)]
struct Refusing(breaker_runtime::store::StoreErrorKind);

impl breaker_runtime::store::StateStore for Refusing {
    fn read<'a>(
        &'a self,
        circuit: &'a str,
    ) -> breaker_runtime::store::StoreFuture<'a, Option<breaker_runtime::store::CircuitRecord>>
    {
        let error = breaker_runtime::store::StoreError::with_kind(self.0, format!("{circuit}: no"));
        Box::pin(std::future::ready(Err(error)))
    }
    fn apply<'a>(
        &'a self,
        circuit: &'a str,
        _: &'a breaker_runtime::store::RecordWrite,
    ) -> breaker_runtime::store::StoreFuture<'a, breaker_runtime::store::WriteOutcome> {
        let error = breaker_runtime::store::StoreError::with_kind(self.0, format!("{circuit}: no"));
        Box::pin(std::future::ready(Err(error)))
    }
}

#[test]
fn store_errors_are_counted_by_kind_and_the_call_fails_open() {
    use breaker_runtime::store::StoreErrorKind;
    let recorder = DebuggingRecorder::new();
    for (name, kind) in [
        ("denied", StoreErrorKind::AccessDenied),
        ("throttled", StoreErrorKind::Throttled),
    ] {
        let breaker = CircuitBreaker::new(
            name,
            Arc::new(Refusing(kind)),
            CircuitBreakerConfig::default(),
        );
        let answer =
            metrics::with_local_recorder(&recorder, || breaker.call_blocking(|| Ok::<_, Error>(7)));
        assert_eq!(answer.unwrap(), 7, "the call ran: the circuit failed open");
    }
    let metrics = snapshot(&recorder);
    let errors = |name, kind| {
        let labels = [("circuitbreaker_name", name), ("kind", kind)];
        counter(&metrics, "circuitbreaker_store_errors_total", &labels)
    };
    assert_eq!(errors("denied", "access_denied"), 1);
    assert_eq!(errors("throttled", "throttled"), 1);
    let other_kind = [("circuitbreaker_name", "denied"), ("kind", "throttled")];
    assert!(!metrics.contains_key(&series("circuitbreaker_store_errors_total", &other_kind)));
}
