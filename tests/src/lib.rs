//! Shared support for the workspace-level tests: local services, fault proxy, helpers.

pub mod contract;
pub mod dynalite;
pub mod stores;
