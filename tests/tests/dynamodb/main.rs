//! DynamoDbStore on dynalite: the store contract, the item layout, malformed items, SDK error paths and the fleet.
//!
//! One test binary per area: every binary links the AWS SDK, so fewer binaries build faster and
//! take far less disk. nextest still runs each test in its own process.

mod error_paths;
mod fleet;
mod item_layout;
mod malformed;
mod store_contract;
