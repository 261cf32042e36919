//! The URLs the client accepts, and what it makes of answers over a real connection.

use hyper::StatusCode;

use super::*;

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

/// A server that answers every request with `status` and closes.
async fn answering(status: u16) -> String {
    answering_with(status, "").await
}

/// [`answering`] with extra header lines (each ending in `\r\n`).
async fn answering_with(status: u16, headers: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/charges", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut request = [0; 4096];
            let _ = stream.read(&mut request).await;
            let answer = format!(
                "HTTP/1.1 {status} X\r\n{headers}content-length: 0\r\nconnection: close\r\n\r\n"
            );
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

#[tokio::test]
async fn a_429_or_503_with_retry_after_carries_it_and_other_statuses_do_not() {
    let order = Order::parse(r#"{"order_id": "o-2", "amount": 5, "currency": "EUR"}"#).unwrap();
    let timeout = Duration::from_secs(2);
    for (status, expected) in [(429, Some(20)), (503, Some(20)), (500, None), (401, None)] {
        let url = answering_with(status, "retry-after: 20\r\n").await;
        let err = PaymentClient::new(&url, timeout, None)
            .unwrap()
            .charge(&order)
            .await
            .unwrap_err();
        assert_eq!(
            err.retry_after(),
            expected.map(Duration::from_secs),
            "{status}: {err}"
        );
    }
    let url = answering_with(429, "retry-after: Wed, 21 Oct 2026 07:28:00 GMT\r\n").await;
    let err = PaymentClient::new(&url, timeout, None)
        .unwrap()
        .charge(&order)
        .await
        .unwrap_err();
    assert_eq!(err.retry_after(), None, "an HTTP date is not read: {err}");
}
