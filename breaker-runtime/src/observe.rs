//! What a circuit reports through the `metrics` facade (the `metrics` feature; the names
//! and labels are in docs/metrics.md). Every handle is registered once, when the circuit is
//! built, so a call only increments a counter: install the recorder before building the
//! circuits, since handles registered before it stay with the no-op recorder. Without the
//! feature the types are zero-sized and every method is empty, so the closed path is what
//! it was.

pub(crate) use imp::{CallClock, CircuitMetrics, KeyedMetrics, store_error};
pub(crate) use span::CallSpan;

mod span;

#[cfg(feature = "metrics")]
mod imp {
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::{Once, OnceLock};
    use std::time::Instant;

    use metrics::{Counter, Gauge, Histogram, Label};

    use crate::config::{CircuitBreakerConfig, millis};
    use crate::events::{FailureKind, ShadowDecision};
    use crate::protocol::CircuitState;
    use crate::protocol::machine::Outcome;

    /// Calls by how they ended, each counted once.
    pub(crate) const CALLS: &str = "circuitbreaker_calls_total";
    /// Calls that took at least the slow-call duration (also counted in [`CALLS`]).
    pub(crate) const SLOW_CALLS: &str = "circuitbreaker_slow_calls_total";
    /// Transitions this environment made.
    pub(crate) const TRANSITIONS: &str = "circuitbreaker_transitions_total";
    /// 1 for the state the circuit acts on, 0 for the other two.
    pub(crate) const STATE: &str = "circuitbreaker_state";
    /// How long admitted calls ran (opt-in).
    pub(crate) const DURATION: &str = "circuitbreaker_call_duration_seconds";
    /// Shadow mode's verdicts: what the breaker would have done (every call ran).
    pub(crate) const SHADOW_DECISIONS: &str = "circuitbreaker_shadow_decisions_total";
    /// Keys of a keyed circuit whose trip the cap (`max_open_keys`) refused.
    pub(crate) const KEYS_REFUSED_BY_CAP: &str = "circuitbreaker_keys_refused_by_cap_total";
    /// The keys a keyed circuit's index names, as this environment's copy shows it.
    pub(crate) const OPEN_KEYS: &str = "circuitbreaker_open_keys";
    /// The suspicions a keyed circuit's index names apart from the open keys.
    pub(crate) const SUSPECTED_KEYS: &str = "circuitbreaker_suspected_keys";
    /// Store calls that failed (the circuit failed open), by kind.
    pub(crate) const STORE_ERRORS: &str = "circuitbreaker_store_errors_total";

    /// A store call of circuit `name` failed with `kind`: the circuit fails open. Looked
    /// up on each error, not registered with the circuit: an error already waited on the
    /// store, and most circuits never meet one.
    pub(crate) fn store_error(name: &str, kind: crate::store::StoreErrorKind) {
        describe();
        let labels = [
            Label::new("circuitbreaker_name", name.to_owned()),
            Label::new("kind", kind.as_str()),
        ];
        metrics::counter!(STORE_ERRORS, labels.to_vec()).increment(1);
    }

    /// What a keyed circuit reports besides its keys' circuits (whose metrics carry the
    /// keyed circuit's name, never the key: keys are unbounded; and no state gauge, which
    /// every key would write over the others').
    pub(crate) struct KeyedMetrics {
        refused_by_cap: Counter,
        open_keys: Gauge,
        suspected_keys: Gauge,
    }

    impl KeyedMetrics {
        pub(crate) fn new(name: &str) -> Self {
            describe();
            let circuit = Label::new("circuitbreaker_name", name.to_owned());
            Self {
                refused_by_cap: metrics::counter!(KEYS_REFUSED_BY_CAP, vec![circuit.clone()]),
                open_keys: metrics::gauge!(OPEN_KEYS, vec![circuit.clone()]),
                suspected_keys: metrics::gauge!(SUSPECTED_KEYS, vec![circuit]),
            }
        }

        /// The copy of the index names `n` suspicions (which take no slot of the cap).
        pub(crate) fn suspected_keys(&self, n: u32) {
            self.suspected_keys.set(f64::from(n));
        }

        /// The copy of the index names `n` keys.
        pub(crate) fn open_keys(&self, n: u32) {
            self.open_keys.set(f64::from(n));
        }

        /// A key's trip was refused: the cap holds.
        pub(crate) fn refused_by_cap(&self) {
            self.refused_by_cap.increment(1);
        }
    }

    const DECISIONS: [ShadowDecision; 4] = [
        ShadowDecision::WouldReject,
        ShadowDecision::WouldOpen,
        ShadowDecision::WouldProbe,
        ShadowDecision::WouldClose,
    ];

    const STATES: [CircuitState; 3] = [
        CircuitState::Closed,
        CircuitState::Open,
        CircuitState::HalfOpen,
    ];
    /// [`CircuitMetrics::shown`] before the gauges were first set.
    const NOT_SHOWN: u8 = u8::MAX;

    /// The handles of one circuit's metrics.
    pub(crate) struct CircuitMetrics {
        success: Counter,
        failure: Counter,
        ignored: Counter,
        rejected: Counter,
        timeout: Counter,
        slow: Counter,
        /// By the index of the state left, then entered (the diagonal is never counted).
        transitions: [[Counter; 3]; 3],
        state: StateGauges,
        /// `Some` when call durations are recorded.
        duration: Option<Histogram>,
        /// From this many ms on a call is slow (a slow-call rate is set).
        slow_call_millis: Option<u64>,
        /// By [`DECISIONS`] index.
        shadow: [Counter; 4],
    }

    /// When an admitted call started, in µs of [`micros`], if its circuit records
    /// durations (else 0). 32 bits: it fits in a permit's padding, and a difference taken
    /// wrapping is right for any call shorter than 71 minutes.
    pub(crate) type CallClock = u32;

    /// Microseconds since this process first asked, truncated to 32 bits, never 0 (the
    /// "not timed" of [`CallClock`]: a µs early at most).
    fn micros() -> u32 {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        (EPOCH.get_or_init(Instant::now).elapsed().as_micros() as u32).max(1)
    }

    impl CircuitMetrics {
        /// `state_gauge`: false for a key's circuit (the gauge is the keyed circuit's,
        /// which every key would write over the others').
        pub(crate) fn new(name: &str, config: &CircuitBreakerConfig, state_gauge: bool) -> Self {
            describe();
            let circuit = Label::new("circuitbreaker_name", name.to_owned());
            let labelled = |pairs: &[(&'static str, &'static str)]| -> Vec<Label> {
                let mut labels = vec![circuit.clone()];
                labels.extend(pairs.iter().map(|&(key, value)| Label::new(key, value)));
                labels
            };
            let calls = |outcome| metrics::counter!(CALLS, labelled(&[("outcome", outcome)]));
            let transitions = STATES.map(|from| {
                STATES.map(|to| match from == to {
                    true => Counter::noop(),
                    false => metrics::counter!(
                        TRANSITIONS,
                        labelled(&[("from", label(from)), ("to", label(to))])
                    ),
                })
            });
            Self {
                success: calls("success"),
                failure: calls("failure"),
                ignored: calls("ignored"),
                rejected: calls("rejected"),
                timeout: calls("timeout"),
                slow: metrics::counter!(SLOW_CALLS, labelled(&[])),
                transitions,
                state: StateGauges {
                    gauges: STATES.map(|state| match state_gauge {
                        true => metrics::gauge!(STATE, labelled(&[("state", label(state))])),
                        false => Gauge::noop(),
                    }),
                    shown: AtomicU8::new(NOT_SHOWN),
                },
                duration: config
                    .record_call_durations
                    .then(|| metrics::histogram!(DURATION, labelled(&[]))),
                slow_call_millis: config.slow_call_duration().map(millis),
                shadow: DECISIONS.map(|decision| {
                    metrics::counter!(
                        SHADOW_DECISIONS,
                        labelled(&[("decision", decision.as_str())])
                    )
                }),
            }
        }

        /// A shadow verdict.
        pub(crate) fn shadow_decision(&self, decision: ShadowDecision) {
            if let Some(at) = DECISIONS.iter().position(|d| *d == decision) {
                self.shadow[at].increment(1);
            }
        }

        /// When a call admitted now started, if its duration is recorded.
        #[inline]
        pub(crate) fn start(&self) -> CallClock {
            match self.duration.is_some() {
                true => micros(),
                false => 0,
            }
        }

        /// The closed path's success.
        #[inline]
        pub(crate) fn succeeded(&self, started: CallClock) {
            self.success.increment(1);
            // Not `duration.is_some()`: `started` is in a register already.
            if started != 0 {
                self.record_duration(started);
            }
        }

        /// Any other end of an admitted call: `outcome`, a failure of `kind`; `admitted_at`
        /// (unix ms, 0 if not read) and `now` judge whether it was slow.
        #[inline(never)]
        pub(crate) fn ended(
            &self,
            outcome: Outcome,
            kind: FailureKind,
            started: CallClock,
            admitted_at: u64,
            now: impl FnOnce() -> u64,
        ) {
            let counter = match outcome {
                Outcome::Success => &self.success,
                Outcome::Failure if kind.is_deadline() => &self.timeout,
                Outcome::Failure | Outcome::OpenFor(_) | Outcome::Overloaded => &self.failure,
                Outcome::Ignored => &self.ignored,
            };
            counter.increment(1);
            if let Some(slow) = self.slow_call_millis
                && admitted_at != 0
                && now().saturating_sub(admitted_at) >= slow
            {
                self.slow.increment(1);
            }
            self.record_duration(started);
        }

        /// A call dropped before its outcome was reported (a cancelled future).
        pub(crate) fn dropped(&self) {
            self.ignored.increment(1);
        }

        /// A call rejected, by a circuit acting as `state`.
        #[inline(never)]
        pub(crate) fn rejected(&self, state: CircuitState) {
            self.rejected.increment(1);
            self.show(state);
        }

        /// A transition this environment committed: counted, and the gauges show `to`.
        pub(crate) fn transitioned(&self, from: CircuitState, to: CircuitState) {
            self.transitions[index(from)][index(to)].increment(1);
            self.state.show(to);
        }

        /// The circuit acts as `state`: the gauges say so.
        pub(crate) fn show(&self, state: CircuitState) {
            self.state.show(state);
        }

        #[cold]
        #[inline(never)]
        fn record_duration(&self, started: CallClock) {
            if let Some(duration) = &self.duration {
                let micros = micros().wrapping_sub(started);
                duration.record(f64::from(micros) / 1e6);
            }
        }
    }

    /// The state gauges of one circuit.
    struct StateGauges {
        /// By state index.
        gauges: [Gauge; 3],
        /// The index of the state the gauges show.
        shown: AtomicU8,
    }

    impl StateGauges {
        /// Written only on a change: a rejected call shows the state too.
        fn show(&self, state: CircuitState) {
            let at = index(state) as u8;
            if self.shown.swap(at, Ordering::Relaxed) == at {
                return;
            }
            for (gauge, each) in self.gauges.iter().zip(STATES) {
                gauge.set(f64::from(u8::from(each == state)));
            }
        }
    }

    /// The state's label value: `closed`, `open`, `half_open`.
    fn label(state: CircuitState) -> &'static str {
        match state {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }

    fn index(state: CircuitState) -> usize {
        match state {
            CircuitState::Closed => 0,
            CircuitState::Open => 1,
            CircuitState::HalfOpen => 2,
        }
    }

    /// Describes the metrics to the recorder, once per process.
    fn describe() {
        static DESCRIBED: Once = Once::new();
        DESCRIBED.call_once(|| {
            metrics::describe_counter!(CALLS, "Calls through the circuit breaker, by outcome");
            metrics::describe_counter!(SLOW_CALLS, "Calls that took the slow-call duration");
            metrics::describe_counter!(TRANSITIONS, "State transitions this environment made");
            metrics::describe_gauge!(STATE, "1 for the state the circuit acts on, else 0");
            metrics::describe_gauge!(
                OPEN_KEYS,
                "Keys of a keyed circuit its index names, as this environment last saw it"
            );
            metrics::describe_gauge!(
                SUSPECTED_KEYS,
                "Keys of a keyed circuit under a suspicion, named apart from the cap"
            );
            metrics::describe_counter!(
                KEYS_REFUSED_BY_CAP,
                "Keys of a keyed circuit not opened: max_open_keys reached"
            );
            metrics::describe_counter!(
                STORE_ERRORS,
                "Store calls that failed, so the circuit failed open, by kind"
            );
            metrics::describe_counter!(
                SHADOW_DECISIONS,
                "Shadow mode: what the breaker would have done, by decision"
            );
            metrics::describe_histogram!(
                DURATION,
                metrics::Unit::Seconds,
                "How long admitted calls ran"
            );
        });
    }
}

#[cfg(not(feature = "metrics"))]
mod imp {
    use crate::config::CircuitBreakerConfig;
    use crate::events::{FailureKind, ShadowDecision};
    use crate::protocol::CircuitState;
    use crate::protocol::machine::Outcome;

    /// Nothing: the `metrics` feature is off.
    pub(crate) struct CircuitMetrics;

    /// Nothing: the `metrics` feature is off.
    pub(crate) struct KeyedMetrics;

    /// Nothing: the `metrics` feature is off.
    #[inline(always)]
    pub(crate) fn store_error(_name: &str, _kind: crate::store::StoreErrorKind) {}

    impl KeyedMetrics {
        pub(crate) fn new(_name: &str) -> Self {
            Self
        }

        #[inline(always)]
        pub(crate) fn refused_by_cap(&self) {}

        #[inline(always)]
        pub(crate) fn open_keys(&self, _n: u32) {}

        #[inline(always)]
        pub(crate) fn suspected_keys(&self, _n: u32) {}
    }

    /// Nothing: the `metrics` feature is off.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct CallClock;

    impl CircuitMetrics {
        pub(crate) fn new(_name: &str, _config: &CircuitBreakerConfig, _state_gauge: bool) -> Self {
            Self
        }

        #[inline(always)]
        pub(crate) fn start(&self) -> CallClock {
            CallClock
        }

        #[inline(always)]
        pub(crate) fn succeeded(&self, _started: CallClock) {}

        #[inline(always)]
        pub(crate) fn ended(
            &self,
            _outcome: Outcome,
            _kind: FailureKind,
            _started: CallClock,
            _admitted_at: u64,
            _now: impl FnOnce() -> u64,
        ) {
        }

        #[inline(always)]
        pub(crate) fn dropped(&self) {}

        #[inline(always)]
        pub(crate) fn rejected(&self, _state: CircuitState) {}

        #[inline(always)]
        pub(crate) fn transitioned(&self, _from: CircuitState, _to: CircuitState) {}

        #[inline(always)]
        pub(crate) fn show(&self, _state: CircuitState) {}

        #[inline(always)]
        pub(crate) fn shadow_decision(&self, _decision: ShadowDecision) {}
    }
}
