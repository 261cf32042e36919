use std::time::Duration;

use super::CircuitBreakerConfig;
use crate::policy::SlidingWindow;

#[test]
fn defaults_match_powertools() {
    let c = CircuitBreakerConfig::default();
    assert_eq!(c.failure_threshold(), 5);
    assert_eq!(c.recovery_timeout(), Duration::from_secs(30));
    assert_eq!(c.success_threshold(), 3);
    assert_eq!(c.local_cache_max_age(), Duration::from_secs(5));
    assert_eq!(c.recovery_jitter(), Duration::from_secs(120));
    assert!(c.store_timeout() <= Duration::from_secs(1));
}

#[test]
fn every_bad_field_is_named_with_its_value() {
    let cases = [
        (
            CircuitBreakerConfig::builder().failure_threshold(0),
            "failure_threshold must be at least 1, got 0",
        ),
        (
            CircuitBreakerConfig::builder().success_threshold(0),
            "success_threshold must be at least 1, got 0",
        ),
        (
            CircuitBreakerConfig::builder().recovery_timeout(Duration::from_millis(999)),
            "recovery_timeout must be at least 1s, got 999ms",
        ),
        (
            CircuitBreakerConfig::builder().store_timeout(Duration::ZERO),
            "store_timeout must be at least 1ms, got 0ns",
        ),
        (
            CircuitBreakerConfig::builder().probe_lease(Duration::from_millis(10)),
            "probe_lease must be at least 1s, got 10ms",
        ),
        (
            CircuitBreakerConfig::builder().probe_lease(Duration::from_secs(3601)),
            "probe_lease must be at most 3600s, got 3601s",
        ),
        (
            CircuitBreakerConfig::builder().recovery_timeout(Duration::MAX),
            "recovery_timeout must be at most 31536000s, got 18446744073709551615.999999999s",
        ),
        (
            CircuitBreakerConfig::builder().local_cache_max_age(Duration::from_secs(u64::MAX)),
            "local_cache_max_age must be at most 31536000s, got 18446744073709551615s",
        ),
        (
            CircuitBreakerConfig::builder().store_error_backoff(Duration::from_secs(400 * 86400)),
            "store_error_backoff must be at most 31536000s, got 34560000s",
        ),
    ];
    for (builder, message) in cases {
        assert_eq!(builder.build().unwrap_err().to_string(), message);
    }
}

#[test]
fn settings_that_bound_each_other_are_checked_together_naming_both() {
    let b = CircuitBreakerConfig::builder;
    let secs = Duration::from_secs;
    let cases = [
        (
            b().call_timeout(secs(29)),
            "probe_lease (30s) must cover call_timeout (29s) and two store_timeout (1s) \
             calls, the election's write and the outcome's: at least 31s",
        ),
        (
            b().call_timeout(secs(10))
                .store_timeout(secs(5))
                .probe_lease(secs(19)),
            "probe_lease (19s) must cover call_timeout (10s) and two store_timeout (5s) \
             calls, the election's write and the outcome's: at least 20s",
        ),
        (
            b().deadline_margin(Duration::from_millis(200)),
            "deadline_margin (200ms) must be at least store_timeout (1s)",
        ),
        (
            b().store_timeout(secs(2)).deadline_margin(secs(1)),
            "deadline_margin (1s) must be at least store_timeout (2s)",
        ),
    ];
    for (builder, message) in cases {
        let error = builder.build().unwrap_err().to_string();
        assert!(error.starts_with(message), "{error}");
    }
    // At the bounds, and without a call timeout (the lease then bounds nothing).
    let exact = b()
        .call_timeout(secs(28))
        .deadline_margin(secs(1))
        .build()
        .unwrap();
    assert_eq!(exact.call_timeout(), Some(secs(28)));
    assert!(b().probe_lease(secs(1)).build().is_ok());
    assert_eq!(
        b().store_timeout(secs(3))
            .build()
            .unwrap()
            .deadline_margin(),
        secs(3),
        "the default margin follows the store timeout"
    );
}

#[test]
fn rate_policies_are_checked_whole() {
    let b = CircuitBreakerConfig::builder;
    let cases = [
        (
            b().failure_rate(0),
            "failure_rate must be at least 1, got 0",
        ),
        (
            b().failure_rate(101),
            "failure_rate must be at most 100 (percent), got 101",
        ),
        (
            b().slow_calls(Duration::from_secs(1), 0),
            "slow_call_rate must be at least 1, got 0",
        ),
        (
            b().slow_calls(Duration::ZERO, 50),
            "slow_call_duration must be at least 1ms, got 0ns",
        ),
        (
            b().failure_rate(50).sliding_window(SlidingWindow::Calls(0)),
            "sliding_window must be at least 1, got 0",
        ),
        (
            b().failure_rate(50)
                .sliding_window(SlidingWindow::Calls(10_001)),
            "sliding_window must be at most 10000 calls, got 10001 calls",
        ),
        (
            b().failure_rate(50)
                .sliding_window(SlidingWindow::Time(Duration::ZERO)),
            "sliding_window must be at least 1s, got 0ns",
        ),
        (
            b().failure_rate(50)
                .sliding_window(SlidingWindow::Time(Duration::from_millis(1500))),
            "sliding_window must be whole seconds, got 1.5s",
        ),
        (
            b().failure_rate(50)
                .sliding_window(SlidingWindow::Calls(5))
                .minimum_calls(6),
            "minimum_calls must be at most 5 (the window's length), got 6",
        ),
        (
            b().failure_rate(50).failure_threshold(3),
            "failure_threshold cannot be combined with failure_rate or slow_calls: a \
             circuit trips on consecutive failures or on a rate",
        ),
        (
            b().minimum_calls(3),
            "sliding_window and minimum_calls need failure_rate or slow_calls",
        ),
    ];
    for (builder, message) in cases {
        assert_eq!(builder.build().unwrap_err().to_string(), message);
    }
}

#[test]
fn rate_policy_defaults() {
    let consecutive = CircuitBreakerConfig::default();
    assert_eq!(
        (consecutive.sliding_window(), consecutive.minimum_calls()),
        (None, None)
    );
    let rate = CircuitBreakerConfig::builder()
        .failure_rate(50)
        .build()
        .unwrap();
    assert_eq!(rate.sliding_window(), Some(SlidingWindow::Calls(100)));
    assert_eq!(rate.minimum_calls(), Some(10));
    let short = CircuitBreakerConfig::builder()
        .failure_rate(50)
        .sliding_window(SlidingWindow::Calls(4))
        .build()
        .unwrap();
    assert_eq!(short.minimum_calls(), Some(4));
}

#[test]
fn a_cache_age_above_the_recovery_timeout_is_valid() {
    let c = CircuitBreakerConfig::builder()
        .recovery_timeout(Duration::from_secs(2))
        .local_cache_max_age(Duration::from_secs(60))
        .build()
        .unwrap();
    assert_eq!(c.local_cache_max_age(), Duration::from_secs(60));
}

#[test]
fn zero_cache_age_is_valid() {
    let c = CircuitBreakerConfig::builder()
        .local_cache_max_age(Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!(c.local_cache_max_age(), Duration::ZERO);
}
