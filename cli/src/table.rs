//! The circuit table the flags and the environment name: a `DynamoDbStore` on it, and the
//! AWS configuration it was built from (for the caller's identity).

use anyhow::{Context as _, bail};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use breaker_runtime::store::{DynamoDbStore, DynamoDbStoreBuilder};

use crate::args::{RenamedAttributes, TableArgs};
use crate::store_clock::StoreClock;

/// The store and the AWS configuration behind it.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) store: DynamoDbStore,
    pub(crate) sdk: SdkConfig,
    /// The store's clock, from its answers.
    clock: StoreClock,
    max_clock_skew: std::time::Duration,
    /// Each renaming flag given, with the attribute name it gave.
    renamed: Vec<(&'static str, String)>,
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
        if sdk.region().is_none_or(|r| r.as_ref().trim().is_empty()) {
            bail!("no AWS region: pass --region or set AWS_REGION (or a profile's region)");
        }
        let clock = StoreClock::default();
        let mut dynamodb = aws_sdk_dynamodb::config::Builder::from(&sdk).interceptor(clock.clone());
        if let Some(endpoint) = &args.endpoint_url {
            dynamodb = dynamodb.endpoint_url(endpoint);
        }
        let mut builder = DynamoDbStore::builder()
            .table_name(table)
            .client(aws_sdk_dynamodb::Client::from_conf(dynamodb.build()));
        for (name, rename) in renames(&args.renamed) {
            if let Some(name) = name {
                builder = rename(builder, name.clone());
            }
        }
        if let (Some(pk), Some(sort_key)) = (&args.pk, &args.sort_key_attr) {
            builder = builder.static_pk_value(pk).sort_key_attr(sort_key);
        }
        let store = builder.build().context("invalid table layout")?;
        let renamed = RENAME_FLAGS
            .into_iter()
            .zip(renames(&args.renamed))
            .filter_map(|(flag, (name, _))| Some((flag, name.clone()?)))
            .collect();
        Ok(Self {
            store,
            sdk,
            clock,
            max_clock_skew: args.max_clock_skew,
            renamed,
        })
    }

    /// The renaming flag (`--state-attr NAME`) whose attribute `problem` (why an item did
    /// not decode) says is missing: the item is unreadable because of the flag, perhaps
    /// mistyped, not because of the table.
    pub(crate) fn renamed_attribute_missing(&self, problem: &str) -> Option<String> {
        self.renamed
            .iter()
            .find(|(_, name)| problem.starts_with(&format!("attribute '{name}' is missing")))
            .map(|(flag, name)| format!("{flag} {name}"))
    }

    /// Refuses a write computed from this machine's clock when it is off the store's (as
    /// of the store's last answer) by more than `--max-clock-skew`.
    pub(crate) fn check_clock(&self) -> anyhow::Result<()> {
        self.clock.check(self.max_clock_skew)
    }
}

impl Table {
    /// `error` with what to check first, when its cause is one an operator fixes on the
    /// command line: a table that is not in this region, or no credentials.
    pub(crate) fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        let text = format!("{error:#}");
        let region = self.sdk.region().map_or("", |r| r.as_ref());
        if text.contains("ResourceNotFoundException") {
            let table = self.store.table_name();
            error.context(format!(
                "no table '{table}' in region {region} (check --table or \
                 CIRCUIT_BREAKER_TABLE, and --region or AWS_REGION)"
            ))
        } else if text.contains("SSO token") {
            let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
            error.context(format!(
                "no valid SSO sign-in for profile '{profile}': run `aws sso login --profile \
                 {profile}`"
            ))
        } else if text.contains("no credentials found") || text.contains("loading credentials") {
            error.context(CREDENTIALS_HELP)
        } else {
            error
        }
    }
}

/// What to set when no credentials were found: the sources an operator has, as the AWS CLI
/// reads them.
const CREDENTIALS_HELP: &str = "no AWS credentials: set AWS_PROFILE (an SSO profile, after \
     `aws sso login --profile NAME`, or one with a `credential_process`), or \
     AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";

type Rename = fn(DynamoDbStoreBuilder, String) -> DynamoDbStoreBuilder;

/// The flags of [`renames`], in its order.
const RENAME_FLAGS: [&str; 7] = [
    "--key-attr",
    "--state-attr",
    "--failure-count-attr",
    "--opened-at-attr",
    "--half-open-owner-attr",
    "--probe-lease-expiry-attr",
    "--expiry-attr",
];

/// Each renamed attribute with the builder method that renames it; unnamed ones keep the
/// store's defaults.
fn renames(renamed: &RenamedAttributes) -> [(&Option<String>, Rename); 7] {
    [
        (&renamed.key_attr, DynamoDbStoreBuilder::key_attr),
        (&renamed.state_attr, DynamoDbStoreBuilder::state_attr),
        (
            &renamed.failure_count_attr,
            DynamoDbStoreBuilder::failure_count_attr,
        ),
        (
            &renamed.opened_at_attr,
            DynamoDbStoreBuilder::opened_at_attr,
        ),
        (
            &renamed.half_open_owner_attr,
            DynamoDbStoreBuilder::half_open_owner_attr,
        ),
        (
            &renamed.probe_lease_expiry_attr,
            DynamoDbStoreBuilder::probe_lease_expiry_attr,
        ),
        (&renamed.expiry_attr, DynamoDbStoreBuilder::expiry_attr),
    ]
}
