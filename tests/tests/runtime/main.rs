//! The runtime core: CircuitBreaker, its blocking twins, concurrency, fail-open, the model check.
//!
//! One test binary per area: every binary links the AWS SDK, so fewer binaries build faster and
//! take far less disk. nextest still runs each test in its own process.

mod adaptive;
mod backoff;
mod blocking;
mod breaker;
mod call_future;
mod concurrency;
mod deadlines;
mod disabled;
mod fail_open;
mod fleet_detection;
mod fleet_half_open;
mod fleet_rules;
mod freeze;
mod keyed;
mod keyed_fleet;
mod keyed_index;
mod keyed_memory;
mod model;
mod one_process;
mod open_for;
mod policies;
mod policy_model;
mod shadow;
mod slow_start;
mod store_contract_memory;
mod tower_layer;
mod valgrind;
mod warm_up;
