//! Where the breaker reads the time: the system clock, or a [`ManualClock`] in tests
//! (public as `testing::ManualClock`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Waker;
use std::time::Duration;

/// The time source of a circuit. An enum, not a trait object, so the hot path pays one
/// branch instead of a virtual call.
#[derive(Debug, Clone, Default)]
pub(crate) enum Clock {
    #[default]
    System,
    Manual(Arc<ManualTime>),
}

/// The time of a [`ManualClock`] and the timers waiting for it to move.
#[derive(Debug, Default)]
pub(crate) struct ManualTime {
    millis: AtomicU64,
    /// Woken whenever the time is set or advanced; each checks its own instant.
    sleepers: Mutex<Vec<Waker>>,
}

impl ManualTime {
    #[inline]
    pub(crate) fn now_millis(&self) -> u64 {
        self.millis.load(Ordering::Acquire)
    }

    /// Wakes `waker` at the clock's next move.
    pub(crate) fn wake_on_move(&self, waker: &Waker) {
        let mut sleepers = self.sleepers.lock().unwrap_or_else(PoisonError::into_inner);
        if !sleepers.iter().any(|w| w.will_wake(waker)) {
            sleepers.push(waker.clone());
        }
    }

    fn moved(&self) {
        let sleepers =
            std::mem::take(&mut *self.sleepers.lock().unwrap_or_else(PoisonError::into_inner));
        for sleeper in sleepers {
            sleeper.wake();
        }
    }
}

impl Clock {
    /// Unix time in milliseconds.
    #[inline]
    pub(crate) fn now_millis(&self) -> u64 {
        match self {
            Self::System => system_millis(),
            Self::Manual(time) => time.now_millis(),
        }
    }

    /// A recent unix time in milliseconds, for the closed and open paths: one atomic load.
    /// On the system clock it is breaker's clock thread's last tick ([`TICK`] at most
    /// behind while the process runs) or [`UNKNOWN`], which no cached copy is trusted at;
    /// a manual clock's own time.
    #[inline]
    pub(crate) fn recent_millis(&self) -> u64 {
        match self {
            Self::System => RECENT.load(Ordering::Relaxed),
            Self::Manual(time) => time.now_millis(),
        }
    }

    /// How far [`recent_millis`](Self::recent_millis) may lag the clock: a copy trusted
    /// until `t` is trusted at recent times before `t` minus this, so never past `t`.
    #[inline]
    pub(crate) fn recent_lag_millis(&self) -> u64 {
        match self {
            Self::System => TICK.as_millis() as u64,
            Self::Manual(_) => 0,
        }
    }

    /// Starts the clock thread that keeps [`recent_millis`](Self::recent_millis) current,
    /// once per process, if this is the system clock.
    pub(crate) fn keep_recent(&self) {
        if matches!(self, Self::System) {
            TICKER.get_or_init(start_ticker);
        }
    }
}

/// How often the clock thread reads the clock.
pub(crate) const TICK: Duration = Duration::from_millis(5);

/// A recent time that is not known: later than every instant, so nothing is trusted at it.
pub(crate) const UNKNOWN: u64 = u64::MAX;

/// The clock thread's last reading (unix millis), or [`UNKNOWN`] before it runs.
static RECENT: AtomicU64 = AtomicU64::new(UNKNOWN);

static TICKER: std::sync::OnceLock<()> = std::sync::OnceLock::new();

/// Reads the clock into [`RECENT`] every [`TICK`], on a thread of its own: one wake-up per
/// tick (about 3 µs of CPU), none while the process is frozen. A process whose thread
/// cannot start keeps [`UNKNOWN`], and its calls read the clock themselves.
fn start_ticker() {
    // The only stores: UNKNOWN to a time before the thread runs, and back if it cannot.
    RECENT.store(system_millis(), Ordering::Relaxed);
    let started = std::thread::Builder::new()
        .name("breaker-clock".into())
        .spawn(|| {
            loop {
                std::thread::sleep(TICK);
                advance(&RECENT, system_millis());
            }
        });
    if started.is_err() {
        RECENT.store(UNKNOWN, Ordering::Relaxed);
    }
}

/// Reads the clock into the recent time now (an invocation starts): the first call after
/// Lambda thawed the environment must not judge its cached copy by the time before.
pub(crate) fn refresh_recent() {
    if TICKER.get().is_some() {
        advance(&RECENT, system_millis());
    }
}

/// Moves `recent` to `now` only forwards: the clock thread may have read the clock before
/// a freeze and store it after an invocation's refresh, and must not undo that refresh.
/// [`UNKNOWN`], the largest value, stays unknown. A wall clock stepped back leaves the
/// recent time ahead until it catches up: copies look older than they are and are read
/// again, never trusted longer.
fn advance(recent: &AtomicU64, now: u64) {
    recent.fetch_max(now, Ordering::Relaxed);
}

/// A clock that moves only when told to. Clones share one time. A guarded call's
/// deadline on this clock fires when the clock is moved past it.
#[derive(Debug, Clone)]
pub struct ManualClock {
    time: Arc<ManualTime>,
}

impl ManualClock {
    /// A clock at a fixed, realistic instant (2023-11-14T22:13:20Z).
    pub fn new() -> Self {
        Self::at_unix_millis(1_700_000_000_000)
    }

    /// A clock at the given unix time in milliseconds.
    ///
    /// ```
    /// let clock = breaker_runtime::testing::ManualClock::at_unix_millis(5_000);
    /// assert_eq!(clock.unix_millis(), 5_000);
    /// ```
    pub fn at_unix_millis(millis: u64) -> Self {
        Self {
            time: Arc::new(ManualTime {
                millis: AtomicU64::new(millis),
                sleepers: Mutex::default(),
            }),
        }
    }

    /// Moves the clock forward.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let clock = breaker_runtime::testing::ManualClock::at_unix_millis(0);
    /// clock.advance(Duration::from_millis(1500));
    /// assert_eq!(clock.unix_millis(), 1500);
    /// ```
    pub fn advance(&self, by: Duration) {
        self.time
            .millis
            .fetch_add(by.as_millis() as u64, Ordering::AcqRel);
        self.time.moved();
    }

    /// Sets the clock to the given unix time in milliseconds (it may go backwards).
    ///
    /// ```
    /// let clock = breaker_runtime::testing::ManualClock::new();
    /// clock.set_unix_millis(42);
    /// assert_eq!(clock.unix_millis(), 42);
    /// ```
    pub fn set_unix_millis(&self, millis: u64) {
        self.time.millis.store(millis, Ordering::Release);
        self.time.moved();
    }

    /// The current time in unix milliseconds.
    ///
    /// ```
    /// assert_eq!(breaker_runtime::testing::ManualClock::new().unix_millis(), 1_700_000_000_000);
    /// ```
    pub fn unix_millis(&self) -> u64 {
        self.time.now_millis()
    }

    pub(crate) fn as_clock(&self) -> Clock {
        Clock::Manual(Arc::clone(&self.time))
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

/// The coarse realtime clock: a few milliseconds of resolution (plenty for a protocol in
/// seconds) at a fraction of the cost of `SystemTime::now`, which dominated the hot path.
/// Read through libc (rustix's `use-libc`), which finds the vDSO in a way valgrind supports.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[inline]
fn system_millis() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    // No overflow check: seconds since 1970 times 1000 fit in a u64 for 500 million years.
    now.tv_sec as u64 * 1000 + now.tv_nsec as u64 / 1_000_000
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[inline]
fn system_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_tracks_wall_time_within_its_resolution() {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let coarse = Clock::System.now_millis();
        assert!(coarse.abs_diff(wall) < 50, "coarse {coarse} vs wall {wall}");
    }

    #[test]
    fn a_recent_time_only_moves_forwards_and_unknown_stays_unknown() {
        let recent = AtomicU64::new(1_000);
        advance(&recent, 900);
        assert_eq!(
            recent.load(Ordering::Relaxed),
            1_000,
            "an older reading is ignored"
        );
        advance(&recent, 1_005);
        assert_eq!(recent.load(Ordering::Relaxed), 1_005);
        let unknown = AtomicU64::new(UNKNOWN);
        advance(&unknown, 1_005);
        assert_eq!(unknown.load(Ordering::Relaxed), UNKNOWN);
    }

    #[test]
    fn the_recent_time_never_goes_backwards_under_refreshes_and_ticks() {
        Clock::System.keep_recent();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|threads| {
            // Refreshes racing each other and the clock thread: each reads the clock, then
            // writes; a plain store from a slower one would move the time back.
            for _ in 0..3 {
                threads.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        refresh_recent();
                    }
                });
            }
            let first = Clock::System.recent_millis();
            let mut last = first;
            let mut went_back = None;
            let until = std::time::Instant::now() + Duration::from_millis(300);
            while went_back.is_none() && std::time::Instant::now() < until {
                let now = Clock::System.recent_millis();
                if now < last {
                    went_back = Some((last, now));
                }
                last = now;
            }
            stop.store(true, Ordering::Relaxed);
            assert_ne!(first, UNKNOWN, "the clock thread started");
            assert!(last > first, "the recent time moved in 300 ms");
            assert_eq!(went_back, None, "the recent time went back (from, to)");
        });
    }
}
