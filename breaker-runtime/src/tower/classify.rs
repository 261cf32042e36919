//! How a finished request counts: [`Classify`], and its default, [`EveryError`].

use crate::protocol::machine::Outcome;

/// Says how a finished request counts for the circuit.
///
/// Implemented by [`EveryError`] (the default) and by every
/// `Fn(&Result<Response, Error>) -> Outcome`, so a response can count as a failure (an
/// HTTP 500), as a load shed for the adaptive policy (`Outcome::Overloaded`: a 503 without
/// `Retry-After`), or ask for an opening (`Outcome::OpenFor`: a 429 with one), and an error
/// can be ignored (a 404 turned into an error by the client).
pub trait Classify<Res, E> {
    /// How the request that ended with `result` counts.
    fn classify(&self, result: &Result<Res, E>) -> Outcome;
}

/// The default classifier: every `Ok` is a success, every `Err` a failure, as for
/// [`CircuitBreaker::call`](crate::CircuitBreaker::call).
///
/// ```
/// use breaker_runtime::tower::{Classify, EveryError, Outcome};
/// assert_eq!(EveryError.classify(&Ok::<u8, ()>(1)), Outcome::Success);
/// assert_eq!(EveryError.classify(&Err::<u8, ()>(())), Outcome::Failure);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EveryError;

impl<Res, E> Classify<Res, E> for EveryError {
    #[inline]
    fn classify(&self, result: &Result<Res, E>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        }
    }
}

impl<Res, E, F> Classify<Res, E> for F
where
    F: Fn(&Result<Res, E>) -> Outcome,
{
    #[inline]
    fn classify(&self, result: &Result<Res, E>) -> Outcome {
        self(result)
    }
}
