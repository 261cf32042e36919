//! This machine's clock, as the protocol counts time.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix seconds now (0 before the epoch).
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}
