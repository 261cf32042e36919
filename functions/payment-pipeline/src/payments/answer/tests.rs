//! Sorting the payment API's answers and quoting them.

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
