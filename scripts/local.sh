#!/usr/bin/env bash
# `make local`: the sample functions' local stack and cargo-lambda's emulator, for
# invocations by hand (docs/functions.md, "Invoke by hand"). Builds the functions and the
# local-stack binary (devstack/src/bin/local-stack.rs), which starts dynalite, moto (SQS, Cost
# Explorer) behind the fault proxy, the stub payment API and the fault control on fixed
# loopback ports, creates the tables and queues, prints the endpoints, and runs
# `cargo lambda watch` with every function's environment pointed at them. Ctrl-C stops
# everything. Arguments go to local-stack: `--base-port N`, `--invoke-port P`,
# `-- WATCH_ARGS...`. Run scripts/install-tools.sh first (make local does).
set -euo pipefail
cd "$(dirname "$0")/.."

# Built the way `cargo lambda watch` builds them (`cargo run --bin NAME` at the workspace
# root, so the same feature set): its first invocation of each function starts at once.
cargo build --quiet --bin cost-report --bin charge --bin overflow-replay --bin local-stack
exec "${CARGO_TARGET_DIR:-target}/debug/local-stack" "$@"
