#!/usr/bin/env bash
# The local demo. Until the sample functions land it runs the runtime quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet -p breaker-runtime --example quickstart
