//! `ClosedCounts`: what a closed circuit counts towards a trip, without a lock: the
//! consecutive failures, or a rate policy's window of recent calls.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::clock::Clock;
use crate::config::{CircuitBreakerConfig, millis};
use crate::policy::adaptive::{Answer, Throttle};
use crate::policy::{Sample, Window};
use crate::protocol::Rates;
use crate::protocol::machine::{self, Outcome, Thresholds};

/// The closed state's counts of one circuit.
pub(super) struct ClosedCounts {
    /// Consecutive counted failures; [`WINDOWED`] under a rate policy.
    failures: AtomicU32,
    /// A rate policy's window of recent calls, and its rates; `None`: consecutive failures.
    window: Option<(Window, Rates)>,
    /// The adaptive policy's counts (then `failures` holds [`WINDOWED`] too).
    adaptive: Option<Throttle>,
    /// From this many milliseconds on a call is slow (a slow-call rate is set).
    slow_call_millis: Option<u64>,
    /// The circuit's clock, read when a call's end is timed.
    clock: Clock,
    /// Calls counted while closed, for the fleet's reports: a load and a store, no lock
    /// prefix (an increment lost under contention only blurs an estimate).
    calls: AtomicU64,
}

impl ClosedCounts {
    pub(super) fn new(config: &CircuitBreakerConfig) -> Self {
        let window = config.sliding_window().map(|window| {
            let rates = Rates {
                failure: config.failure_rate(),
                slow: config.slow_call_rate(),
                minimum_calls: config.minimum_calls().unwrap_or(1),
            };
            (Window::new(window), rates)
        });
        let adaptive = config.adaptive().map(Throttle::new);
        Self {
            failures: AtomicU32::new(counts_start(window.is_some() || adaptive.is_some())),
            adaptive,
            slow_call_millis: config.slow_call_duration().map(millis),
            window,
            clock: config.clock.clone(),
            calls: AtomicU64::new(0),
        }
    }

    /// Counts a closed call's outcome; `started`: when it was admitted (unix millis, read
    /// only when the policy needs it). Returns the failure count when the machine says it
    /// trips the circuit.
    #[inline]
    pub(super) fn count(
        &self,
        outcome: Outcome,
        started: u64,
        thresholds: &Thresholds,
    ) -> Option<u32> {
        // A hint of no time asks for nothing: counted below as an ordinary failure.
        if outcome.asked_open_for().is_some() {
            return Some(self.count_asked_open(started));
        }
        if let Some(throttle) = &self.adaptive {
            return self.count_adaptive(throttle, outcome);
        }
        if let Some((window, rates)) = &self.window {
            if outcome != Outcome::Success {
                self.count_call();
            }
            let (slow, at) = self.timed(started);
            let sample = match outcome {
                Outcome::Success => Sample::new(false, slow),
                Outcome::Failure | Outcome::OpenFor(_) | Outcome::Overloaded => {
                    Sample::new(true, slow)
                }
                Outcome::Ignored => return None,
            };
            let counts = window.record(sample, at)?;
            return machine::trips_on_rate(counts, rates).then_some(counts.failures);
        }
        match outcome {
            Outcome::Success => {
                self.note_success(started);
                None
            }
            Outcome::Failure | Outcome::OpenFor(_) | Outcome::Overloaded => {
                self.count_call();
                let failures = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
                machine::trips(failures, thresholds).then_some(failures)
            }
            Outcome::Ignored => None,
        }
    }

    /// Counts a failure that asked to stay away ([`Outcome::OpenFor`]): it opens the
    /// circuit whatever the counts say. Returns the failures counted with it.
    #[cold]
    fn count_asked_open(&self, started: u64) -> u32 {
        if let Some(throttle) = &self.adaptive {
            self.count_call();
            let now = self.clock.now_millis();
            return throttle.record(Answer::Failed, now).consecutive;
        }
        self.count_call();
        if let Some((window, _)) = &self.window {
            let (slow, at) = self.timed(started);
            return window
                .record(Sample::new(true, slow), at)
                .map_or(1, |counts| counts.failures.max(1));
        }
        self.failures.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A closed call succeeded: the consecutive failures start again, or the window counts
    /// a good call. False when the call was slow: [`count`](Self::count) must count it,
    /// out of line (it may trip the circuit).
    #[inline]
    pub(super) fn note_success(&self, started: u64) -> bool {
        self.count_call();
        // One load decides: a healthy circuit under the default policy reads 0 and never
        // writes the shared cache line; a rate policy's circuit holds WINDOWED.
        if self.failures.load(Ordering::Relaxed) != 0 {
            return self.note_success_after_failures(started);
        }
        true
    }

    /// [`note_success`](Self::note_success) after failures, or under a rate policy. Out
    /// of line: inlined, the window's bookkeeping added about 25 instructions to every
    /// call of the default policy, which never needs it.
    #[inline(never)]
    fn note_success_after_failures(&self, started: u64) -> bool {
        if let Some(throttle) = &self.adaptive {
            throttle.record(Answer::Accepted, self.clock.now_millis());
            return true;
        }
        let Some((window, _)) = &self.window else {
            self.failures.store(0, Ordering::Relaxed);
            return true;
        };
        let (slow, at) = self.timed(started);
        if slow {
            return false;
        }
        window.record(Sample::new(false, false), at);
        true
    }

    #[inline]
    fn count_call(&self) {
        self.calls.store(
            self.calls.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }

    /// Closed calls counted so far.
    pub(super) fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Consecutive counted failures, under the consecutive-failures policy.
    pub(super) fn consecutive(&self) -> Option<u32> {
        match (&self.window, &self.adaptive) {
            (None, None) => Some(self.failures.load(Ordering::Relaxed)),
            _ => None,
        }
    }

    /// The adaptive policy's counts, if the circuit runs it.
    pub(super) fn throttle(&self) -> Option<&Throttle> {
        self.adaptive.as_ref()
    }

    /// A closed call's outcome under the adaptive policy: counted in its throttle; the
    /// failures in a row when a total outage opens the circuit.
    #[cold]
    fn count_adaptive(&self, throttle: &Throttle, outcome: Outcome) -> Option<u32> {
        let answer = match outcome {
            Outcome::Success => Answer::Accepted,
            Outcome::Failure | Outcome::OpenFor(_) => Answer::Failed,
            Outcome::Overloaded => Answer::Overloaded,
            // Changes nothing, as under every policy.
            Outcome::Ignored => return None,
        };
        // A success comes here only from a sampled call, which the closed path's
        // `note_success` did not count.
        self.count_call();
        let counted = throttle.record(answer, self.clock.now_millis());
        counted.opens.then_some(counted.consecutive)
    }

    /// Whether a call admitted at `started` and ending now was slow, and the time it
    /// counts at in a window: its end when slow calls are timed, else its admission.
    #[inline]
    fn timed(&self, started: u64) -> (bool, u64) {
        match self.slow_call_millis {
            Some(slow) => {
                let now = self.clock.now_millis();
                (now.saturating_sub(started) >= slow, now)
            }
            None => (false, started),
        }
    }

    /// Whether a permit must carry its admission time: a slow-call rate times calls, a
    /// time-based window places them.
    #[inline]
    pub(super) fn times_calls(&self) -> bool {
        matches!(self.window, Some((Window::Time(_), _))) || self.slow_call_millis.is_some()
    }

    /// How a probe that ended with `outcome` counts: a slow probe fails.
    pub(super) fn probe_outcome(&self, outcome: Outcome, started: u64) -> Outcome {
        match outcome {
            Outcome::Success if self.timed(started).0 => Outcome::Failure,
            outcome => outcome,
        }
    }

    /// The counts start again (the circuit changed state).
    pub(super) fn reset(&self) {
        let windowed = self.window.is_some() || self.adaptive.is_some();
        self.failures
            .store(counts_start(windowed), Ordering::Relaxed);
        if let Some(throttle) = &self.adaptive {
            throttle.reset();
        }
        if let Some((window, _)) = &self.window {
            window.reset();
        }
    }

    /// The failures a closed circuit reports now: consecutive, or in the window.
    pub(super) fn failures(&self) -> u32 {
        if let Some(throttle) = &self.adaptive {
            return throttle.consecutive();
        }
        match &self.window {
            None => self.failures.load(Ordering::Relaxed),
            Some((window, _)) => window.counts(self.clock.now_millis()).failures,
        }
    }
}

/// What [`ClosedCounts::failures`] holds under a rate policy, which counts in its window
/// instead: never 0, so the closed path's one load sends every success to the window.
const WINDOWED: u32 = u32::MAX;

/// [`ClosedCounts::failures`] when the counts start.
fn counts_start(windowed: bool) -> u32 {
    match windowed {
        true => WINDOWED,
        false => 0,
    }
}
