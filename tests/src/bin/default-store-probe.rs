//! Warms the circuit `probe` up on the process default store and prints what `warm_up`
//! answered (`warmed=N` or `error=MESSAGE`), so tests can check in fresh processes how the
//! environment (`AWS_LAMBDA_FUNCTION_NAME`, `CIRCUIT_BREAKER_TABLE`,
//! `CIRCUIT_BREAKER_STORE`) selects that store.

#[tokio::main(flavor = "current_thread")]
async fn main() {
    match breaker_runtime::warm_up(["probe"]).await {
        Ok(warmed) => println!("warmed={warmed}"),
        Err(error) => println!("error={error}"),
    }
}
