//! What `charge` and `overflow-replay` both build once at start, before any order: the
//! payment client, the ledger and the overflow queue, each from its settings, and the
//! checks of those settings against each other and against the function's timeout. The
//! path an order then takes is docs/functions.md's numbered list.

use std::time::Duration;

use crate::ledger::Ledger;
use crate::overflow::OverflowQueue;
use crate::payments::{MIN_SEND_TIME, PaymentClient};

/// The three parts of the pipeline, shared by every invocation.
///
/// ```no_run
/// # async fn demo(aws: aws_config::SdkConfig) -> Result<(), String> {
/// let pipeline = payment_pipeline::Pipeline::from_env(&aws)?;
/// println!("each payment call bounded by {:?}", pipeline.payments.timeout());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The payment API (`PAYMENT_API_URL`, `PAYMENT_TIMEOUT_MS`).
    pub payments: PaymentClient,
    /// The ledger (`LEDGER_TABLE`, `LEDGER_*`).
    pub ledger: Ledger,
    /// The overflow queue (`OVERFLOW_QUEUE_URL`, `SQS_OPERATION_TIMEOUT_MS`).
    pub overflow: OverflowQueue,
}

impl Pipeline {
    /// Each part from its settings; the first invalid one is the error, naming the
    /// variable and the value, then the checks of settings against each other
    /// ([`check_settings`](Self::check_settings)).
    pub fn from_env(aws: &aws_config::SdkConfig) -> Result<Self, String> {
        let pipeline = Self {
            payments: PaymentClient::from_env().map_err(|e| e.to_string())?,
            ledger: Ledger::from_env(aws).map_err(|e| e.to_string())?,
            overflow: OverflowQueue::from_env(aws).map_err(|e| e.to_string())?,
        };
        pipeline.check_settings()?;
        Ok(pipeline)
    }

    /// What the settings alone must satisfy: a claim's lease leaves room for its put and
    /// its settle (each up to `LEDGER_OPERATION_TIMEOUT_MS`) and a charge.
    pub fn check_settings(&self) -> Result<(), String> {
        let lease = self.ledger.lease();
        let ledger = self.ledger.timeout();
        if lease < ledger * 2 + MIN_SEND_TIME {
            return Err(format!(
                "LEDGER_LEASE_SECS={} leaves no time to charge: a claim's put and its settle \
                 may take 2 × LEDGER_OPERATION_TIMEOUT_MS={} of it",
                lease.as_secs(),
                ledger.as_millis()
            ));
        }
        Ok(())
    }

    /// The longest an attempt can hold its claim: the put and the settle around the
    /// charge, or the invocation's time if that is shorter. Lambda tells a function its
    /// timeout only through each invocation's deadline, so this is checked per invocation,
    /// with `invocation` the time its deadline left it at its start.
    pub fn longest_attempt(&self, invocation: Duration) -> Duration {
        (self.payments.timeout() + self.ledger.timeout() * 2).min(invocation)
    }

    /// The lease checked against the payment timeout and the function timeout (as
    /// `invocation`, the time left at an invocation's start): an attempt still running must
    /// never be taken for a dead one (its order parked as unknown while it charges).
    pub fn check_lease(&self, invocation: Duration) -> Result<(), String> {
        let lease = self.ledger.lease();
        if self.longest_attempt(invocation) < lease {
            return Ok(());
        }
        Err(format!(
            "LEDGER_LEASE_SECS={} must exceed the longest attempt: PAYMENT_TIMEOUT_MS={} plus \
             2 × LEDGER_OPERATION_TIMEOUT_MS={}, or the function timeout if shorter ({:.1} s \
             left at this invocation's start); raise LEDGER_LEASE_SECS or lower the others",
            lease.as_secs(),
            self.payments.timeout().as_millis(),
            self.ledger.timeout().as_millis(),
            invocation.as_secs_f64()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(lease_secs: u64, ledger_ms: u64, payment_ms: u64) -> Pipeline {
        let aws = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        Pipeline {
            payments: PaymentClient::new(
                "https://pay.example.com/charges",
                Duration::from_millis(payment_ms),
                None,
            )
            .unwrap(),
            ledger: Ledger::new(
                &aws,
                "ledger".into(),
                Duration::from_secs(lease_secs),
                Duration::from_secs(86_400 * 15),
                Duration::from_millis(ledger_ms),
            ),
            overflow: OverflowQueue::new(&aws, "https://sqs/1/q".into(), Duration::from_secs(3)),
        }
    }

    #[test]
    fn the_lease_must_outlast_an_attempt_bounded_by_the_payment_or_the_function_timeout() {
        let minute = Duration::from_secs(60);
        // 60 s lease, 3 s charge + 2 × 3 s ledger: fine whatever the function timeout.
        assert!(
            pipeline(60, 3000, 3000)
                .check_lease(Duration::from_secs(900))
                .is_ok()
        );
        // A 60 s charge in a 10 s lease: an attempt could outlive its claim...
        let error = pipeline(10, 1500, 60_000).check_lease(minute).unwrap_err();
        for setting in [
            "LEDGER_LEASE_SECS=10",
            "PAYMENT_TIMEOUT_MS=60000",
            "LEDGER_OPERATION_TIMEOUT_MS=1500",
            "function timeout",
        ] {
            assert!(error.contains(setting), "{error}");
        }
        // ... unless the function ends it first.
        assert!(
            pipeline(10, 1500, 60_000)
                .check_lease(Duration::from_secs(3))
                .is_ok()
        );
    }

    #[test]
    fn a_lease_shorter_than_its_own_ledger_calls_stops_the_function() {
        let error = pipeline(2, 1500, 1000).check_settings().unwrap_err();
        assert!(error.contains("LEDGER_LEASE_SECS=2"), "{error}");
        assert!(
            error.contains("LEDGER_OPERATION_TIMEOUT_MS=1500"),
            "{error}"
        );
        assert!(pipeline(10, 1500, 1000).check_settings().is_ok());
    }
}
