#!/usr/bin/env bash
# cfn-lint and `sam validate --lint` on template.yaml (once it exists).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f template.yaml ]]; then
  echo "template.yaml not written yet: nothing to lint"
  exit 0
fi
.local/venv/bin/cfn-lint template.yaml
.local/venv/bin/sam validate --lint --template template.yaml --region us-east-1
