//! Running the body, and how its result counts: every `Err` of a `Result`; for other
//! return types only panics.

use std::any::Any;
use std::future::{Future, IntoFuture};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::protocol::machine::Outcome;

/// Picked for `Result`: `Err` is a failure.
pub trait ResultOutcome {
    /// The outcome.
    fn __breaker_outcome(&self) -> Outcome;
}

impl<T, E> ResultOutcome for Result<T, E> {
    #[inline]
    fn __breaker_outcome(&self) -> Outcome {
        match self {
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        }
    }
}

/// Picked otherwise (autoref): a returned value is a success.
pub trait OtherOutcome {
    /// The outcome.
    #[inline]
    fn __breaker_outcome(&self) -> Outcome {
        Outcome::Success
    }
}
impl<T> OtherOutcome for &T {}

/// `ignored = path`: counts the errors the predicate does not match.
#[inline]
pub fn not<E>(ignored: impl Fn(&E) -> bool) -> impl Fn(&E) -> bool {
    move |error| !ignored(error)
}

/// Runs a sync body, turning a panic into `Err(payload)`.
#[inline]
pub fn catch_unwind_sync<R, F: FnOnce() -> R>(body: F) -> Result<R, Box<dyn Any + Send>> {
    catch_unwind(AssertUnwindSafe(body))
}

/// `future`, typed: pins the output type so `?` in an async body infers.
#[inline(always)]
pub fn output_is<T, F: Future<Output = T>>(future: F) -> F {
    future
}

/// The body of a fn returning a future, run when first polled (after the permit).
pub async fn lazy_future<F, Fut>(body: F) -> Fut::Output
where
    F: FnOnce() -> Fut,
    Fut: IntoFuture,
{
    body().await
}
