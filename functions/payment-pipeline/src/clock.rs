//! The wall clock as the pipeline records it: Unix seconds in the ledger's items and the
//! queue's attributes, Unix milliseconds in a metric line.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix seconds now.
pub fn unix_now() -> u64 {
    since_epoch().as_secs()
}

/// Unix milliseconds now.
pub fn unix_millis() -> u64 {
    since_epoch().as_millis() as u64
}

/// Zero for a clock set before 1970.
fn since_epoch() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
