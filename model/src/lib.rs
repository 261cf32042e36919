//! A model checker for breaker's shared-state protocol.
//!
//! A small fleet (breaker environments with their own clocks and caches, one invocation at
//! a time or several sharing one cache and probe slot, a Powertools environment, an
//! operator) shares one item; [`stateright`] explores every interleaving
//! of their calls, probes, writes and lost answers, up to a horizon. Each breaker decides
//! with the runtime's own `protocol::machine`; each write changes the item as the
//! DynamoDB request `store/dynamodb` sends would ([`dynamodb`]), and is checked against
//! the in-memory store's reading (`RecordWrite::applied_to`). The properties are in
//! `fleet/properties.rs`; the models the tests and `make model` check
//! are in [`scenarios`]. [`keyed`] models the key index of keyed circuits the same way
//! (its models in [`keyed_scenarios`]). docs/design.md lists them with their sizes.

pub mod dynamodb;
pub mod expression;
pub mod fleet;
pub mod item;
pub mod keyed;
pub mod keyed_scenarios;
pub mod liveness;
pub mod scenarios;
