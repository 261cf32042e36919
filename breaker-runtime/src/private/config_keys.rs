//! `config = expr` and the config keys, as builder calls on the defaults or on that config.

use std::time::Duration;

use crate::config::{CircuitBreakerConfig, CircuitBreakerConfigBuilder};
use crate::policy::SlidingWindow;
use crate::protocol::RecoveryBackoff;

/// What `config =` accepts.
pub trait IntoConfig {
    /// The config.
    fn into_config(self) -> CircuitBreakerConfig;
}

impl IntoConfig for CircuitBreakerConfig {
    fn into_config(self) -> CircuitBreakerConfig {
        self
    }
}

impl IntoConfig for &CircuitBreakerConfig {
    fn into_config(self) -> CircuitBreakerConfig {
        self.clone()
    }
}

/// `config = expr`.
pub fn config(config: impl IntoConfig) -> CircuitBreakerConfig {
    config.into_config()
}

/// The config the attribute builds: the defaults (or a `config = expr`) with the
/// attribute's config keys applied as builder calls, one method per key, named and typed
/// as the key (`.failure_threshold(2u32)`, `.recovery_timeout(60u64)`, `.shadow(true)`).
/// The methods come from breaker-rules' table of settings, each the row's builder call.
#[derive(Debug)]
pub struct InlineConfig {
    builder: CircuitBreakerConfigBuilder,
}

/// The defaults, for the inline keys.
pub fn inline_config() -> InlineConfig {
    InlineConfig {
        builder: CircuitBreakerConfig::builder(),
    }
}

impl InlineConfig {
    /// `config = expr`, for the keys allowed beside it (`shadow`).
    pub fn over(config: CircuitBreakerConfig) -> Self {
        Self {
            builder: config.into_builder(),
        }
    }

    /// The built config. The macro checked every value at compile time against the same
    /// rules, so the build cannot fail here.
    pub fn build(self) -> CircuitBreakerConfig {
        checked(self.builder)
    }
}

/// One method of [`InlineConfig`] per row of the table that has a builder call.
macro_rules! inline_setters {
    ($(
        $key:ident: $group:ident, $value:expr, default $default:literal, builder $builder:literal,
        section $section:literal, doc $doc:literal
        $(=> |$b:ident, $v:ident: $ty:ty| $apply:expr)?;
    )*) => {
        impl InlineConfig {$($(
            #[doc = concat!("`", stringify!($key), "`: ", $doc, " (default ", $default, ").")]
            pub fn $key(self, $v: $ty) -> Self {
                let $b = self.builder;
                Self { builder: $apply }
            }
        )?)*}
    };
}

breaker_rules::knobs!(inline_setters);

/// The built config; an error here is a value the attribute should have refused.
fn checked(builder: CircuitBreakerConfigBuilder) -> CircuitBreakerConfig {
    builder.build().unwrap_or_else(|error| {
        panic!("#[circuit_breaker] let through a value its compile-time check refuses: {error}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_and_fleet_keys_reach_the_config() {
        let config = inline_config()
            .call_timeout_ms(2_500)
            .fleet_failure_threshold(20)
            .build();
        assert_eq!(config.call_timeout(), Some(Duration::from_millis(2_500)));
        let fleet = config.fleet_policy().expect("fleet detection stays on");
        assert_eq!((fleet.failure_threshold, fleet.failure_rate), (20, 50));

        let local_only = inline_config().fleet_detection(false).build();
        assert_eq!(local_only.call_timeout(), None);
        assert_eq!(local_only.fleet_policy(), None);
    }

    #[test]
    fn the_halves_of_a_slow_call_rate_and_a_time_window_reach_the_config() {
        let config = inline_config()
            .slow_call_duration_ms(800)
            .slow_call_rate(60)
            .window_secs(30)
            .build();
        assert_eq!(
            config.slow_call_duration(),
            Some(Duration::from_millis(800))
        );
        assert_eq!(config.slow_call_rate(), Some(60));
        assert_eq!(
            config.sliding_window(),
            Some(SlidingWindow::Time(Duration::from_secs(30)))
        );
    }

    #[test]
    fn the_documented_fleet_defaults_are_the_defaults() {
        let fleet = crate::FleetPolicy::default();
        let default = |key| breaker_rules::knobs::knob(key).expect("a key").default;
        let threshold = fleet.failure_threshold.to_string();
        assert_eq!(default("fleet_failure_threshold"), threshold);
        assert_eq!(
            default("fleet_failure_rate"),
            fleet.failure_rate.to_string()
        );
    }
}
