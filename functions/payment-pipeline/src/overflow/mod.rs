mod queue;

pub use queue::*;
