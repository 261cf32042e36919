pub mod outcome_unknown;
mod table;

pub use table::*;
