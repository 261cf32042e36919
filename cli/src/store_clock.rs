//! The store's clock, as its answers tell it (their `Date` header), against this machine's:
//! an override's end and the reset condition are computed from the operator's clock, so a
//! laptop far ahead could erase a live timed override, and one behind could set an
//! override that ends before it was meant to. Writes are refused beyond a bound.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use anyhow::bail;
use aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::primitives::{DateTime, DateTimeFormat};

/// The last `Date` the store answered with, and this machine's time when it arrived.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoreClock {
    last: Arc<Mutex<Option<Observed>>>,
}

#[derive(Debug, Clone, Copy)]
struct Observed {
    /// The store's time, to the second (the header's resolution).
    store: SystemTime,
    /// This machine's time when the answer arrived.
    local: SystemTime,
}

impl Intercept for StoreClock {
    fn name(&self) -> &'static str {
        "StoreClock"
    }

    fn read_after_transmit(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let local = SystemTime::now();
        let date = context.response().headers().get("date");
        let store = date
            .and_then(|date| DateTime::from_str(date, DateTimeFormat::HttpDate).ok())
            .and_then(|date| SystemTime::try_from(date).ok());
        if let Some(store) = store {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            *last = Some(Observed { store, local });
        }
        Ok(())
    }
}

impl StoreClock {
    /// Refuses when this machine's clock and the store's, at its last answer, differ by
    /// more than `max_skew` (the `Date` is whole seconds: a second more is allowed ahead).
    /// Without an answer that had a `Date`, warns and lets the write go.
    pub(crate) fn check(&self, max_skew: Duration) -> anyhow::Result<()> {
        let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(Observed { store, local }) = last else {
            eprintln!(
                "warning: the store's answers carried no Date header, so this machine's clock \
                 could not be checked against it"
            );
            return Ok(());
        };
        let (off, direction) = match local.duration_since(store) {
            Ok(ahead) => (ahead.saturating_sub(Duration::from_secs(1)), "ahead of"),
            Err(behind) => (behind.duration(), "behind"),
        };
        if off > max_skew {
            bail!(
                "this machine's clock is {} {direction} the store's (its Date header); an \
                 override's end and the checks of close and release are computed from this \
                 clock, so nothing was written. Set the clock right (NTP), or pass \
                 --max-clock-skew with a longer bound (now {}) if you must",
                humantime::format_duration(Duration::from_secs(off.as_secs())),
                humantime::format_duration(max_skew)
            );
        }
        Ok(())
    }
}
