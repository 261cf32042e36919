//! A key's calls: each goes to that key's circuit ([`KeyedCircuitBreaker::breaker`]),
//! which runs it as a [`CircuitBreaker`](crate::CircuitBreaker) would.

use std::future::Future;

use super::KeyedCircuitBreaker;
use crate::ErrorVerdict;
use crate::error::{CallAbandonedError, CircuitBreakerOpenError};

impl KeyedCircuitBreaker {
    /// Runs `f` unless `key`'s circuit is open, as [`CircuitBreaker::call`](crate::CircuitBreaker::call): every `Err`
    /// counts as a failure of `key`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// let answer: Result<u32, anyhow::Error> = hosts.call("db-1", || async { Ok(42) }).await;
    /// assert_eq!(answer.unwrap(), 42);
    /// # }
    /// ```
    pub fn call<T, E, F, Fut>(
        &self,
        key: &str,
        f: F,
    ) -> impl Future<Output = Result<T, E>> + use<T, E, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
    {
        let breaker = self.breaker(key);
        async move { breaker.call(f).await }
    }

    /// Like [`call`](Self::call), counting only the errors for which `counts` is true, as
    /// [`CircuitBreaker::call_with`](crate::CircuitBreaker::call_with).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, CircuitState, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let config = CircuitBreakerConfig::builder().failure_threshold(1).build().unwrap();
    /// let hosts = KeyedCircuitBreaker::new("hosts", Arc::new(InMemoryStore::new()), config);
    /// let is_5xx = |e: &anyhow::Error| e.to_string().starts_with('5');
    /// let _ = hosts.call_with("db-1", is_5xx, || async { Err::<(), _>(anyhow::anyhow!("404")) }).await;
    /// assert_eq!(hosts.state("db-1"), CircuitState::Closed);
    /// # }
    /// ```
    pub fn call_with<T, E, C, V, F, Fut>(
        &self,
        key: &str,
        counts: C,
        f: F,
    ) -> impl Future<Output = Result<T, E>> + use<T, E, C, V, F, Fut>
    where
        C: Fn(&E) -> V,
        V: ErrorVerdict,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: From<CircuitBreakerOpenError> + From<CallAbandonedError>,
    {
        let breaker = self.breaker(key);
        async move { breaker.call_with(counts, f).await }
    }

    /// The blocking twin of [`call`](Self::call).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let files = KeyedCircuitBreaker::new("files", Arc::new(InMemoryStore::new()), CircuitBreakerConfig::default());
    /// let n: Result<u32, Box<dyn std::error::Error + Send + Sync>> = files.call_blocking("/mnt/a", || Ok(7));
    /// assert_eq!(n.unwrap(), 7);
    /// ```
    pub fn call_blocking<T, E>(&self, key: &str, f: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<CircuitBreakerOpenError>,
    {
        self.with_breaker(key, |breaker| breaker.call_blocking(f))
    }

    /// The blocking twin of [`call_with`](Self::call_with).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use breaker_runtime::{CircuitBreakerConfig, CircuitState, KeyedCircuitBreaker};
    /// use breaker_runtime::store::InMemoryStore;
    /// let config = CircuitBreakerConfig::builder().failure_threshold(1).build().unwrap();
    /// let files = KeyedCircuitBreaker::new("files", Arc::new(InMemoryStore::new()), config);
    /// let unless_not_found = |e: &anyhow::Error| e.to_string() != "not found";
    /// let missing: Result<(), anyhow::Error> =
    ///     files.call_blocking_with("/mnt/a", unless_not_found, || Err(anyhow::anyhow!("not found")));
    /// assert!(missing.is_err());
    /// assert_eq!(files.state("/mnt/a"), CircuitState::Closed);
    /// ```
    pub fn call_blocking_with<T, E, V: ErrorVerdict>(
        &self,
        key: &str,
        counts: impl Fn(&E) -> V,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<CircuitBreakerOpenError>,
    {
        self.with_breaker(key, |breaker| breaker.call_blocking_with(counts, f))
    }
}
