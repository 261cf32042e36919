//! The sample functions as real binaries behind a loopback Lambda Runtime API.
//!
//! One test binary per area: every binary links the AWS SDK, so fewer binaries build faster and
//! take far less disk. nextest still runs each test in its own process.

mod backoff;
mod charge;
mod cost_report;
mod deadlines;
mod init_errors;
mod managed;
mod outcomes;
mod parked;
mod pipeline;
mod quickstart;
mod recovery;
mod refusals;
mod support;
