//! The `call-spans` feature: an async guarded call of a circuit that traces calls runs in a
//! span `circuitbreaker.call` named after its circuit, and what it logs nests under it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::{CircuitBreaker, CircuitBreakerConfig};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Every span opened (its name and `circuitbreaker.name`), and each of this test's events
/// with the span it was inside, if any.
#[derive(Default)]
struct Spans {
    next: AtomicU64,
    opened: Mutex<Vec<(String, String)>>,
    current: Mutex<Vec<u64>>,
    events: Mutex<Vec<Option<u64>>>,
}

struct CircuitName(String);

impl Visit for CircuitName {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "circuitbreaker.name" {
            self.0 = value.to_owned();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "circuitbreaker.name" {
            self.0 = format!("{value:?}");
        }
    }
}

/// The subscriber: a handle on the [`Spans`] the test reads afterwards.
struct Recording(Arc<Spans>);

impl Subscriber for Recording {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut name = CircuitName(String::new());
        span.record(&mut name);
        let mut opened = self.0.opened.lock().unwrap();
        opened.push((span.metadata().name().to_owned(), name.0));
        Id::from_u64(self.0.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        // Only this test's own event: the breaker may log too.
        if event.metadata().target() != module_path!() {
            return;
        }
        let inside = self.0.current.lock().unwrap().last().copied();
        self.0.events.lock().unwrap().push(inside);
    }

    fn enter(&self, span: &Id) {
        self.0.current.lock().unwrap().push(span.into_u64());
    }

    fn exit(&self, _: &Id) {
        self.0.current.lock().unwrap().pop();
    }
}

fn breaker(name: &str, trace: bool) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .trace_calls(trace)
        .build()
        .unwrap();
    CircuitBreaker::new(name, Arc::new(InMemoryStore::new()), config)
}

#[test]
fn a_traced_call_runs_in_its_span_and_an_untraced_one_opens_none() {
    let spans = Arc::new(Spans::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (traced, untraced) = (
        breaker("spans-traced", true),
        breaker("spans-untraced", false),
    );
    tracing::subscriber::with_default(Recording(Arc::clone(&spans)), || {
        runtime.block_on(async {
            let logged: Result<u8, Error> = traced
                .call(|| async {
                    tracing::info!("inside the guarded call");
                    Ok(1)
                })
                .await;
            assert_eq!(logged.unwrap(), 1);
            let quiet: Result<u8, Error> = untraced.call(|| async { Ok(2) }).await;
            assert_eq!(quiet.unwrap(), 2);
        })
    });
    let opened = spans.opened.lock().unwrap().clone();
    let calls: Vec<_> = opened
        .iter()
        .filter(|(name, _)| name == "circuitbreaker.call")
        .collect();
    assert_eq!(
        calls,
        [&("circuitbreaker.call".to_owned(), "spans-traced".to_owned())],
        "{opened:?}"
    );
    let call_span = 1 + opened
        .iter()
        .position(|(name, _)| name == "circuitbreaker.call")
        .unwrap() as u64;
    let events = spans.events.lock().unwrap().clone();
    assert_eq!(events, [Some(call_span)]);
}
