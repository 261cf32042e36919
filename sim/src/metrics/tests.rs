use super::*;
use crate::model::RequestCost;

fn request(kind: RequestKind, outcome: RequestOutcome, t: u64) -> StoreRequest {
    StoreRequest {
        time_ms: t,
        env: 0,
        kind,
        outcome,
        cost: RequestCost {
            attempts: 1,
            throttled_attempts: 0,
            latency_ms: 10,
            read_half_units: 0,
            write_units: 1,
        },
        opening: None,
    }
}

fn admitted(env: u32, t: u64) -> Call {
    Call {
        env,
        start_ms: t,
        decided_ms: t + 50,
        end_ms: t + 50,
        admitted: true,
        probe: None,
        failed: false,
        abandoned: false,
        killed: false,
        unhealthy: false,
        retry_after_ms: None,
        shed: false,
    }
}

#[test]
fn windows_count_elections_and_propagation_is_measured_from_landings() {
    let mut m = Metrics::new("t", 3, 1, 100_000, 6_000, Some(40_000));
    m.on_call(&admitted(0, 500));
    m.on_request(&request(RequestKind::Trip, RequestOutcome::Won, 1_000));
    m.on_call(&admitted(1, 3_000)); // still calling 2 s after the trip landed
    m.on_call(&admitted(2, 2_000));
    m.on_request(&request(RequestKind::Elect, RequestOutcome::Won, 31_000));
    m.on_request(&request(RequestKind::Elect, RequestOutcome::Lost, 31_000));
    let mut throttled = request(RequestKind::Elect, RequestOutcome::Throttled, 31_000);
    (throttled.cost.attempts, throttled.cost.throttled_attempts) = (2, 2);
    m.on_request(&throttled);
    m.on_request(&request(RequestKind::Close, RequestOutcome::Won, 45_000));
    m.on_call(&admitted(2, 46_000));
    m.on_call(&admitted(1, 49_000));
    m.on_call(&admitted(1, 52_000)); // not its first admission after the close
    let s = m.summary();
    assert_eq!(s.windows, 1);
    assert_eq!(s.max_elections_won_per_window, 1);
    assert_eq!(s.max_election_writes_per_window, 4);
    assert_eq!(s.max_open_propagation_s, Some(2.0));
    assert_eq!(s.max_close_propagation_s, Some(4.0));
    assert_eq!(s.downstream_calls_while_open, 2);
    assert_eq!(s.time_to_close_s, Some(5.0));
    assert_eq!((s.throttled_requests, s.throttled_in_trip_burst), (2, 0));
}

#[test]
fn throttles_inside_the_trip_burst_are_counted_apart() {
    let mut m = Metrics::new("t", 1, 1, 100_000, 6_000, None);
    let mut trip = request(RequestKind::Trip, RequestOutcome::Throttled, 10_000);
    trip.cost.throttled_attempts = 2;
    m.on_request(&trip);
    let mut read = request(RequestKind::Read, RequestOutcome::Throttled, 16_000);
    read.cost.throttled_attempts = 1;
    m.on_request(&read);
    read.time_ms = 16_001;
    m.on_request(&read);
    let s = m.summary();
    assert_eq!(
        (
            s.throttled_requests,
            s.throttled_in_trip_burst,
            s.throttled_outside_trip_burst
        ),
        (4, 3, 1)
    );
}
