//! A local DynamoDB for tests: dynalite (installed into `.local/node` by
//! `scripts/install-tools.sh`) on a free loopback port, with its data on disk so it can be
//! stopped and restarted (an outage) without losing tables.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use breaker_tests::dynalite::Dynalite;
//! let dynalite = Dynalite::start().await?;
//! dynalite.create_circuit_table("circuits").await?;
//! let tables = dynalite.client().list_tables().send().await?;
//! assert_eq!(tables.table_names(), ["circuits"]);
//! # Ok(()) }
//! ```
//!
//! No stray processes: node runs under a small shell that kills it as soon as its stdin
//! closes. The test holds the other end of that pipe, so node dies when the [`Dynalite`] is
//! dropped (also while unwinding from a panic) and when the test process itself dies,
//! however it dies.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::{Credentials, SharedCredentialsProvider};
use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, KeySchemaElement, KeyType, ProvisionedThroughput, ScalarAttributeType,
    TableStatus, TimeToLiveSpecification,
};

/// How long dynalite may take to answer after it is started.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs node in the background and kills it when stdin reaches end-of-file.
const SUPERVISOR: &str = r#"node "$@" & child=$!
read -r _ignored
kill -9 "$child" 2>/dev/null
wait "$child" 2>/dev/null
exit 0"#;

/// A running dynalite. Dropping it stops the server and deletes its data.
#[derive(Debug)]
pub struct Dynalite {
    port: u16,
    data_dir: PathBuf,
    process: Option<Supervised>,
    client: Client,
    sdk_config: SdkConfig,
}

#[derive(Debug)]
struct Supervised {
    child: Child,
    /// Closing it tells the supervisor to kill node.
    stdin: Option<ChildStdin>,
}

impl Dynalite {
    /// Starts dynalite on a free loopback port and waits until it answers.
    pub async fn start() -> anyhow::Result<Self> {
        let port = free_port()?;
        let data_dir = fresh_data_dir()?;
        let sdk_config = Self::sdk_config_for(&format!("http://127.0.0.1:{port}"));
        let mut dynalite = Self {
            port,
            data_dir,
            process: None,
            client: Client::new(&sdk_config),
            sdk_config,
        };
        dynalite.restart().await?;
        Ok(dynalite)
    }

    /// An SDK configuration for a local endpoint: dummy credentials, `us-east-1`, never AWS.
    pub fn sdk_config_for(endpoint: &str) -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "dynalite", "dynalite", None, None, "dynalite",
            )))
            .build()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A client for it, with dummy credentials.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The SDK configuration the client is built from.
    pub fn sdk_config(&self) -> &SdkConfig {
        &self.sdk_config
    }

    /// The environment a child process needs to reach this dynalite through the standard
    /// AWS configuration (and never reach AWS).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL_DYNAMODB", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "dynalite".into()),
            ("AWS_SECRET_ACCESS_KEY", "dynalite".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }

    /// Creates a table keyed by `id` (S), the default layout, and waits until it is ACTIVE.
    pub async fn create_circuit_table(&self, name: &str) -> anyhow::Result<()> {
        self.create_table(name, "id", None).await
    }

    /// Creates a table with a string partition key and, optionally, a string sort key;
    /// waits until it is ACTIVE and enables TTL on `expiration` where supported (dynalite
    /// has no TTL: its `UnknownOperationException` is ignored).
    pub async fn create_table(
        &self,
        name: &str,
        key_attr: &str,
        sort_key_attr: Option<&str>,
    ) -> anyhow::Result<()> {
        let mut create = self
            .client
            .create_table()
            .table_name(name)
            .provisioned_throughput(
                ProvisionedThroughput::builder()
                    .read_capacity_units(100)
                    .write_capacity_units(100)
                    .build()?,
            );
        for (attr, key_type) in std::iter::once((key_attr, KeyType::Hash))
            .chain(sort_key_attr.map(|s| (s, KeyType::Range)))
        {
            create = create
                .attribute_definitions(
                    AttributeDefinition::builder()
                        .attribute_name(attr)
                        .attribute_type(ScalarAttributeType::S)
                        .build()?,
                )
                .key_schema(
                    KeySchemaElement::builder()
                        .attribute_name(attr)
                        .key_type(key_type)
                        .build()?,
                );
        }
        create.send().await.context("CreateTable")?;
        self.wait_active(name).await?;
        let ttl = self
            .client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name("expiration")
                    .build()?,
            )
            .send()
            .await;
        match ttl {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("UnknownOperationException") => Ok(()),
            Err(e) => Err(e).context("UpdateTimeToLive"),
        }
    }

    async fn wait_active(&self, name: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            let table = self
                .client
                .describe_table()
                .table_name(name)
                .send()
                .await
                .context("DescribeTable")?;
            if table.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("table {name} not ACTIVE after {STARTUP_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops the server (abruptly, like a network outage); the data stays on disk.
    pub fn stop(&mut self) {
        if let Some(process) = self.process.take() {
            process.stop();
        }
    }

    /// (Re)starts the server on the same port with the same data, and waits until it
    /// answers. Stops it first if it runs.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        let script = dynalite_script();
        if !script.exists() {
            bail!(
                "dynalite is not installed at {}; run scripts/install-tools.sh node",
                script.display()
            );
        }
        let child = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("dynalite-supervisor")
            .arg(&script)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--createTableMs",
                "0",
                "--deleteTableMs",
                "0",
                "--updateTableMs",
                "0",
            ])
            .arg("--path")
            .arg(&self.data_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("spawning dynalite")?;
        let mut process = Supervised { child, stdin: None };
        process.stdin = process.child.stdin.take();
        self.process = Some(process);
        self.wait_ready().await
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        loop {
            if tokio::net::TcpStream::connect(address).await.is_ok()
                && self.client.list_tables().send().await.is_ok()
            {
                return Ok(());
            }
            if let Some(process) = &mut self.process
                && let Some(status) = process.child.try_wait()?
            {
                bail!("dynalite exited during start-up: {status}");
            }
            if Instant::now() > deadline {
                bail!(
                    "dynalite did not answer on port {} within {STARTUP_TIMEOUT:?}",
                    self.port
                );
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

impl Supervised {
    fn stop(mut self) {
        // Closing stdin makes the supervisor kill node and exit.
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Dynalite {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// The installed dynalite entry point, relative to the workspace root.
fn dynalite_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.local/node/node_modules/dynalite/cli.js")
}

/// A port nobody listens on right now (the OS picks it; the listener is closed at once).
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a free port")?;
    Ok(listener.local_addr()?.port())
}

fn fresh_data_dir() -> anyhow::Result<PathBuf> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "breaker-dynalite-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).context("creating dynalite's data directory")?;
    Ok(dir)
}
