//! Trip policies beyond consecutive failures: a failure rate and a slow-call rate over a
//! sliding window of this environment's calls, counted without a lock or an allocation.
//!
//! - [`count_window`]: the last N calls, two bits each;
//! - [`time_window`]: the calls of the last N seconds, one bucket per second.
//!
//! The windows only count; whether counts trip the circuit is the state machine's
//! decision ([`crate::protocol::machine::trips_on_rate`]).
//!
//! Counting is exact for calls recorded one at a time. Calls that several threads record at
//! the same instant may overwrite each other's slot or count (the window then holds fewer
//! calls than were made); the counts never drift from what the window holds.

use std::time::Duration;

pub(crate) mod adaptive;
mod count_window;
mod time_window;

pub use adaptive::AdaptivePolicy;
pub(crate) use count_window::CountWindow;
pub(crate) use time_window::TimeWindow;

use crate::protocol::Counts;

/// The calls a failure rate or a slow-call rate is computed over, per execution
/// environment.
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::{CircuitBreakerConfig, SlidingWindow};
///
/// let config = CircuitBreakerConfig::builder()
///     .failure_rate(50)
///     .sliding_window(SlidingWindow::Time(Duration::from_secs(60)))
///     .build()?;
/// assert_eq!(config.sliding_window(), Some(SlidingWindow::Time(Duration::from_secs(60))));
/// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
/// ```
///
/// `#[non_exhaustive]`: later versions may add kinds of window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlidingWindow {
    /// The last N calls (1 to 10,000).
    Calls(u32),
    /// The calls of the last whole seconds (1 s to 1 h), counted in one bucket per second.
    Time(Duration),
}

/// How one finished call counts in a window: bit flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample(u8);

impl Sample {
    const FAILED: u8 = 1;
    const SLOW: u8 = 2;

    /// A call that failed (as the classifier says) and/or took at least the slow-call
    /// duration.
    #[inline]
    pub(crate) fn new(failed: bool, slow: bool) -> Self {
        Self((u8::from(failed) * Self::FAILED) | (u8::from(slow) * Self::SLOW))
    }

    #[inline]
    pub(crate) fn failed(self) -> bool {
        self.0 & Self::FAILED != 0
    }

    #[inline]
    pub(crate) fn slow(self) -> bool {
        self.0 & Self::SLOW != 0
    }

    /// The flags: bit 0 failed, bit 1 slow.
    #[inline]
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// Neither failed nor slow: it cannot raise a rate.
    #[inline]
    pub(crate) fn good(self) -> bool {
        self.0 == 0
    }
}

/// One circuit's window, of either kind.
#[derive(Debug)]
pub(crate) enum Window {
    Calls(CountWindow),
    Time(TimeWindow),
}

impl Window {
    /// An empty window. `window` is validated: within the maxima above.
    pub(crate) fn new(window: SlidingWindow) -> Self {
        match window {
            SlidingWindow::Calls(calls) => Self::Calls(CountWindow::new(calls)),
            SlidingWindow::Time(span) => Self::Time(TimeWindow::new(span.as_secs())),
        }
    }

    /// Adds one call; returns what the window holds when `sample` could raise a rate
    /// (it failed or was slow), `None` for a good call.
    #[inline]
    pub(crate) fn record(&self, sample: Sample, now_millis: u64) -> Option<Counts> {
        match self {
            Self::Calls(window) => window.record(sample),
            Self::Time(window) => window.record(sample, now_millis),
        }
    }

    /// What the window holds at `now_millis`.
    pub(crate) fn counts(&self, now_millis: u64) -> Counts {
        match self {
            Self::Calls(window) => window.counts(),
            Self::Time(window) => window.counts(now_millis),
        }
    }

    /// Empties the window (the circuit changed state).
    pub(crate) fn reset(&self) {
        match self {
            Self::Calls(window) => window.reset(),
            Self::Time(window) => window.reset(),
        }
    }
}

#[cfg(test)]
mod tests;
