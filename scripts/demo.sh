#!/usr/bin/env bash
# The local demo (`make demo`): builds the three sample functions and the demo driver
# (demo/, package breaker-demo), then plays the scenario against dynalite, moto, the fault
# proxy and a stub payment API, all on loopback. Run scripts/install-tools.sh first (make
# demo does).
#
# No process outlives it: the driver stops what it started when it ends (success or
# error); on Ctrl-C the terminal's SIGINT reaches the whole process group, and the local
# services' supervisors kill them when the driver's pipe closes.
set -euo pipefail
cd "$(dirname "$0")/.."

# One cargo invocation, so the functions and the driver share one build of the AWS SDK.
cargo build --quiet --bins -p cost-report -p charge -p overflow-replay -p breaker-demo
"${CARGO_TARGET_DIR:-target}/debug/demo"
