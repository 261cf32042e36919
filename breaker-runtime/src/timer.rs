//! `Timer`: fires at an instant of a circuit's clock, for the deadline of a guarded call.
//!
//! On the system clock it is a tokio timer of breaker's own store runtime, so it fires
//! whatever runtime (if any, and with or without its time driver) polls the call; on a
//! `ManualClock` it fires when the clock is moved past the instant.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::clock::{Clock, ManualTime};
use crate::store_runtime;

/// A timer at one instant of a clock.
pub(crate) enum Timer {
    System(Pin<Box<tokio::time::Sleep>>),
    Manual { time: Arc<ManualTime>, at: u64 },
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::System(_) => f.write_str("Timer::System"),
            Self::Manual { at, .. } => write!(f, "Timer::Manual({at})"),
        }
    }
}

impl Timer {
    /// A timer at `at` (unix millis) on `clock`, whose time is `now`; `None` if no timer
    /// can be made (the store runtime cannot start).
    pub(crate) fn at(clock: &Clock, at: u64, now: u64) -> Option<Self> {
        match clock {
            Clock::System => store_runtime::sleep(Duration::from_millis(at.saturating_sub(now)))
                .map(Self::System),
            Clock::Manual(time) => Some(Self::Manual {
                time: Arc::clone(time),
                at,
            }),
        }
    }

    /// Ready once the instant has come.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            Self::System(sleep) => sleep.as_mut().poll(cx),
            Self::Manual { time, at } => {
                if time.now_millis() >= *at {
                    return Poll::Ready(());
                }
                time.wake_on_move(cx.waker());
                // The clock may have moved between the check and the registration.
                match time.now_millis() >= *at {
                    true => Poll::Ready(()),
                    false => Poll::Pending,
                }
            }
        }
    }
}
