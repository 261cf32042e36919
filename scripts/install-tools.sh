#!/usr/bin/env bash
# Installs the local services and tools the tests and the demo need, into .local/ (git-ignored).
# Idempotent: a second run only checks. Usage: scripts/install-tools.sh [node|python|all|cross|mutants]
# (`cross`, for `make cross-check`, is not part of `all`: it installs system packages with apt;
# `mutants`, for `make mutants`, is not either: `make test` does not need it.)
set -euo pipefail
cd "$(dirname "$0")/.."
LOCAL="$PWD/.local"
mkdir -p "$LOCAL"
what="${1:-all}"

install_node() {
  if [[ ! -x "$LOCAL/node/node_modules/.bin/dynalite" ]]; then
    echo "installing dynalite into .local/node" >&2
    npm install --silent --no-audit --no-fund --prefix "$LOCAL/node" dynalite@4.0.0 >&2
  fi
}

install_python() {
  if [[ ! -x "$LOCAL/venv/bin/python" ]]; then
    python3 -m venv "$LOCAL/venv"
  fi
  if [[ ! -f "$LOCAL/venv/.installed-v2" ]]; then
    echo "installing moto, cfn-lint, aws-sam-cli, cargo-lambda into .local/venv" >&2
    "$LOCAL/venv/bin/pip" install --quiet --disable-pip-version-check \
      'moto[server]==5.1.*' 'cfn-lint==1.*' 'aws-sam-cli==1.*' 'cargo-lambda==1.*' >&2
    touch "$LOCAL/venv/.installed-v2"
  fi
  install_powertools
}

# Each Powertools for AWS Lambda (Python) release the CLI's interop tests run, pinned, in a
# directory of its own (.local/powertools-VERSION) that the tests put first on the venv's
# PYTHONPATH. Its dependencies (jmespath, typing-extensions; boto3 for the tests) come from
# the venv, whose packages already require them. 3.34.0 is the first release with
# utilities.circuit_breaker (3.31 had it as circuit_breaker_alpha); 3.37.0 the newest the
# package index serves.
POWERTOOLS_VERSIONS=(3.34.0 3.37.0)
install_powertools() {
  local version target
  for version in "${POWERTOOLS_VERSIONS[@]}"; do
    target="$LOCAL/powertools-$version"
    if [[ ! -f "$target/.installed" ]]; then
      echo "installing aws-lambda-powertools $version into .local/powertools-$version" >&2
      rm -rf "$target"
      "$LOCAL/venv/bin/pip" install --quiet --disable-pip-version-check \
        --no-deps --target "$target" "aws-lambda-powertools==$version" >&2
      # Fails here, not in the tests, if the venv lacks one of its dependencies.
      PYTHONPATH="$target" "$LOCAL/venv/bin/python" -c \
        'import aws_lambda_powertools.utilities.circuit_breaker.persistence' >&2
      touch "$target/.installed"
    fi
  done
}

# `make mutants`: cargo-mutants, built from crates.io into .local/cargo (a few minutes, once).
CARGO_MUTANTS_VERSION=27.1.0
install_mutants() {
  if ! "$LOCAL/cargo/bin/cargo-mutants" mutants --version 2>/dev/null | grep -q " $CARGO_MUTANTS_VERSION\$"; then
    echo "installing cargo-mutants $CARGO_MUTANTS_VERSION into .local/cargo" >&2
    cargo install --quiet --locked --root "$LOCAL/cargo" "cargo-mutants@$CARGO_MUTANTS_VERSION" >&2
  fi
}

# `make cross-check`: Debian's rustc with the aarch64 standard library (rustup cannot fetch
# one offline), the cross linker and the user-mode emulator that runs the arm64 bootstrap.
# Installed with apt as root; fails, never skips, when they cannot be installed.
CROSS_RUSTC=/usr/bin/rustc
CROSS_RUST_VERSION=1.96
CROSS_PACKAGES=(rustc-web libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static)
cross_ready() {
  [[ -x "$CROSS_RUSTC" ]] &&
    "$CROSS_RUSTC" --version | grep -q "^rustc $CROSS_RUST_VERSION\\." &&
    [[ -d "$("$CROSS_RUSTC" --print sysroot)/lib/rustlib/aarch64-unknown-linux-gnu/lib" ]] &&
    command -v aarch64-linux-gnu-gcc >/dev/null &&
    command -v qemu-aarch64-static >/dev/null &&
    [[ -e /lib/ld-linux-aarch64.so.1 ]]
}
install_cross() {
  cross_ready && return 0
  if [[ "$(id -u)" != 0 ]]; then
    echo "install-tools: the cross toolchain is missing and installing it needs root (apt-get):" >&2
    echo "  dpkg --add-architecture arm64; apt-get update; apt-get install ${CROSS_PACKAGES[*]}" >&2
    exit 1
  fi
  echo "installing ${CROSS_PACKAGES[*]} with apt" >&2
  dpkg --add-architecture arm64
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${CROSS_PACKAGES[@]}" >&2
  if ! cross_ready; then
    echo "install-tools: after apt-get, $CROSS_RUSTC is not rustc $CROSS_RUST_VERSION with the aarch64 std," \
      "or aarch64-linux-gnu-gcc, qemu-aarch64-static or the arm64 loader is missing" >&2
    exit 1
  fi
}

case "$what" in
  node) install_node ;;
  python) install_python ;;
  all) install_node; install_python ;;
  cross) install_cross ;;
  mutants) install_mutants ;;
  *) echo "usage: $0 [node|python|all|cross|mutants]" >&2; exit 2 ;;
esac
