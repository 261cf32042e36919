//! The workspace's local test stack: what the tests (`tests/`, the CLI's), the demo and
//! `make local` (the `local-stack` binary) start and drive, in four kinds:
//!
//! - [`fixtures`]: local servers a test starts and drops (dynalite, moto, the fault proxy,
//!   the payment stub) and what they share: the supervised process, a free port, the local
//!   SDK configuration.
//! - [`harness`]: what drives the code under test: a function binary under a loopback Lambda
//!   Runtime API, the sample stack, a fleet of worker processes.
//! - [`doubles`]: stand-ins for a store, scripted to count, fail or hang.
//! - [`circuits`]: the small helpers of in-process circuit tests, and [`contention`]: calls
//!   racing for one circuit; [`wall_clock`]: the time in unix milliseconds.

pub mod circuits;
pub mod contention;
pub mod doubles;
pub mod fixtures;
pub mod harness;
mod sync;
pub mod wall_clock;
