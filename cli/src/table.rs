//! The circuit table the flags and the environment name: a `DynamoDbStore` on it, and the
//! AWS configuration it was built from (for the caller's identity).

use anyhow::{Context as _, bail};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use breaker_runtime::store::DynamoDbStore;

use crate::args::TableArgs;

/// The store and the AWS configuration behind it.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) store: DynamoDbStore,
    pub(crate) sdk: SdkConfig,
}

impl Table {
    /// Loads the AWS configuration and builds the store; `--endpoint-url` reaches DynamoDB
    /// only (the identity lookup keeps the configuration's STS endpoint).
    pub(crate) async fn open(args: &TableArgs) -> anyhow::Result<Self> {
        let Some(table) = args.table.as_deref().filter(|t| !t.trim().is_empty()) else {
            bail!("no circuit table: pass --table NAME or set CIRCUIT_BREAKER_TABLE");
        };
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(region) = &args.region {
            loader = loader.region(Region::new(region.clone()));
        }
        let sdk = loader.load().await;
        let mut dynamodb = aws_sdk_dynamodb::config::Builder::from(&sdk);
        if let Some(endpoint) = &args.endpoint_url {
            dynamodb = dynamodb.endpoint_url(endpoint);
        }
        let mut builder = DynamoDbStore::builder()
            .table_name(table)
            .client(aws_sdk_dynamodb::Client::from_conf(dynamodb.build()))
            .key_attr(&args.key_attr)
            .state_attr(&args.state_attr)
            .failure_count_attr(&args.failure_count_attr)
            .opened_at_attr(&args.opened_at_attr)
            .half_open_owner_attr(&args.half_open_owner_attr)
            .probe_lease_expiry_attr(&args.probe_lease_expiry_attr)
            .expiry_attr(&args.expiry_attr);
        if let (Some(pk), Some(sort_key)) = (&args.pk, &args.sort_key_attr) {
            builder = builder.static_pk_value(pk).sort_key_attr(sort_key);
        }
        let store = builder.build().context("invalid table layout")?;
        Ok(Self { store, sdk })
    }
}
