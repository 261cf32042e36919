//! The system clock as unix time: the clock shared by a test and the processes it starts.

use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in milliseconds (0 if the clock is before 1970).
pub fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Unix time in whole seconds: the unit of the DynamoDB item's timestamps.
pub fn unix_secs() -> u64 {
    unix_millis() / 1000
}
