//! What a rate policy judges: the counts of a window and the rates that trip.

/// What a window holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) calls: u32,
    pub(crate) failures: u32,
    pub(crate) slow: u32,
}

/// The rates that trip a circuit, from a validated config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rates {
    /// Percent of failed calls, 1 to 100.
    pub(crate) failure: Option<u8>,
    /// Percent of slow calls, 1 to 100.
    pub(crate) slow: Option<u8>,
    /// Calls the window must hold before a rate is judged.
    pub(crate) minimum_calls: u32,
}
