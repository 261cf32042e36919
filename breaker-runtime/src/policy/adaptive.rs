//! The adaptive policy: in a brownout, shed a share of the calls computed from the recent
//! successes and failures, instead of all or nothing.
//!
//! Google's client-side throttling (the SRE book, "Handling Overload") sheds a call with
//! probability `max(0, (requests − K × accepts) / (requests + 1))`, where `requests` counts
//! every call wanted (shed ones included) and `accepts` the calls the downstream took. The
//! share settles where the admitted calls are K times the accepted ones: a downstream that
//! serves half the load gets about K halves of it. That only works for failures that
//! shedding reduces. A downstream failing 30 % of calls whatever the load gains nothing from
//! shedding, and the formula with K below 1/0.7 sheds it to nothing. So the policy keeps
//! two terms ([`Throttle::share`]):
//!
//! - failures ([`Outcome::Failure`](crate::Outcome::Failure)) against K = 2: nothing is
//!   shed while more than half the calls succeed, then a share growing to all;
//! - load sheds ([`Outcome::Overloaded`](crate::Outcome::Overloaded), a 429/503 without a
//!   hint) against K = 1.03: the admitted calls settle a little above what the
//!   downstream serves (about 10 % of them turned away in the brownout-capacity
//!   scenario). A window without a load shed sheds nothing for load, so the share drops
//!   as soon as the downstream stops turning calls away. K near 1 rises slowly: one
//!   environment alone, turned away now and then, admits less than the downstream could
//!   serve; a fleet's many environments do not.
//!
//! The formula needs about 19 requests to shed 95 % and, with a window of successes
//! behind it, seconds more. A total outage opens the circuit, for the whole fleet, after
//! [`consecutive_failures`](AdaptivePolicy::consecutive_failures) failures in a row (15 by
//! default: at 30 % failing, a run that long starts once in 100 million calls), and the
//! fleet rule opens it for quiet fleets. Load sheds neither count towards the run nor end
//! it: an overloaded downstream is shed, not opened.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::protocol::EpochTally;

/// The adaptive policy's settings: opt-in with
/// [`adaptive`](crate::CircuitBreakerConfigBuilder::adaptive).
///
/// `#[non_exhaustive]`, its fields private: start from [`Default`] (the recommended
/// setting) and change what you need with the `with_` setters.
///
/// ```
/// use std::time::Duration;
/// use breaker_runtime::{AdaptivePolicy, CircuitBreakerConfig};
///
/// let policy = AdaptivePolicy::default();
/// assert_eq!((policy.multiplier(), policy.overload_multiplier()), (2.0, 1.03));
/// assert_eq!((policy.window(), policy.minimum_requests()), (Duration::from_secs(10), 20));
/// assert_eq!(policy.consecutive_failures(), 15);
///
/// let config = CircuitBreakerConfig::builder().adaptive(policy).build()?;
/// assert_eq!(config.adaptive(), Some(policy));
///
/// let error = CircuitBreakerConfig::builder()
///     .adaptive(AdaptivePolicy::default().with_multiplier(0.5))
///     .build()
///     .unwrap_err();
/// assert!(error.to_string().contains("adaptive multiplier"));
/// # Ok::<(), breaker_runtime::CircuitBreakerConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AdaptivePolicy {
    pub(crate) multiplier: f64,
    pub(crate) overload_multiplier: f64,
    pub(crate) window: Duration,
    pub(crate) minimum_requests: u32,
    pub(crate) consecutive_failures: u32,
}

impl Default for AdaptivePolicy {
    fn default() -> Self {
        Self {
            multiplier: 2.0,
            overload_multiplier: 1.03,
            window: Duration::from_secs(10),
            minimum_requests: 20,
            consecutive_failures: 15,
        }
    }
}

impl AdaptivePolicy {
    /// K of the failures term (default 2, Google's; 1 to 10): calls are shed once fewer
    /// than 1/K of the requests succeed.
    pub const fn with_multiplier(mut self, k: f64) -> Self {
        self.multiplier = k;
        self
    }

    /// K of the load-shed term (default 1.03; 1 to 10): the admitted calls settle at K
    /// times the calls the downstream does not turn away for load.
    pub const fn with_overload_multiplier(mut self, k: f64) -> Self {
        self.overload_multiplier = k;
        self
    }

    /// The recent past the counts cover (default 10 s; whole seconds, 1 s to 10 min).
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The fewest requests in the window before this environment's own counts shed
    /// anything (default 20, at least 1): a quiet environment sheds on the fleet's
    /// evidence only.
    pub const fn with_minimum_requests(mut self, requests: u32) -> Self {
        self.minimum_requests = requests;
        self
    }

    /// The failures in a row that open the circuit for the whole fleet (default 15, at
    /// least 1): a total outage. Instead of the config's `failure_threshold`, which a
    /// downstream failing a third of the calls meets by chance every few hundred calls.
    pub const fn with_consecutive_failures(mut self, failures: u32) -> Self {
        self.consecutive_failures = failures;
        self
    }

    /// The failures in a row that open the circuit
    /// ([`with_consecutive_failures`](Self::with_consecutive_failures)).
    pub const fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// K of the failures term ([`with_multiplier`](Self::with_multiplier)).
    pub const fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// K of the load-shed term ([`with_overload_multiplier`](Self::with_overload_multiplier)).
    pub const fn overload_multiplier(&self) -> f64 {
        self.overload_multiplier
    }

    /// The window ([`with_window`](Self::with_window)).
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// The fewest requests ([`with_minimum_requests`](Self::with_minimum_requests)).
    pub const fn minimum_requests(&self) -> u32 {
        self.minimum_requests
    }
}

/// Shares are in ten-thousandths.
pub(crate) const ALL: u32 = 10_000;

/// How a finished call counts in the throttle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Succeeded: the downstream took it.
    Accepted,
    /// Failed (or was abandoned).
    Failed,
    /// Turned away for load.
    Overloaded,
}

/// One second's counts.
#[derive(Debug, Default, Clone, Copy)]
struct Bucket {
    second: u64,
    requests: u32,
    failed: u32,
    overloaded: u32,
    accepted: u32,
}

#[derive(Debug)]
struct State {
    buckets: Box<[Bucket]>,
    /// Failures in a row (load sheds left out).
    consecutive: u32,
    /// The share the fleet's counters last showed, and until when it holds.
    fleet: (u32, u64),
}

/// One circuit's adaptive counts in one environment.
#[derive(Debug)]
pub(crate) struct Throttle {
    policy: AdaptivePolicy,
    state: Mutex<State>,
}

/// What a finished call changed: whether the circuit opens, and the run it came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counted {
    pub(crate) opens: bool,
    pub(crate) consecutive: u32,
}

impl Throttle {
    pub(crate) fn new(policy: AdaptivePolicy) -> Self {
        let secs = policy.window.as_secs().clamp(1, 600) as usize;
        Self {
            policy,
            state: Mutex::new(State {
                buckets: vec![Bucket::default(); secs].into_boxed_slice(),
                consecutive: 0,
                fleet: (0, 0),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call shed at `now`: one more request.
    pub(crate) fn shed(&self, now: u64) {
        let mut state = self.lock();
        bucket(&mut state, now).requests += 1;
    }

    /// A call admitted at or before `now` ended with `answer`.
    pub(crate) fn record(&self, answer: Answer, now: u64) -> Counted {
        let mut state = self.lock();
        let b = bucket(&mut state, now);
        b.requests += 1;
        match answer {
            Answer::Accepted => b.accepted += 1,
            Answer::Failed => b.failed += 1,
            Answer::Overloaded => b.overloaded += 1,
        }
        match answer {
            Answer::Accepted => state.consecutive = 0,
            Answer::Failed => state.consecutive = state.consecutive.saturating_add(1),
            Answer::Overloaded => {}
        }
        Counted {
            opens: answer == Answer::Failed
                && state.consecutive >= self.policy.consecutive_failures.max(1),
            consecutive: state.consecutive,
        }
    }

    /// The share of calls to shed at `now`, in ten-thousandths: the larger of this
    /// environment's terms and the fleet's.
    pub(crate) fn share(&self, now: u64) -> u32 {
        let state = self.lock();
        let (failures, load) = self.terms(&state, now);
        let fleet = match now < state.fleet.1 {
            true => state.fleet.0,
            false => 0,
        };
        failures.max(load).max(fleet)
    }

    /// This environment's two terms at `now`: failures against K (0 below the minimum
    /// requests), load sheds against the overload K (0 in a window without one).
    fn terms(&self, state: &State, now: u64) -> (u32, u32) {
        let oldest = (now / 1000).saturating_sub(state.buckets.len() as u64 - 1);
        let mut sums = Bucket::default();
        for b in state
            .buckets
            .iter()
            .filter(|b| b.second >= oldest && b.requests > 0)
        {
            sums.requests += b.requests;
            sums.failed += b.failed;
            sums.overloaded += b.overloaded;
            sums.accepted += b.accepted;
        }
        let requests = f64::from(sums.requests);
        // Failures shed only on enough requests: one failure of a quiet environment's
        // few calls is no brownout. A load shed is the downstream's own word.
        let failures = match sums.requests < self.policy.minimum_requests {
            true => 0,
            false => formula(
                requests,
                f64::from(sums.accepted + sums.overloaded),
                self.policy.multiplier,
            ),
        };
        // A window without a load shed sheds nothing for load: the downstream turned
        // nothing away. Without this rule the share would fall only a few percent a window
        // once the load sheds stop, its accepts bounded by the calls admitted.
        let load = match sums.overloaded {
            0 => 0,
            _ => formula(
                requests,
                f64::from(sums.accepted + sums.failed),
                self.policy.overload_multiplier,
            ),
        };
        (failures, load)
    }

    /// The fleet's counters of a suspicion, as a report's answer showed them: the
    /// failures term over the whole epoch so far, held until the epoch ends (`until`,
    /// unix millis). The counters hold admitted calls only, so the share errs low.
    pub(crate) fn fleet_evidence(&self, tally: &EpochTally, until: u64) {
        let failures: u64 = tally.failures.iter().sum();
        let successes: u64 = tally.successes.iter().sum();
        let requests = failures.saturating_add(successes);
        if requests < u64::from(self.policy.minimum_requests) {
            return;
        }
        let share = formula(requests as f64, successes as f64, self.policy.multiplier);
        self.lock().fleet = (share, until);
    }

    /// The requests this environment's own failures term needs.
    pub(crate) fn minimum_requests(&self) -> u32 {
        self.policy.minimum_requests
    }

    /// The window, in milliseconds.
    pub(crate) fn window_millis(&self) -> u64 {
        self.policy.window.as_secs().saturating_mul(1000)
    }

    /// Failures in a row.
    pub(crate) fn consecutive(&self) -> u32 {
        self.lock().consecutive
    }

    /// The circuit changed state: what was counted belongs to a spell that ended.
    pub(crate) fn reset(&self) {
        let mut state = self.lock();
        state.buckets.fill(Bucket::default());
        state.consecutive = 0;
        state.fleet = (0, 0);
    }
}

/// The bucket of `now`'s second, emptied first if it counted an older one.
fn bucket(state: &mut State, now: u64) -> &mut Bucket {
    let second = now / 1000;
    let len = state.buckets.len() as u64;
    let b = &mut state.buckets[(second % len) as usize];
    if b.second != second {
        *b = Bucket {
            second,
            ..Bucket::default()
        };
    }
    b
}

/// `max(0, (requests − k × accepts) / (requests + 1))` in ten-thousandths.
fn formula(requests: f64, accepts: f64, k: f64) -> u32 {
    let share = (requests - k * accepts) / (requests + 1.0);
    (share.clamp(0.0, 1.0) * f64::from(ALL)) as u32
}

#[cfg(test)]
mod tests;
