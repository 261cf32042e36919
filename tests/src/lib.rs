//! Shared support for the workspace-level tests: local services, fault proxy, helpers.

pub mod stores;
