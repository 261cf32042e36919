#!/usr/bin/env bash
# Instructions per hot-path call, breaker next to failsafe and recloser, counted by
# callgrind: unlike a timing, a count does not move with the load of a shared machine.
#
#   scripts/count-instructions.sh [--users] [CALLS]        (needs valgrind on PATH)
#
# The first tables: the workspace's harness (bench target `hot_path_calls`), then the closed
# path with feature `metrics` and a counting recorder beside the feature off, and with call
# durations recorded. The last table: the closed path as users build it (`user-bench/`, a
# crate outside the workspace), in Cargo's default release profile and with cargo-lambda's
# release settings; `--users` prints that table only.
#
# Each operation runs twice, CALLS and 2·CALLS times; the difference divided by CALLS is
# the cost of one call, set-up and warm-up excluded. The vDSO clock read is not counted
# (valgrind runs without the vDSO, so glibc's clock_gettime makes a syscall there): breaker's
# figures leave out the part of its clock read that the vDSO executes.
set -euo pipefail
cd "$(dirname "$0")/.."
users_only=false
if [[ "${1:-}" == --users ]]; then users_only=true; shift; fi
calls="${1:-100000}"
command -v valgrind >/dev/null || { echo "valgrind is not on PATH" >&2; exit 1; }

instructions() { # binary args... -> instructions executed by the whole run
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 \
    | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}

# The closed path as a user's crate builds it: user-bench/ has no `[profile]`, so Cargo's
# default release profile (no LTO, 16 codegen units: `cargo build --release`), or
# cargo-lambda's settings, which `cargo lambda build --release` gives through the same
# variables (thin LTO, one codegen unit). Each loop is the one `make bench-user` times.
users() {
  local default lambda op
  default=$(user_build default)
  lambda=$(user_build lambda CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1)
  printf '\n%-20s %16s %18s\n' "as users build" "default profile" "cargo-lambda's"
  for op in baseline breaker-sync recloser-sync failsafe-sync breaker-async recloser-async \
    failsafe-async breaker-open-sync recloser-open-sync failsafe-open-sync breaker-open-async; do
    printf '%-20s %16s %18s\n' "$op" "$(user_per_call "$default" "$op")" \
      "$(user_per_call "$lambda" "$op")"
  done
}

user_build() { # name [VAR=value...] -> the binary's path
  local dir="target/user-bench/$1"
  shift
  (cd user-bench && env "$@" cargo build --quiet --locked --release --target-dir "../$dir")
  echo "$dir/release/breaker-user-bench"
}

user_per_call() { # binary operation
  local once twice
  once=$(instructions "$1" "$2" "$calls")
  twice=$(instructions "$1" "$2" $((2 * calls)))
  echo $(( (twice - once) / calls ))
}

if $users_only; then users; exit 0; fi
# The bench profile's opt-level 3 and thin LTO, but one codegen unit: with several, how the
# compiler splits the crate (and so what it inlines) moves with unrelated edits, and a
# peer's count with it (failsafe's async call read 83 or 105 in two builds). No AWS SDK.
# A bench target's binary carries a hash in its name: cargo says which file it built.
build() { # features -> the binary's path
  local built
  built=$(CARGO_PROFILE_BENCH_CODEGEN_UNITS=1 \
    cargo build --profile bench --quiet -p breaker-runtime --no-default-features \
    --features "$1" --bench hot_path_calls --message-format=json-render-diagnostics \
    | sed -n 's/.*"executable":"\([^"]*hot_path_calls[^"]*\)".*/\1/p' | tail -n 1)
  [[ -x "$built" ]] || { echo "cargo built no hot_path_calls binary ($1)" >&2; exit 1; }
  echo "$built"
}
bin=$(build macros,tower)
# The same with feature `metrics`, its breaker counting into metrics-util's DebuggingRecorder.
metrics_bin=$(build macros,tower,metrics)

count() { # operation calls [dyn] -> instructions executed by the whole run
  instructions "$bin" "$@"
}

per_call() { # operation [dyn]
  local once twice
  once=$(count "$1" "$calls" ${2:-})
  twice=$(count "$1" $((2 * calls)) ${2:-})
  echo $(( (twice - once) / calls ))
}

# Async futures are counted polled inline (as when awaited inside the caller's async fn,
# where a CircuitBreaker::call future always is) and through dyn Future (as an executor
# polls a task; a guarded async fn may be either).
printf '%-20s %12s %12s\n' operation "inline poll" "dyn poll"
for op in baseline breaker-sync failsafe-sync recloser-sync macro-sync hand-written-sync; do
  printf '%-20s %12s %12s\n' "$op" "$(per_call "$op")" -
done
for op in breaker-async failsafe-async recloser-async macro-async hand-written-async; do
  printf '%-20s %12s %12s\n' "$op" "$(per_call "$op")" "$(per_call "$op" dyn)"
done
# The trip policies (closed path) and the tower layer.
for op in rate-calls-sync rate-time-sync slow-calls-sync adaptive-sync; do
  printf '%-20s %12s %12s\n' "$op" "$(per_call "$op")" -
done
for op in rate-calls-async rate-time-async slow-calls-async adaptive-async service-call-async layer-async \
  layer-static-async; do
  printf '%-20s %12s %12s\n' "$op" "$(per_call "$op")" "$(per_call "$op" dyn)"
done

# The closed path with feature `metrics` (breaker-* rows: a counting recorder, durations
# off; durations-*: the same breaker recording call durations), beside the feature off.
printf '\n%-20s %12s %12s\n' "metrics feature" "inline poll" "dyn poll"
for op in breaker-sync; do
  printf '%-20s %12s %12s\n' "$op, off" "$(per_call "$op")" -
  printf '%-20s %12s %12s\n' "$op, on" "$(bin=$metrics_bin per_call "$op")" -
done
printf '%-20s %12s %12s\n' durations-sync "$(bin=$metrics_bin per_call durations-sync)" -
for op in breaker-async; do
  printf '%-20s %12s %12s\n' "$op, off" "$(per_call "$op")" "$(per_call "$op" dyn)"
  printf '%-20s %12s %12s\n' "$op, on" "$(bin=$metrics_bin per_call "$op")" \
    "$(bin=$metrics_bin per_call "$op" dyn)"
done
printf '%-20s %12s %12s\n' durations-async "$(bin=$metrics_bin per_call durations-async)" \
  "$(bin=$metrics_bin per_call durations-async dyn)"
users
