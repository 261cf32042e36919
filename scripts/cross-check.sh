#!/usr/bin/env bash
# The template's architecture, built and run: `charge` cross-compiled for
# aarch64-unknown-linux-gnu with Debian's rustc and aarch64 std (scripts/install-tools.sh
# cross), linked by aarch64-linux-gnu-gcc, then invoked under qemu-aarch64-static against the
# loopback Runtime API and the sample stack (dynalite, moto, the payment stub): an order
# charged once (tests/src/bin/charge-once.rs). Profile `cross`: the release profile's
# `panic = "unwind"` (what the README asks of users) without LTO, since qemu checks the
# architecture, not the optimiser. Its own target dir: another rustc's artifacts would
# only evict the host build's.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu
target_dir=target/cross
cargo=${CARGO:-cargo}

start=$SECONDS
RUSTC=/usr/bin/rustc CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  "$cargo" build --locked -p charge --target "$target" --profile cross --target-dir "$target_dir"
binary="$target_dir/$target/cross/charge"
echo "cross-check: built $binary in $((SECONDS - start)) s: $(aarch64-linux-gnu-readelf -h "$binary" | grep -m1 Machine: | tr -s " ")"

# The runner: the host's debug build, next to the function binaries the tests use.
"$cargo" build --locked -p breaker-tests --bin charge-once
start=$SECONDS
CHARGE_BINARY="$binary" CHARGE_RUNNER=qemu-aarch64-static target/debug/charge-once
echo "cross-check: the arm64 bootstrap ran under qemu in $((SECONDS - start)) s"
