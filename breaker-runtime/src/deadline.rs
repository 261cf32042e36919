//! The Lambda invocation's deadline, as the guarded calls inside it see it.
//!
//! Lambda ends an invocation at its deadline: a guarded call still running then dies with
//! the environment, its failure is never counted and nothing is written, so a downstream
//! that hangs never opens the circuit. Run the handler's work in [`scope`] with the
//! invocation's deadline (`LambdaEvent::context.deadline`, unix milliseconds) and every
//! guarded async call inside it is abandoned at the deadline minus the circuit's
//! [`deadline_margin`](crate::CircuitBreakerConfigBuilder::deadline_margin): its future is
//! dropped, it counts as a failure
//! ([`FailureKind::InvocationDeadline`](crate::FailureKind::InvocationDeadline)), the caller
//! gets a [`CallAbandonedError`](crate::CallAbandonedError), and the trip or report it causes
//! is written within the margin, before Lambda ends the invocation.
//!
//! A function started by `breaker_runtime::lambda::run` (feature `lambda`, on by default)
//! has every invocation in its scope already; [`scope`] is for the other shapes.
//!
//! ```
//! use breaker_runtime::{CircuitBreaker, deadline};
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let breaker = CircuitBreaker::new("api", std::sync::Arc::new(breaker_runtime::store::InMemoryStore::new()), Default::default());
//! // In a handler: `deadline::scope(event.context.deadline, work(event)).await`.
//! let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
//! let in_five_seconds = now.as_millis() as u64 + 5_000;
//! let answer: Result<u32, anyhow::Error> =
//!     deadline::scope(in_five_seconds, breaker.call(|| async { Ok(42) })).await;
//! assert_eq!(answer.unwrap(), 42);
//! # }
//! ```
//!
//! The scope is the polling thread's: set while the scoped future is polled (and while a
//! [`scope_blocking`] closure runs), so it covers everything that future awaits, but not
//! tasks it spawns (scope them too). A blocking call cannot be abandoned (a thread cannot
//! be stopped): one that returns after its deadline counts as a failure of that kind, and
//! its result is returned.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// No deadline.
const NONE: u64 = 0;

thread_local! {
    /// The deadline of the scope being polled on this thread (unix millis); 0: none.
    static DEADLINE: Cell<u64> = const { Cell::new(NONE) };
}

/// The deadline of the scope this thread is in (unix millis), if any.
///
/// ```
/// use breaker_runtime::deadline;
/// assert_eq!(deadline::current_unix_millis(), None);
/// assert_eq!(
///     deadline::scope_blocking(1_700_000_000_000, deadline::current_unix_millis),
///     Some(1_700_000_000_000)
/// );
/// ```
pub fn current_unix_millis() -> Option<u64> {
    Some(raw()).filter(|deadline| *deadline != NONE)
}

/// The old name of [`current_unix_millis`].
#[deprecated(note = "renamed `current_unix_millis`: the name says the unit")]
pub fn current() -> Option<u64> {
    current_unix_millis()
}

/// The current deadline, 0 for none: one thread-local load.
#[inline]
pub(crate) fn raw() -> u64 {
    DEADLINE.with(Cell::get)
}

/// Restores the enclosing scope's deadline, also when the scoped code panics.
struct Restore(u64);

impl Drop for Restore {
    fn drop(&mut self) {
        DEADLINE.with(|deadline| deadline.set(self.0));
    }
}

fn enter(deadline_unix_millis: u64) -> Restore {
    Restore(DEADLINE.with(|deadline| deadline.replace(deadline_unix_millis)))
}

/// Runs `future` with guarded calls inside it abandoned before `deadline_unix_millis` (the
/// invocation's deadline, as `lambda_runtime`'s `Context::deadline` gives it). A nested
/// scope takes the earlier of the two deadlines.
///
/// An invocation's start is also where breaker reads the clock afresh: after Lambda thaws
/// a frozen environment, the first call in the scope judges its cached copy by the time now.
pub fn scope<F: Future>(deadline_unix_millis: u64, future: F) -> Scoped<F> {
    Scoped {
        deadline: deadline_unix_millis,
        started: false,
        future,
    }
}

/// Runs `body` in the scope of `deadline_unix_millis`, for sync handlers.
pub fn scope_blocking<T>(deadline_unix_millis: u64, body: impl FnOnce() -> T) -> T {
    crate::clock::refresh_recent();
    let _restore = enter(earlier(deadline_unix_millis, raw()));
    body()
}

fn earlier(deadline: u64, enclosing: u64) -> u64 {
    match enclosing {
        NONE => deadline,
        enclosing => enclosing.min(deadline),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`scope`].
    #[derive(Debug)]
    #[must_use = "futures do nothing unless awaited"]
    pub struct Scoped<F> {
        deadline: u64,
        started: bool,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !*this.started {
            *this.started = true;
            crate::clock::refresh_recent();
        }
        let _restore = enter(earlier(*this.deadline, raw()));
        this.future.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_to_the_earlier_deadline_and_restore_the_outer_one() {
        scope_blocking(2_000, || {
            assert_eq!(current_unix_millis(), Some(2_000));
            scope_blocking(3_000, || assert_eq!(current_unix_millis(), Some(2_000)));
            scope_blocking(1_000, || assert_eq!(current_unix_millis(), Some(1_000)));
            assert_eq!(current_unix_millis(), Some(2_000));
        });
        assert_eq!(current_unix_millis(), None);
    }

    #[test]
    fn a_panic_in_a_scope_leaves_no_deadline_behind() {
        let caught = std::panic::catch_unwind(|| scope_blocking(5, || panic!("boom")));
        assert!(caught.is_err());
        assert_eq!(current_unix_millis(), None);
    }
}
