//! `DynamoDbStoreBuilder`: the table, the client, and the attribute-name overrides.

use std::sync::Arc;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::Client;

use super::item::{
    AttributeNames, OVERRIDE, OVERRIDE_AT, OVERRIDE_BY, OVERRIDE_REASON, OVERRIDE_UNTIL,
};
use super::{ClientSource, DynamoDbStore, Shared};
use crate::error::CircuitBreakerConfigError;

/// Builds a [`DynamoDbStore`]; see [`DynamoDbStore::builder`].
///
/// Only the table name is required. Every attribute name can be overridden, to share a
/// table that already uses other names; the defaults are Powertools'.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct DynamoDbStoreBuilder {
    table_name: Option<String>,
    client: Option<Client>,
    sdk_config: Option<SdkConfig>,
    key_attr: Option<String>,
    sort_key_attr: Option<String>,
    static_pk_value: Option<String>,
    state_attr: Option<String>,
    failure_count_attr: Option<String>,
    opened_at_attr: Option<String>,
    half_open_owner_attr: Option<String>,
    probe_lease_expiry_attr: Option<String>,
    expiry_attr: Option<String>,
}

macro_rules! attribute_setters {
    ($($(#[$doc:meta])* $field:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $field(mut self, name: impl Into<String>) -> Self {
                self.$field = Some(name.into());
                self
            }
        )*
    };
}

impl DynamoDbStoreBuilder {
    /// The table's name (required).
    pub fn table_name(mut self, table_name: impl Into<String>) -> Self {
        self.table_name = Some(table_name.into());
        self
    }

    /// The client to use, as given (its retry and timeout settings are kept). Without one,
    /// the store builds its own from [`sdk_config`](Self::sdk_config) or, failing that,
    /// from the standard AWS configuration (environment, profile, Lambda role), loaded once
    /// on first use.
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// The AWS configuration to build the store's own client from.
    pub fn sdk_config(mut self, config: &SdkConfig) -> Self {
        self.sdk_config = Some(config.clone());
        self
    }

    attribute_setters! {
        /// Partition key attribute (S; default `id`).
        key_attr,
        /// Sort key attribute (S; default none). With it, the partition key holds
        /// [`static_pk_value`](Self::static_pk_value) and the sort key the circuit's name.
        sort_key_attr,
        /// Partition key value with a sort key (default
        /// `circuit_breaker#$AWS_LAMBDA_FUNCTION_NAME`). Needs `sort_key_attr`.
        static_pk_value,
        /// State attribute (S: `CLOSED`, `OPEN`, `HALF_OPEN`; default `state`).
        state_attr,
        /// Failure count attribute (N; default `failure_count`).
        failure_count_attr,
        /// Opening time attribute (N, unix seconds; default `opened_at`).
        opened_at_attr,
        /// Probe owner attribute (S; default `half_open_owner`).
        half_open_owner_attr,
        /// Probe lease attribute (N, unix seconds; default `probe_lease_expiry`).
        probe_lease_expiry_attr,
        /// TTL attribute (N, unix seconds; default `expiration`). Enable TTL on it.
        expiry_attr,
    }

    /// Checks the settings and builds the store. Synchronous and cheap: no I/O happens
    /// until the first store call.
    ///
    /// Errors: no table name; `static_pk_value` without `sort_key_attr`; an empty
    /// attribute name, or two attributes with the same name (`key_attr == sort_key_attr`).
    ///
    /// ```
    /// use breaker_runtime::store::DynamoDbStore;
    /// let err = DynamoDbStore::builder().table_name("t").key_attr("pk").sort_key_attr("pk").build();
    /// assert!(err.unwrap_err().to_string().contains("pk"));
    /// assert!(DynamoDbStore::builder().build().is_err());
    /// ```
    pub fn build(self) -> Result<DynamoDbStore, CircuitBreakerConfigError> {
        let table_name = self
            .table_name
            .filter(|t| !t.trim().is_empty())
            .ok_or(CircuitBreakerConfigError::Missing("table_name"))?;
        if self.static_pk_value.is_some() && self.sort_key_attr.is_none() {
            return Err(CircuitBreakerConfigError::Conflict(
                "static_pk_value needs sort_key_attr (the circuit name goes in the sort key)"
                    .into(),
            ));
        }
        let or = |name: Option<String>, default: &str| name.unwrap_or_else(|| default.to_owned());
        let names = AttributeNames {
            key: or(self.key_attr, "id"),
            sort_key: self.sort_key_attr,
            static_pk_value: self.static_pk_value.unwrap_or_else(default_static_pk_value),
            state: or(self.state_attr, "state"),
            failure_count: or(self.failure_count_attr, "failure_count"),
            opened_at: or(self.opened_at_attr, "opened_at"),
            half_open_owner: or(self.half_open_owner_attr, "half_open_owner"),
            probe_lease_expiry: or(self.probe_lease_expiry_attr, "probe_lease_expiry"),
            expiry: or(self.expiry_attr, "expiration"),
        };
        check_distinct(&names)?;
        let source = match (self.client, self.sdk_config) {
            (Some(client), _) => ClientSource::Given(client),
            (None, Some(config)) => ClientSource::SdkConfig(Box::new(config)),
            (None, None) => ClientSource::Environment,
        };
        Ok(DynamoDbStore {
            shared: Arc::new(Shared::new(table_name, names, source)),
        })
    }
}

/// Powertools' default partition key value.
fn default_static_pk_value() -> String {
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_default();
    format!("circuit_breaker#{function}")
}

fn check_distinct(names: &AttributeNames) -> Result<(), CircuitBreakerConfigError> {
    let mut all = vec![
        ("key_attr", &names.key),
        ("state_attr", &names.state),
        ("failure_count_attr", &names.failure_count),
        ("opened_at_attr", &names.opened_at),
        ("half_open_owner_attr", &names.half_open_owner),
        ("probe_lease_expiry_attr", &names.probe_lease_expiry),
        ("expiry_attr", &names.expiry),
    ];
    if let Some(sort_key) = &names.sort_key {
        all.insert(1, ("sort_key_attr", sort_key));
    }
    // The override's attributes have fixed names; no configured one may take them.
    let fixed = [
        OVERRIDE,
        OVERRIDE_UNTIL,
        OVERRIDE_BY,
        OVERRIDE_REASON,
        OVERRIDE_AT,
    ];
    if let Some((field, name)) = all.iter().find(|(_, name)| fixed.contains(&name.as_str())) {
        return Err(CircuitBreakerConfigError::Conflict(format!(
            "{field} is '{name}', an attribute of operator overrides; choose another name"
        )));
    }
    for (i, (field, name)) in all.iter().enumerate() {
        if name.is_empty() {
            return Err(CircuitBreakerConfigError::Conflict(format!(
                "{field} must not be empty"
            )));
        }
        if let Some((other, _)) = all[..i].iter().find(|(_, earlier)| earlier == name) {
            return Err(CircuitBreakerConfigError::Conflict(format!(
                "{other} and {field} are both '{name}'; every attribute needs its own name"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_name_is_required() {
        let err = DynamoDbStore::builder().build().unwrap_err();
        assert_eq!(err, CircuitBreakerConfigError::Missing("table_name"));
        let blank = DynamoDbStore::builder()
            .table_name(" ")
            .build()
            .unwrap_err();
        assert_eq!(blank, CircuitBreakerConfigError::Missing("table_name"));
    }

    #[test]
    fn key_and_sort_key_must_differ() {
        let err = DynamoDbStore::builder()
            .table_name("t")
            .key_attr("pk")
            .sort_key_attr("pk")
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "key_attr and sort_key_attr are both 'pk'; every attribute needs its own name"
        );
    }

    #[test]
    fn every_attribute_needs_its_own_name() {
        let err = DynamoDbStore::builder()
            .table_name("t")
            .opened_at_attr("state")
            .build()
            .unwrap_err();
        assert!(err.to_string().starts_with("state_attr and opened_at_attr"));
        let empty = DynamoDbStore::builder()
            .table_name("t")
            .expiry_attr("")
            .build()
            .unwrap_err();
        assert_eq!(empty.to_string(), "expiry_attr must not be empty");
    }

    #[test]
    fn static_pk_value_needs_a_sort_key() {
        let err = DynamoDbStore::builder()
            .table_name("t")
            .static_pk_value("x")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("needs sort_key_attr"));
    }

    #[test]
    fn defaults_are_the_powertools_names() {
        let store = DynamoDbStore::builder().table_name("t").build().unwrap();
        let names = &store.shared.names;
        assert_eq!(
            [
                &names.key,
                &names.state,
                &names.failure_count,
                &names.opened_at
            ],
            ["id", "state", "failure_count", "opened_at"]
        );
        assert_eq!(
            [
                &names.half_open_owner,
                &names.probe_lease_expiry,
                &names.expiry
            ],
            ["half_open_owner", "probe_lease_expiry", "expiration"]
        );
        assert!(names.static_pk_value.starts_with("circuit_breaker#"));
    }
}
