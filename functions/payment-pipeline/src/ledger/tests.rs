//! The ledger's writes against DynamoDB failures no server produces on demand: a put
//! written but answered with an error, a park whose condition fails because an SDK retry's
//! first try landed or because the stale attempt settled meanwhile.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::AttributeValue;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemOutput;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::put_item::PutItemOutput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::error::{ConditionalCheckFailedException, InternalServerError};
use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};

use super::*;
use crate::ledger::item::{Item, n, s};
use crate::order::Order;

fn order() -> Order {
    Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#).unwrap()
}

fn ledger(client: Client) -> Ledger {
    Ledger::on_client(
        client,
        "ledger".into(),
        Duration::from_secs(60),
        Duration::from_secs(86_400),
        Duration::from_secs(1),
    )
}

/// The claim of `order()` on a ledger whose puts and reads answer as `put` and `get` say,
/// and whose park of the stale attempt fails its condition.
async fn claim_while_the_park_fails(put: &Rule, get: &Rule) -> Claim {
    let update = mock!(Client::update_item).then_error(condition_failed);
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [put, get, &update]);
    ledger(client)
        .claim(&order(), &Progress::default())
        .await
        .unwrap()
}

fn item(status: &str, attempt_id: &str, lease_until: u64) -> Item {
    Item::from([
        ("order_id".to_owned(), s("o-1")),
        ("status".to_owned(), s(status)),
        ("attempt_id".to_owned(), s(attempt_id)),
        ("contents".to_owned(), s(&order().contents_key())),
        ("lease_until".to_owned(), n(lease_until)),
    ])
}

/// A read's answer: the ledger item of [`item`].
fn got(status: &str, attempt_id: &str, lease_until: u64) -> GetItemOutput {
    GetItemOutput::builder()
        .set_item(Some(item(status, attempt_id, lease_until)))
        .build()
}

/// The attempt being parked, its lease long over.
fn parked_attempt() -> Attempt {
    Attempt {
        order_id: "o-1".into(),
        attempt_id: "a-1".into(),
        lease_until: 0,
    }
}

fn condition_failed() -> UpdateItemError {
    UpdateItemError::ConditionalCheckFailedException(
        ConditionalCheckFailedException::builder().build(),
    )
}

fn put_condition_failed() -> PutItemError {
    PutItemError::ConditionalCheckFailedException(
        ConditionalCheckFailedException::builder().build(),
    )
}

#[tokio::test]
async fn a_claim_whose_put_failed_releases_what_it_may_have_written() {
    let put_attempts = Arc::new(Mutex::new(Vec::new()));
    let released = Arc::new(Mutex::new(Vec::new()));
    let put = {
        let seen = Arc::clone(&put_attempts);
        mock!(Client::put_item)
            .match_requests(move |put| {
                if let Some(AttributeValue::S(id)) = put.item().and_then(|i| i.get("attempt_id")) {
                    seen.lock().unwrap().push(id.clone());
                }
                true
            })
            .then_error(|| {
                PutItemError::InternalServerError(
                    InternalServerError::builder()
                        .message("written, answer lost")
                        .build(),
                )
            })
    };
    let delete = {
        let seen = Arc::clone(&released);
        mock!(Client::delete_item)
            .match_requests(move |delete| {
                if let Some(AttributeValue::S(id)) = delete
                    .expression_attribute_values()
                    .and_then(|v| v.get(":attempt"))
                {
                    seen.lock().unwrap().push(id.clone());
                }
                true
            })
            .then_output(|| DeleteItemOutput::builder().build())
    };
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&put, &delete]);
    let ledger = ledger(client);

    let error = ledger
        .claim(&order(), &Progress::default())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("written, answer lost"),
        "{error}"
    );
    let put_attempts = put_attempts.lock().unwrap().clone();
    assert!(!put_attempts.is_empty());
    // Only this attempt's own claim is deleted, under the settle condition.
    assert_eq!(*released.lock().unwrap(), vec![put_attempts[0].clone()]);
}

#[tokio::test]
async fn a_park_whose_first_try_landed_counts_the_order_unknown() {
    // The update was written, its answer lost; the SDK's retry fails the condition on
    // the item it wrote itself. The order is parked: it must be counted as such.
    let update = mock!(Client::update_item).then_error(condition_failed);
    let get = mock!(Client::get_item).then_output(|| got("unknown", "a-1", 0));
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&update, &get]);
    let attempt = parked_attempt();
    assert!(ledger(client).park(&attempt, "timed out").await.unwrap());
}

#[tokio::test]
async fn a_park_that_fails_is_an_error_never_a_silent_unknown() {
    let update = mock!(Client::update_item).then_error(|| {
        UpdateItemError::InternalServerError(
            InternalServerError::builder().message("throttled").build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&update]);
    let attempt = parked_attempt();
    let error = ledger(client)
        .settle(&attempt, Settlement::Unknown, "timed out")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("throttled"), "{error}");
}

#[tokio::test]
async fn a_stale_attempt_that_settled_while_being_parked_answers_what_it_wrote() {
    // Round 1: the put meets a claim whose lease ran out; parking it fails its condition
    // because that attempt charged the order meanwhile. Round 2 reads "charged".
    let put = mock!(Client::put_item).then_error(put_condition_failed);
    let get = mock!(Client::get_item)
        .sequence()
        .output(|| got("in_progress", "a-0", 1))
        .output(|| got("charged", "a-0", 1))
        .repeatedly()
        .build();
    let claim = claim_while_the_park_fails(&put, &get).await;
    assert_eq!(claim, Claim::Charged);
}

#[tokio::test]
async fn a_stale_attempt_that_released_the_order_while_being_parked_lets_it_be_claimed() {
    let put = mock!(Client::put_item)
        .sequence()
        .error(put_condition_failed)
        .output(|| PutItemOutput::builder().build())
        .build();
    let get = mock!(Client::get_item)
        .sequence()
        .output(|| got("in_progress", "a-0", 1))
        .output(|| GetItemOutput::builder().build())
        .build();
    let claim = claim_while_the_park_fails(&put, &get).await;
    assert!(matches!(claim, Claim::Claimed(_)), "{claim:?}");
}
