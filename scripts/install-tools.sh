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
    echo "installing moto, cfn-lint, aws-sam-cli, cargo-lambda, aws-lambda-powertools into .local/venv" >&2
    "$LOCAL/venv/bin/pip" install --quiet --disable-pip-version-check \
      'moto[server]==5.1.*' 'cfn-lint==1.*' 'aws-sam-cli==1.*' 'cargo-lambda==1.*' \
      'aws-lambda-powertools==3.*' >&2
    touch "$LOCAL/venv/.installed-v2"
  fi
}

case "$what" in
  node) install_node ;;
  python) install_python ;;
  all) install_node; install_python ;;
  *) echo "usage: $0 [node|python|all]" >&2; exit 2 ;;
esac
