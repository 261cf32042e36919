//! What a function's IAM policy must allow on the circuit table: the actions the store
//! sends, and the partition-key values (`dynamodb:LeadingKeys`) of every item a circuit's
//! breakers write, the fleet counters' included.

use super::DynamoDbStore;
use super::report::report_key_prefix;
use crate::store::{key_index_id, key_item_id};

impl DynamoDbStore {
    /// The DynamoDB actions the breakers send at run time: reads and writes of the
    /// circuit's item and its fleet counters, and `BatchGetItem` for the
    /// [warm-up](crate::warm_up) at init. Operators' listings (Scan, Query) are not among
    /// them.
    ///
    /// ```
    /// use breaker_runtime::store::DynamoDbStore;
    /// assert!(DynamoDbStore::IAM_ACTIONS.contains(&"dynamodb:UpdateItem"));
    /// ```
    pub const IAM_ACTIONS: [&'static str; 4] = [
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    ];

    /// The `dynamodb:LeadingKeys` values (with `*` wildcards, for `ForAllValues:StringLike`)
    /// of every item `circuit`'s breakers read or write in this table: the circuit's own
    /// key and its fleet counters' (`{circuit}#fleet@{window}`, and a suspicion's
    /// `{circuit}#fleet@s{epoch}`). With a sort key, the
    /// partition key is the store's static value for every circuit.
    ///
    /// ```
    /// use breaker_runtime::store::DynamoDbStore;
    /// let store = DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// assert_eq!(
    ///     store.iam_leading_keys("payment-backend"),
    ///     ["payment-backend", "payment-backend#fleet@*"]
    /// );
    /// ```
    pub fn iam_leading_keys(&self, circuit: &str) -> Vec<String> {
        let names = &self.shared.names;
        if names.sort_key.is_some() {
            return vec![names.static_pk_value.clone()];
        }
        vec![
            circuit.to_owned(),
            format!("{}*", report_key_prefix(circuit)),
        ]
    }

    /// The `dynamodb:LeadingKeys` values (for `ForAllValues:StringLike`) of every item a
    /// keyed circuit's breakers ([`KeyedCircuitBreaker`](crate::KeyedCircuitBreaker)) read
    /// or write: its index (`{circuit}#keys`) and its keys' items with their fleet counters
    /// (`{circuit}#key=*`: a key may be any string, so only a wildcard names them all). A
    /// keyed circuit has no item of its own name. With a sort key, the partition key is the
    /// store's static value.
    ///
    /// ```
    /// use breaker_runtime::store::DynamoDbStore;
    /// let store = DynamoDbStore::builder().table_name("circuits").build().unwrap();
    /// assert_eq!(store.iam_leading_keys_keyed("webhooks"), ["webhooks#keys", "webhooks#key=*"]);
    /// ```
    pub fn iam_leading_keys_keyed(&self, circuit: &str) -> Vec<String> {
        let names = &self.shared.names;
        if names.sort_key.is_some() {
            return vec![names.static_pk_value.clone()];
        }
        vec![
            key_index_id(circuit),
            format!("{}*", key_item_id(circuit, "")),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::{epoch_key_value, report_key_value};
    use super::*;

    fn matches(pattern: &str, key: &str) -> bool {
        match pattern.strip_suffix('*') {
            Some(prefix) => key.starts_with(prefix),
            None => key == pattern,
        }
    }

    #[test]
    fn every_key_a_circuit_writes_matches_its_leading_keys() {
        let store = DynamoDbStore::builder().table_name("t").build().unwrap();
        let patterns = store.iam_leading_keys("ce");
        let keys = [
            "ce".to_owned(),
            report_key_value("ce", 1_700_000_000),
            epoch_key_value("ce", 1_700_000_010),
        ];
        for key in keys {
            assert!(patterns.iter().any(|p| matches(p, &key)), "{key}");
        }
        assert!(!patterns.iter().any(|p| matches(p, "other#fleet@1")));
    }

    #[test]
    fn every_key_a_keyed_circuit_writes_matches_its_leading_keys() {
        use super::super::report::report_key_value;
        let store = DynamoDbStore::builder().table_name("t").build().unwrap();
        let patterns = store.iam_leading_keys_keyed("ce");
        let long = "x".repeat(200);
        let keys = [
            key_index_id("ce"),
            key_item_id("ce", "shop#1"),
            key_item_id("ce", ""),
            key_item_id("ce", &long),
            report_key_value(&key_item_id("ce", "shop#1"), 1_700_000_000),
        ];
        for key in keys {
            assert!(patterns.iter().any(|p| matches(p, &key)), "{key}");
        }
        for other in ["ce", "ce#fleet@1", "cd#keys", "ce#keysx", "other#key=a"] {
            assert!(!patterns.iter().any(|p| matches(p, other)), "{other}");
        }
    }

    #[test]
    fn with_a_sort_key_the_partition_is_the_static_value() {
        let store = DynamoDbStore::builder()
            .table_name("t")
            .key_attr("pk")
            .sort_key_attr("sk")
            .static_pk_value("circuit_breaker#orders")
            .build()
            .unwrap();
        assert_eq!(store.iam_leading_keys("ce"), ["circuit_breaker#orders"]);
    }
}
