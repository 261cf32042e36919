//! Shadow mode, per circuit, on the manual clock: every call runs, the would-be verdicts
//! reach the `on_shadow` hooks (and EMF), and the shared record stays closed.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use breaker_runtime::store::{InMemoryStore, StateStore};
use breaker_runtime::testing::ManualClock;
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitState, ShadowDecision, ShadowEvent, emf,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Shadowed {
    breaker: CircuitBreaker,
    store: Arc<InMemoryStore>,
    clock: ManualClock,
    verdicts: Arc<Mutex<Vec<ShadowEvent>>>,
    transitions: Arc<AtomicU32>,
    ran: AtomicU32,
}

impl Shadowed {
    fn new(name: &str) -> Self {
        let clock = ManualClock::new();
        let store = Arc::new(InMemoryStore::new());
        let config = CircuitBreakerConfig::builder()
            .failure_threshold(3)
            .success_threshold(2)
            .recovery_timeout(Duration::from_secs(30))
            .shadow(true)
            .clock(clock.clone())
            .build()
            .unwrap();
        let verdicts = Arc::new(Mutex::new(Vec::new()));
        let transitions = Arc::new(AtomicU32::new(0));
        let (seen, counted) = (Arc::clone(&verdicts), Arc::clone(&transitions));
        let breaker = CircuitBreaker::new(name, store.clone(), config)
            .with_on_shadow(move |event| seen.lock().unwrap().push(event))
            .with_on_transition(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            });
        Self {
            breaker,
            store,
            clock,
            verdicts,
            transitions,
            ran: AtomicU32::new(0),
        }
    }

    async fn call(&self, ok: bool) -> Result<(), Error> {
        self.breaker
            .call(|| async {
                self.ran.fetch_add(1, Ordering::SeqCst);
                match ok {
                    true => Ok(()),
                    false => Err("downstream 503".into()),
                }
            })
            .await
    }

    /// The verdicts reported since the last time asked.
    fn verdicts(&self) -> Vec<ShadowDecision> {
        let mut seen = self.verdicts.lock().unwrap();
        seen.drain(..).map(|event| event.decision).collect()
    }

    async fn assert_shared_record_closed(&self) {
        let stored = self.store.read(self.breaker.name()).await.unwrap();
        assert!(
            stored
                .as_ref()
                .is_none_or(|r| r.state == CircuitState::Closed),
            "a shadowed circuit wrote {stored:?}"
        );
        assert_eq!(self.breaker.state(), CircuitState::Closed);
        assert_eq!(self.transitions.load(Ordering::SeqCst), 0, "no transition");
    }
}

#[tokio::test]
async fn failures_past_the_threshold_run_every_call_and_report_would_open_then_would_reject() {
    let shadowed = Shadowed::new("shadow-trip");
    for call in 1..=10 {
        let result = shadowed.call(false).await;
        assert_eq!(
            result.unwrap_err().to_string(),
            "downstream 503",
            "call {call} ran and failed; it was not rejected"
        );
    }
    assert_eq!(shadowed.ran.load(Ordering::SeqCst), 10, "every call ran");
    let mut expected = vec![ShadowDecision::WouldOpen];
    expected.extend([ShadowDecision::WouldReject; 7]);
    assert_eq!(shadowed.verdicts(), expected);
    shadowed.assert_shared_record_closed().await;
}

#[tokio::test]
async fn the_would_be_opening_carries_its_cause_and_counts_in_emf() {
    let shadowed = Shadowed::new("shadow-emf");
    for _ in 0..3 {
        let _ = shadowed.call(false).await;
    }
    let opened = shadowed.verdicts.lock().unwrap()[0].clone();
    assert_eq!(opened.decision, ShadowDecision::WouldOpen);
    assert_eq!(opened.cause.map(|c| c.as_str()), Some("error"));
    assert_eq!(
        opened.opened_at_unix_secs,
        Some(shadowed.clock.unix_millis() / 1000)
    );
    let record = emf::shadow_record(&opened, "Breaker", 1);
    assert!(
        record.contains(r#""Metrics":[{"Name":"CircuitWouldOpen","Unit":"Count"}]"#)
            && record.contains(r#""verdict":"would_open","would_be_state":"OPEN""#)
            && record.ends_with(r#""cause":"error","CircuitWouldOpen":1}"#),
        "{record}"
    );
}

#[tokio::test]
async fn after_the_recovery_timeout_calls_are_would_be_probes_that_close_it() {
    let shadowed = Shadowed::new("shadow-recovery");
    for _ in 0..3 {
        let _ = shadowed.call(false).await;
    }
    assert_eq!(shadowed.verdicts(), [ShadowDecision::WouldOpen]);
    shadowed.clock.advance(Duration::from_secs(29));
    assert!(shadowed.call(true).await.is_ok());
    assert_eq!(shadowed.verdicts(), [ShadowDecision::WouldReject]);

    shadowed.clock.advance(Duration::from_secs(1));
    assert!(shadowed.call(true).await.is_ok());
    assert_eq!(shadowed.verdicts(), [ShadowDecision::WouldProbe]);
    assert!(shadowed.call(true).await.is_ok());
    assert_eq!(
        shadowed.verdicts(),
        [ShadowDecision::WouldProbe, ShadowDecision::WouldClose],
        "two probe successes would have closed it"
    );
    // Would-be closed: calls run with no verdict, and failures count from zero again.
    assert!(shadowed.call(false).await.is_err());
    assert!(shadowed.call(false).await.is_err());
    assert_eq!(shadowed.verdicts(), []);
    assert!(shadowed.call(false).await.is_err());
    assert_eq!(shadowed.verdicts(), [ShadowDecision::WouldOpen]);
    assert_eq!(shadowed.ran.load(Ordering::SeqCst), 9);
    shadowed.assert_shared_record_closed().await;
}

#[tokio::test]
async fn a_failed_would_be_probe_would_have_reopened_it() {
    let shadowed = Shadowed::new("shadow-reopen");
    for _ in 0..3 {
        let _ = shadowed.call(false).await;
    }
    shadowed.clock.advance(Duration::from_secs(30));
    assert!(
        shadowed.call(false).await.is_err(),
        "the would-be probe ran"
    );
    assert_eq!(
        shadowed.verdicts(),
        [
            ShadowDecision::WouldOpen,
            ShadowDecision::WouldProbe,
            ShadowDecision::WouldOpen
        ]
    );
    let reopened = shadowed.clock.unix_millis() / 1000;
    assert!(shadowed.call(true).await.is_ok());
    let events = shadowed.verdicts.lock().unwrap().clone();
    assert_eq!(events[0].decision, ShadowDecision::WouldReject);
    assert_eq!(
        events[0].opened_at_unix_secs,
        Some(reopened),
        "the reopening's recovery"
    );
    shadowed.assert_shared_record_closed().await;
}
