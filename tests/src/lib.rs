//! Shared support for the workspace-level tests: local services, fault proxy, helpers.

pub mod dynalite;
pub mod fault_proxy;
pub mod fleet;
pub mod http1;
pub mod moto;
pub mod payment_stub;
pub mod runtime_api;
pub mod sample_stack;
pub mod stores;
