use std::cell::Cell;

use super::Form::{Hashed, Whole};
use super::*;
use crate::CircuitBreakerConfig;
use crate::store::InMemoryStore;

fn circuit() -> CircuitBreaker {
    CircuitBreaker::new(
        "keys",
        Arc::new(InMemoryStore::new()),
        CircuitBreakerConfig::default(),
    )
}

/// Calls `key` on `circuits`, counting the circuits made in `made`.
fn call(circuits: &Circuits, form: Form, key: &str, made: &Cell<u32>) {
    circuits.with(
        form,
        key,
        || {
            made.set(made.get() + 1);
            circuit()
        },
        |_| (),
    );
}

#[test]
fn a_key_is_made_once_while_kept_and_the_bound_holds() {
    let circuits = Circuits::new(3);
    let made = Cell::new(0);
    for key in ["a", "b", "a", "c", "a", "b"] {
        call(&circuits, Whole, key, &made);
    }
    assert_eq!((made.get(), circuits.len()), (3, 3));
    for i in 0..100 {
        call(&circuits, Whole, &format!("one-off-{i}"), &made);
        assert!(circuits.len() <= 3);
    }
}

#[test]
fn hot_keys_outlive_a_burst_of_one_off_keys() {
    let circuits = Circuits::new(100);
    let made = Cell::new(0);
    let hot: Vec<String> = (0..20).map(|i| format!("hot-{i}")).collect();
    for key in hot.iter().chain(&hot) {
        call(&circuits, Whole, key, &made);
    }
    assert_eq!(made.get(), 20);
    // Each hot key is called once per 500 new keys: five times the capacity.
    for round in 0..20 {
        for i in 0..500 {
            call(&circuits, Whole, &format!("one-off-{round}-{i}"), &made);
        }
        for key in &hot {
            call(&circuits, Whole, key, &made);
        }
    }
    assert_eq!(made.get(), 20 + 20 * 500, "no hot key was made again");
    assert_eq!(circuits.len(), 100);
}

#[test]
fn a_smaller_capacity_evicts_down_to_it_and_never_below_one() {
    let circuits = Circuits::new(1_000);
    let made = Cell::new(0);
    for i in 0..1_000 {
        call(&circuits, Whole, &i.to_string(), &made);
    }
    circuits.set_capacity(10);
    assert_eq!(circuits.len(), 10);
    circuits.set_capacity(0);
    assert_eq!(circuits.len(), 1);
    let kept = ["999"]
        .iter()
        .filter(|k| circuits.peek(Whole, k).is_some())
        .count();
    assert_eq!(kept, 1, "the newest key stays");
}

#[test]
fn a_hashed_form_and_a_whole_key_spelled_alike_are_two_keys_under_one_bound() {
    let circuits = Circuits::new(2);
    let made = Cell::new(0);
    call(&circuits, Whole, "p~0123", &made);
    call(&circuits, Hashed, "p~0123", &made);
    assert_eq!(made.get(), 2);
    assert!(circuits.peek(Whole, "p~0123").is_some() && circuits.peek(Hashed, "p~0123").is_some());
    call(&circuits, Whole, "c", &made);
    assert_eq!(circuits.len(), 2, "one bound for both forms");
}

#[test]
fn an_evicted_key_held_by_a_threads_near_cache_is_made_again() {
    let circuits = Circuits::new(1);
    let made = Cell::new(0);
    call(&circuits, Whole, "a", &made);
    call(&circuits, Whole, "b", &made);
    assert!(circuits.peek(Whole, "a").is_none());
    call(&circuits, Whole, "a", &made);
    assert_eq!(made.get(), 3, "the near cache's evicted entry is not used");
}

#[test]
fn a_nested_call_on_the_same_thread_runs() {
    let circuits = Circuits::new(10);
    let made = Cell::new(0);
    call(&circuits, Whole, "outer", &made);
    circuits.with(Whole, "outer", circuit, |_| {
        call(&circuits, Whole, "inner", &made);
        call(&circuits, Whole, "outer", &made);
    });
    assert_eq!(made.get(), 2);
}

#[test]
fn two_keyed_circuits_never_share_a_near_cache_entry() {
    let (first, second) = (Circuits::new(1_000), Circuits::new(1_000));
    let made = Cell::new(0);
    // Enough keys that some land in the slot the other circuit's same key took.
    let keys: Vec<String> = (0..512).map(|i| format!("k{i}")).collect();
    for key in &keys {
        call(&first, Whole, key, &made);
        call(&second, Whole, key, &made);
    }
    assert_eq!(made.get(), 1_024, "each circuit made each key its own");
}
