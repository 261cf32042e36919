//! The builder's settings of how a circuit comes back: how long a failure may ask it to
//! stay open, and the slow start after a close.

use std::time::Duration;

use super::builder::CircuitBreakerConfigBuilder;

impl CircuitBreakerConfigBuilder {
    /// The longest opening a failure may ask for (whole seconds, 1 s to 1 h; default
    /// 300 s): a failure classified [`Outcome::OpenFor`](crate::Outcome::OpenFor) (a
    /// `Retry-After`) opens the circuit for the time it gives, at most this, so a bad header
    /// cannot open a circuit for a day.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::CircuitBreakerConfig;
    /// let config = CircuitBreakerConfig::builder().max_open_for(Duration::from_secs(60)).build().unwrap();
    /// assert_eq!(config.max_open_for(), Duration::from_secs(60));
    /// assert_eq!(CircuitBreakerConfig::default().max_open_for(), Duration::from_secs(300));
    /// ```
    pub fn max_open_for(mut self, longest: Duration) -> Self {
        self.config.max_open_for = longest;
        self
    }

    /// A slow start after each close (opt-in; default none, every call admitted at once):
    /// for `ramp` (whole seconds, 1 s to 1 h) after this environment sees the circuit close
    /// (its own probe's close, or a read that shows another environment's or Powertools'),
    /// it admits a share of its calls rising linearly from a tenth to all; the others take
    /// the open path with [`StopReason::SlowStart`](crate::StopReason::SlowStart). A
    /// downstream back from an outage with cold caches or scaled-in capacity gets the
    /// fleet's calls over the ramp, not its whole peak at once; a failure during the ramp
    /// counts as it does when closed. 120 s is the ramp `docs/scale.md` measures.
    ///
    /// ```
    /// use std::time::Duration;
    /// use breaker_runtime::CircuitBreakerConfig;
    /// let config = CircuitBreakerConfig::builder().slow_start(Duration::from_secs(120)).build().unwrap();
    /// assert_eq!(config.slow_start(), Some(Duration::from_secs(120)));
    /// let err = CircuitBreakerConfig::builder().slow_start(Duration::from_millis(1500)).build().unwrap_err();
    /// assert!(err.to_string().contains("slow_start"));
    /// ```
    pub fn slow_start(mut self, ramp: Duration) -> Self {
        self.config.slow_start = Some(ramp);
        self
    }
}
