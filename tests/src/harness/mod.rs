//! What drives the code under test: a function binary run the way Lambda runs it
//! ([`runtime_api`]), the sample functions' whole local stack ([`sample_stack`]), and a fleet
//! of worker processes sharing one circuit ([`fleet`]).

pub mod fleet;
pub mod runtime_api;
pub mod sample_stack;
