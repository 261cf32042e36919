//! Not public API: what breaker's own tools need of the crate, and no user should. The
//! `breaker` CLI (an operator's reads, the forced-open sentinel), the sample functions (the
//! EMF line's level and timestamp) and the simulator use it; nothing here is covered by
//! semver, and any of it may change or go in any release.
//!
//! Everything a Lambda user, a tower user or a store implementer needs is elsewhere: the
//! crate root, [`store`](crate::store), [`tower`](crate::tower), [`testing`](crate::testing),
//! [`emf`](crate::emf) and [`deadline`](crate::deadline).

pub use crate::log_line::{LOG_LEVEL, rfc3339_millis};
pub use crate::protocol::OPENED_AT_UNTIL_RELEASED;
#[cfg(feature = "dynamodb")]
pub use crate::store::dynamodb::{
    IndexProblem, Listing, OperatorReads, OperatorWrites, StoredCircuit, StoredKeyIndex,
};
