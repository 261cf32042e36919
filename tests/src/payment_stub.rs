//! A stub payment API on a free loopback port: `POST /charges` with an `Idempotency-Key`.
//! Healthy, it charges each key once (a repeated key gets the same receipt, like real
//! payment APIs); down, it answers 503; it records every charged order id.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::http1::{self, Unframed};

#[derive(Debug, Default)]
struct State {
    down: AtomicBool,
    requests: AtomicUsize,
    charged: Mutex<BTreeSet<String>>,
}

/// The stub. Dropping it stops the server.
#[derive(Debug)]
pub struct PaymentStub {
    url: String,
    state: Arc<State>,
    server: JoinHandle<()>,
}

impl Drop for PaymentStub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl PaymentStub {
    /// Starts a healthy stub.
    pub async fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/charges", listener.local_addr()?);
        let state = Arc::new(State::default());
        let server = tokio::spawn(serve(listener, Arc::clone(&state)));
        Ok(Self { url, state, server })
    }

    /// The URL to POST charges to (`PAYMENT_API_URL`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// An outage (`true`: every request gets 503) or the recovery.
    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    /// Every request received, including the failed ones.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The order ids charged (each once, however often it was sent).
    pub fn charged(&self) -> BTreeSet<String> {
        self.state
            .charged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

async fn serve(listener: TcpListener, state: Arc<State>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(stream, Arc::clone(&state)));
    }
}

async fn connection(stream: TcpStream, state: Arc<State>) -> std::io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    while let Some((head, _body)) = http1::read_message(&mut reader, Unframed::NoBody).await? {
        state.requests.fetch_add(1, Ordering::SeqCst);
        let json = [("Content-Type", "application/json")];
        if state.down.load(Ordering::SeqCst) {
            http1::write_response(
                &mut writer,
                503,
                &json,
                br#"{"error":"payment backend unavailable"}"#,
            )
            .await?;
            continue;
        }
        let Some(key) = head.header("idempotency-key").map(str::to_owned) else {
            http1::write_response(
                &mut writer,
                400,
                &json,
                br#"{"error":"Idempotency-Key required"}"#,
            )
            .await?;
            continue;
        };
        let first_time = state
            .charged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone());
        let receipt =
            serde_json::json!({"charge_id": format!("ch_{key}"), "replayed": !first_time});
        http1::write_response(&mut writer, 201, &json, receipt.to_string().as_bytes()).await?;
    }
    Ok(())
}
