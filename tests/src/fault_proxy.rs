//! A fault-injecting HTTP proxy on a free loopback port, in front of moto (SQS, Cost
//! Explorer). Point `AWS_ENDPOINT_URL` at it; by default it forwards every request, and a
//! test injects faults per AWS service: throttling (a `ThrottlingException` response, as
//! Cost Explorer sends it), a 503, latency, or a dropped connection. The functions under
//! test stay unaware: no test-only branch in them.
//!
//! The service is told by the `X-Amz-Target` header of the AWS JSON protocols
//! (`AWSInsightsIndexService.*` is Cost Explorer, `AmazonSQS.*` is SQS).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::http1::{self, Head, Unframed};

/// An AWS service behind the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// `X-Amz-Target: AWSInsightsIndexService.*`
    CostExplorer,
    /// `X-Amz-Target: AmazonSQS.*`
    Sqs,
    /// Anything else (moto's own API, unknown targets).
    Other,
}

impl Service {
    fn of(head: &Head) -> Self {
        match head.header("x-amz-target") {
            Some(t) if t.starts_with("AWSInsightsIndexService.") => Self::CostExplorer,
            Some(t) if t.starts_with("AmazonSQS.") => Self::Sqs,
            _ => Self::Other,
        }
    }
}

/// What the proxy does to a request instead of (or before) forwarding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 400 `ThrottlingException` in the AWS JSON error shape.
    Throttle,
    /// HTTP 503 `ServiceUnavailable`.
    Unavailable,
    /// Forward, after this delay.
    Latency(Duration),
    /// Close the connection without answering.
    DropConnection,
}

#[derive(Debug, Default)]
struct State {
    faults: HashMap<Service, Fault>,
    seen: HashMap<Service, usize>,
    injected: HashMap<Service, usize>,
}

/// The proxy. Dropping it stops it.
#[derive(Debug)]
pub struct FaultProxy {
    endpoint: String,
    state: Arc<Mutex<State>>,
    server: JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (`127.0.0.1:PORT`) that forwards everything.
    pub async fn start(upstream: &str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(State::default()));
        let server = tokio::spawn(serve(listener, upstream.to_owned(), Arc::clone(&state)));
        Ok(Self {
            endpoint,
            state,
            server,
        })
    }

    /// `http://127.0.0.1:PORT`: the `AWS_ENDPOINT_URL` of the functions.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Applies `fault` to every request to `service` from now on (`None`: heal it).
    pub fn inject(&self, service: Service, fault: Option<Fault>) {
        let mut state = self.lock();
        match fault {
            Some(fault) => state.faults.insert(service, fault),
            None => state.faults.remove(&service),
        };
    }

    /// Requests to `service` received so far.
    pub fn seen(&self, service: Service) -> usize {
        self.lock().seen.get(&service).copied().unwrap_or(0)
    }

    /// Requests to `service` that got a fault instead of an answer (latency not counted).
    pub fn injected(&self, service: Service) -> usize {
        self.lock().injected.get(&service).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn serve(listener: TcpListener, upstream: String, state: Arc<Mutex<State>>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(stream, upstream.clone(), Arc::clone(&state)));
    }
}

async fn connection(
    stream: TcpStream,
    upstream: String,
    state: Arc<Mutex<State>>,
) -> std::io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    while let Some((head, body)) = http1::read_message(&mut reader, Unframed::NoBody).await? {
        let service = Service::of(&head);
        let fault = {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            *state.seen.entry(service).or_default() += 1;
            let fault = state.faults.get(&service).copied();
            if matches!(fault, Some(f) if !matches!(f, Fault::Latency(_))) {
                *state.injected.entry(service).or_default() += 1;
            }
            fault
        };
        let json = [("Content-Type", "application/x-amz-json-1.1")];
        match fault {
            Some(Fault::Throttle) => {
                let headers = [json[0], ("x-amzn-ErrorType", "ThrottlingException")];
                let body = br#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#;
                http1::write_response(&mut writer, 400, &headers, body).await?;
            }
            Some(Fault::Unavailable) => {
                let body = br#"{"__type":"ServiceUnavailable","message":"Service is unavailable"}"#;
                http1::write_response(&mut writer, 503, &json, body).await?;
            }
            Some(Fault::DropConnection) => {
                let _ = writer.shutdown().await;
                return Ok(());
            }
            Some(Fault::Latency(delay)) => {
                tokio::time::sleep(delay).await;
                forward(&upstream, head, &body, &mut writer).await?;
            }
            None => forward(&upstream, head, &body, &mut writer).await?,
        }
    }
    Ok(())
}

/// One request on its own upstream connection (closed after it), the answer re-framed.
async fn forward<W>(
    upstream: &str,
    mut head: Head,
    body: &[u8],
    client: &mut W,
) -> std::io::Result<()>
where
    W: tokio::io::AsyncWrite + Unpin,
{
    head.remove("connection");
    head.headers.push(("Connection".into(), "close".into()));
    let mut server = TcpStream::connect(upstream).await?;
    http1::write_message(&mut server, head, body).await?;
    let (mut response, response_body) = http1::read_response(server).await?;
    response.remove("connection");
    // Keep the client's connection alive whatever HTTP version the server spoke.
    if let Some(rest) = response.start_line.strip_prefix("HTTP/1.0") {
        response.start_line = format!("HTTP/1.1{rest}");
    }
    http1::write_message(client, response, &response_body).await
}
