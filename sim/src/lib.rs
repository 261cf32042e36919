//! # breaker-sim
//!
//! A deterministic fleet simulator for the circuit breaker: thousands of real
//! [`CircuitBreaker`](breaker_runtime::CircuitBreaker)s, one per simulated Lambda execution
//! environment, on one virtual clock, sharing one DynamoDB item that is modelled with the
//! service's limits (units, per-item throttling, lagging reads, latency).
//!
//! Why: the protocol is tested on 16 real processes, but users run fleets of thousands of
//! environments on one item per circuit, and a single item is held to 3,000 RCU and 1,000
//! WCU per second. No test can run ten thousand Lambda environments; a simulator that runs
//! the code users run can. A run is a pure function of its scenario and seed.
//!
//! One module per job:
//!
//! - [`rng`]: the seeded random streams;
//! - [`model`]: DynamoDB's item, limits and client retries;
//! - [`env_store`]: one environment's `StateStore` over the shared model;
//! - [`traffic`]: Poisson arrivals, up to an environment's concurrency at a time (one in a
//!   Lambda environment, many on Managed Instances);
//! - [`keys`]: a keyed scenario's keys: names, Zipf draws, which fail;
//! - [`downstream`]: the protected service's latency, health and capacity schedules;
//! - [`scenario`]: the situations the fleet is measured in;
//! - [`fleet`]: the discrete-event loop that drives the breakers;
//! - [`invocation`]: one invocation in flight: the guarded async call and its downstream;
//! - [`metrics`]: the measurements and their definitions, collected from a run;
//! - [`keyed_metrics`]: a keyed scenario's measurements: per key, the index, the cap;
//! - [`summary`]: the figures of a run: per second, per window, the summary;
//! - [`report`]: the table, the JSON line and the markdown table;
//! - [`chart`]: the SVG chart of a run.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chart;
pub mod downstream;
pub mod env_store;
pub mod fleet;
pub mod invocation;
pub mod keyed_metrics;
pub mod keys;
pub mod metrics;
pub mod model;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod summary;
pub mod traffic;
