//! An HTTP client guarded by `CircuitBreakerLayer`: hyper's client is a tower service, the
//! layer counts 5xx responses as failures, and once the circuit opens requests fail fast
//! without reaching the server. The server is a stub on loopback that answers 503 until
//! told to recover.
//!
//! `cargo run -p breaker-runtime --features tower --example tower_http_client`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use breaker_runtime::store::InMemoryStore;
use breaker_runtime::testing::ManualClock;
use breaker_runtime::tower::{BoxError, CircuitBreakerLayer, Outcome};
use breaker_runtime::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerOpenError, CircuitState,
};
use http_body_util::Empty;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::{Client, Error as ClientError};
use hyper_util::rt::TokioExecutor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tower::{Service, ServiceBuilder, ServiceExt};

/// What counts: a 5xx response or a failed connection; any other answer is a success.
fn server_errors(result: &Result<Response<Incoming>, ClientError>) -> Outcome {
    match result {
        Ok(response) if response.status().is_server_error() => Outcome::Failure,
        Ok(_) => Outcome::Success,
        Err(_) => Outcome::Failure,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let server = StubServer::start().await?;

    // A manual clock skips the recovery timeout instantly.
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .failure_threshold(3)
        .success_threshold(1)
        .recovery_timeout(Duration::from_secs(30))
        .clock(clock.clone())
        .build()?;
    let breaker = CircuitBreaker::new("inventory-http", Arc::new(InMemoryStore::new()), config)
        .with_on_transition(|t| println!("  transition: {} -> {}", t.from_state, t.to_state));

    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut inventory = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(breaker.clone()).classifier(server_errors))
        .service(client);

    println!("the server answers 503:");
    for n in 1..=5 {
        let request = Request::get(server.url(n)).body(Empty::new())?;
        match inventory.ready().await?.call(request).await {
            Ok(response) => println!("  request {n}: {}", response.status()),
            Err(e) if e.downcast_ref::<CircuitBreakerOpenError>().is_some() => {
                println!("  request {n}: rejected without a request ({e})")
            }
            Err(e) => println!("  request {n}: {e}"),
        }
    }
    println!("the server saw {} requests", server.seen());

    println!("the server recovers; 30 s later one request probes:");
    server.recover();
    clock.advance(Duration::from_secs(30));
    let request = Request::get(server.url(6)).body(Empty::new())?;
    let response = inventory.ready().await?.call(request).await?;
    println!(
        "  request 6: {}; the circuit is {}",
        response.status(),
        breaker.state()
    );
    assert_eq!(response.status(), 200);
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(
        server.seen(),
        4,
        "3 failures and the probe reached the server"
    );
    Ok(())
}

/// An HTTP/1.1 server on loopback answering 503 (or 200 once recovered) to every request,
/// one per connection.
struct StubServer {
    port: u16,
    healthy: Arc<AtomicBool>,
    seen: Arc<AtomicUsize>,
}

impl StubServer {
    async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let healthy = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let (h, s) = (healthy.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0u8; 1024];
                if stream.read(&mut request).await.unwrap_or(0) == 0 {
                    continue;
                }
                s.fetch_add(1, Ordering::SeqCst);
                let status = match h.load(Ordering::SeqCst) {
                    true => "200 OK",
                    false => "503 Service Unavailable",
                };
                let answer =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        Ok(Self {
            port,
            healthy,
            seen,
        })
    }

    fn url(&self, n: u32) -> String {
        format!("http://127.0.0.1:{}/stock/{n}", self.port)
    }

    fn recover(&self) {
        self.healthy.store(true, Ordering::SeqCst);
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}
