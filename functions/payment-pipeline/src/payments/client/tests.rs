//! Sorting the payment API's answers, quoting them, and the URLs the client accepts.

use super::*;

#[test]
fn statuses_sort_into_receipts_outages_and_refusals() {
    let ok = classify(StatusCode::CREATED, br#"{"id":"ch_1"}"#).unwrap();
    assert_eq!(ok.body["id"], "ch_1");
    for status in [
        StatusCode::SERVICE_UNAVAILABLE,
        StatusCode::TOO_MANY_REQUESTS,
    ] {
        let err = classify(status, b"busy").unwrap_err();
        assert!(err.is_downstream_failure(), "{err}");
    }
    let refused = classify(StatusCode::PAYMENT_REQUIRED, b"declined").unwrap_err();
    assert!(!refused.is_downstream_failure());
    assert!(matches!(refused, PaymentError::Declined { ref body, .. } if body == "declined"));
}

#[test]
fn only_an_order_level_decline_is_final_systemic_refusals_are_outages() {
    let decline_422 =
        br#"{"error":{"decline_code":"insufficient_funds","message":"card 4242 has no funds"}}"#;
    for (status, body) in [
        (402, &b"{}"[..]),
        (402, b"not json"),
        (422, decline_422),
        (422, br#"{"decline_code":"do_not_honor"}"#),
    ] {
        let status = StatusCode::from_u16(status).unwrap();
        let err = classify(status, body).unwrap_err();
        assert!(
            matches!(err, PaymentError::Declined { .. }),
            "{status}: {err}"
        );
        assert!(!err.is_downstream_failure(), "{status}");
    }
    for status in [
        301, 302, 307, 400, 401, 403, 404, 405, 408, 410, 415, 422, 451, 503,
    ] {
        let status = StatusCode::from_u16(status).unwrap();
        let err = classify(status, br#"{"error":{"code":"invalid_api_key"}}"#).unwrap_err();
        assert!(
            matches!(err, PaymentError::Unavailable { .. }),
            "{status} must keep the order: {err}"
        );
        assert!(
            err.is_downstream_failure(),
            "{status} must count toward opening"
        );
        assert!(err.outcome_known(), "{status}: not charged");
    }
}

#[test]
fn errors_name_the_status_and_the_provider_code_never_the_body() {
    let body = br#"{"error":{"decline_code":"insufficient_funds","message":"card 4242 4242 4242 4242, jane@example.com"}}"#;
    let declined = classify(StatusCode::PAYMENT_REQUIRED, body).unwrap_err();
    assert_eq!(
        declined.to_string(),
        "payment API declined the order: HTTP 402 (insufficient_funds)"
    );
    let unavailable = classify(
        StatusCode::UNAUTHORIZED,
        br#"{"code":"bad key sk_live_123"}"#,
    )
    .unwrap_err();
    // Not shaped like a code: not kept.
    assert_eq!(unavailable.to_string(), "payment API unavailable: HTTP 401");
}

#[test]
fn https_only_but_loopback_and_the_allowed_local_host() {
    let timeout = Duration::from_millis(DEFAULT_TIMEOUT_MS);
    let err = PaymentClient::new("ftp://pay", timeout, None).unwrap_err();
    assert!(err.to_string().contains("https"), "{err}");
    assert!(PaymentClient::new("http://127.0.0.1:9/charges", timeout, None).is_ok());
    assert!(PaymentClient::new("http://localhost:9/charges", timeout, None).is_ok());
    assert!(PaymentClient::new("http://[::1]:9/charges", timeout, None).is_ok());
    assert!(PaymentClient::new("https://pay.example.com/charges", timeout, None).is_ok());
    let err = PaymentClient::new("http://pay.example.com/charges", timeout, None).unwrap_err();
    assert!(err.to_string().contains(ALLOW_HTTP_HOST), "{err}");
    let docker = Some("host.docker.internal");
    assert!(
        PaymentClient::new("http://host.docker.internal:4562/charges", timeout, docker).is_ok()
    );
    assert!(PaymentClient::new("http://pay.example.com/charges", timeout, docker).is_err());
    assert!(PaymentClient::new("http://pay.example.com/charges", timeout, Some(" ")).is_err());
}

#[test]
fn long_bodies_are_quoted_cut() {
    let body = "é".repeat(1000);
    let refused = classify(StatusCode::PAYMENT_REQUIRED, body.as_bytes()).unwrap_err();
    let PaymentError::Declined { body: quoted, .. } = refused else {
        panic!("{refused}");
    };
    assert!(quoted.len() < MAX_QUOTED_BYTES + 80, "{quoted}");
    assert!(quoted.ends_with("… (2000 bytes)"), "{quoted}");
}

#[test]
fn an_error_the_provider_may_have_committed_first_is_an_unknown_outcome() {
    // A 5xx after the commit (a crash, a load balancer that gave up) and a 409 for a
    // concurrent request with the same key: the order may be charged.
    for status in [500, 502, 504, 409] {
        let status = StatusCode::from_u16(status).unwrap();
        let err = classify(status, br#"{"error":"upstream timed out"}"#).unwrap_err();
        assert!(
            matches!(err, PaymentError::Ambiguous { .. }),
            "{status}: {err}"
        );
        assert!(!err.outcome_known(), "{status} must be parked, not retried");
        assert!(
            err.is_downstream_failure(),
            "{status} counts toward opening"
        );
    }
    // Turned away before any work: known not charged.
    for status in [503, 429] {
        let status = StatusCode::from_u16(status).unwrap();
        assert!(classify(status, b"busy").unwrap_err().outcome_known());
    }
}

/// A server that answers every request with `status` and closes.
async fn answering(status: u16) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/charges", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut request = [0; 4096];
            let _ = stream.read(&mut request).await;
            let answer =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    url
}

#[tokio::test]
async fn a_provider_that_deduplicates_gets_an_ambiguous_answer_retried_with_the_same_key() {
    let url = answering(504).await;
    let order = Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#).unwrap();
    let timeout = Duration::from_secs(2);
    let parking = PaymentClient::new(&url, timeout, None).unwrap();
    let err = parking.charge(&order).await.unwrap_err();
    assert!(
        matches!(err, PaymentError::Ambiguous { status: 504, .. }),
        "{err}"
    );
    let retrying = PaymentClient::new(&url, timeout, None)
        .unwrap()
        .deduplicating(true);
    let err = retrying.charge(&order).await.unwrap_err();
    assert!(
        matches!(err, PaymentError::Unavailable { status: 504, .. }),
        "{err}"
    );
    assert!(err.outcome_known());
}

#[tokio::test]
async fn a_connection_that_never_opens_was_never_sent_not_an_unknown_outcome() {
    // A listener whose accept backlog is full: further SYNs are dropped, the connect hangs.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let address = listener.local_addr().unwrap();
    let mut held = Vec::new();
    for _ in 0..8 {
        match tokio::time::timeout(
            Duration::from_millis(200),
            tokio::net::TcpStream::connect(address),
        )
        .await
        {
            Ok(Ok(stream)) => held.push(stream),
            _ => break,
        }
    }
    let url = format!("http://{address}/charges");
    let client = PaymentClient::with_connect_timeout(
        &url,
        Duration::from_secs(3),
        Duration::from_millis(300),
        None,
    )
    .unwrap();
    let order = Order::parse(r#"{"order_id": "o-1", "amount": 5, "currency": "EUR"}"#).unwrap();
    let err = client.charge(&order).await.unwrap_err();
    assert!(
        matches!(err, PaymentError::Unreachable(_)),
        "a connect that hangs must end as unreachable, not a timeout: {err}"
    );
    assert!(err.outcome_known());
    drop((listener, held));
}

#[test]
fn one_orders_refusal_is_not_the_apis_another_orders_same_refusal_is() {
    let client = PaymentClient::new(
        "https://pay.example.com/charges",
        Duration::from_secs(1),
        None,
    )
    .unwrap();
    let order = |id: &str| {
        Order::parse(&format!(
            r#"{{"order_id": "{id}", "amount": 5, "currency": "EUR"}}"#
        ))
        .unwrap()
    };
    let refused = classify(
        StatusCode::BAD_REQUEST,
        br#"{"error":{"code":"invalid_request"}}"#,
    )
    .unwrap_err();
    assert!(refused.is_request_refusal());
    for _ in 0..5 {
        assert!(!client.counts_against_api(&refused, &order("poison")));
    }
    assert!(client.counts_against_api(&refused, &order("another")));
    // Systemic refusals and outages count at once.
    let unauthorized = classify(StatusCode::UNAUTHORIZED, b"").unwrap_err();
    assert!(client.counts_against_api(&unauthorized, &order("poison")));
    let declined = classify(StatusCode::PAYMENT_REQUIRED, b"").unwrap_err();
    assert!(!client.counts_against_api(&declined, &order("poison")));
}
