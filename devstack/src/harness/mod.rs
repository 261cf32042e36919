//! What drives the code under test: a function binary run the way Lambda runs it
//! ([`function_process`], against a loopback [`runtime_api`]), the sample functions' whole
//! local stack ([`sample_stack`]) and the SQS event source of one of them
//! ([`event_source`]), a fleet of worker processes sharing one circuit ([`fleet`]), and the
//! HTTP endpoint that breaks and heals the stack's downstreams by hand ([`fault_control`]).

pub mod event_source;
pub mod fault_control;
pub mod fleet;
pub mod function_process;
pub mod runtime_api;
pub mod sample_stack;
