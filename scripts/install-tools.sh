#!/usr/bin/env bash
# Installs the local services and tools the tests and the demo need, into .local/ (git-ignored).
# Idempotent: a second run only checks. Usage: scripts/install-tools.sh [node|python|all]
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

case "$what" in
  node) install_node ;;
  python) install_python ;;
  all) install_node; install_python ;;
  *) echo "usage: $0 [node|python|all]" >&2; exit 2 ;;
esac
