//! A token bucket in front of Cost Explorer. The bucket is per execution environment: each
//! warm environment holds its own, so `CE_REQUESTS_PER_SECOND` bounds one environment's
//! rate, and the function's total is that times its concurrent environments. Cost Explorer's
//! quota is per account and shared by every caller: keep the rate times the function's
//! concurrent environments (cap them with reserved concurrency) within it.

use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

/// Allows `rate` requests per second on average, bursts of up to `burst`.
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled_at: Instant,
}

impl TokenBucket {
    /// A full bucket. `rate` and `burst` are clamped to sane minimums.
    pub fn new(rate: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: if rate.is_finite() && rate > 0.0 {
                rate
            } else {
                1.0
            },
            burst,
            state: Mutex::new(State {
                tokens: burst,
                refilled_at: Instant::now(),
            }),
        }
    }

    /// Waits until a token is available and takes it.
    pub async fn acquire(&self) {
        loop {
            let wait = {
                let mut state = self.state.lock().await;
                let now = Instant::now();
                let elapsed = now.duration_since(state.refilled_at).as_secs_f64();
                state.tokens = (state.tokens + elapsed * self.rate).min(self.burst);
                state.refilled_at = now;
                if state.tokens >= 1.0 {
                    state.tokens -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - state.tokens) / self.rate)
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_burst_passes_then_requests_are_spaced_by_the_rate() {
        let bucket = TokenBucket::new(20.0, 3);
        let start = Instant::now();
        for _ in 0..3 {
            bucket.acquire().await;
        }
        assert!(
            start.elapsed() < Duration::from_millis(20),
            "{:?}",
            start.elapsed()
        );
        bucket.acquire().await;
        bucket.acquire().await;
        // Two more tokens at 20/s: about 100 ms.
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(90), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    }
}
