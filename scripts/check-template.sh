#!/usr/bin/env bash
# cfn-lint and `sam validate --lint` on template.yaml, every alarm notifying a topic, and
# every environment variable the sample functions read set in the template and documented
# in docs/functions.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f template.yaml ]]; then
  echo "template.yaml not written yet: nothing to lint"
  exit 0
fi
.local/venv/bin/cfn-lint template.yaml
.local/venv/bin/sam validate --lint --template template.yaml --region us-east-1

# An alarm without AlarmActions changes state with nobody told: each must notify an SNS
# topic of the template that has a subscription. The template is read as cfn-lint reads it
# (its YAML tags decoded).
.local/venv/bin/python3 - <<'PY'
import sys
from cfnlint.decode import decode
template, problems = decode("template.yaml")
if problems:
    sys.exit(f"template.yaml does not decode: {problems}")
resources = template["Resources"]
topics = {
    name for name, r in resources.items()
    if r["Type"] == "AWS::SNS::Topic" and r.get("Properties", {}).get("Subscription")
}
alarms = [name for name, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"]
silent = [
    name for name in alarms
    if not any(
        isinstance(action, dict) and action.get("Ref") in topics
        for action in resources[name]["Properties"].get("AlarmActions", [])
    )
]
if silent or not alarms:
    sys.exit("alarms that notify no subscribed SNS topic of the template:\n  " + "\n  ".join(silent or ["(no alarm found)"]))
print(f"{len(alarms)} alarms notify a subscribed topic")
PY

# A variable is any SCREAMING_SNAKE_CASE string literal in the functions' non-test code
# (settings are read through circuit_env::setting by name).
python3 - <<'PY'
import pathlib, re, sys
names = set()
for path in pathlib.Path("functions").glob("*/src/**/*.rs"):
    code = path.read_text().split("#[cfg(test)]")[0]
    code = "\n".join(l for l in code.splitlines() if not l.lstrip().startswith("//"))
    names |= set(re.findall(r'"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"', code))
template = pathlib.Path("template.yaml").read_text()
docs = pathlib.Path("docs/functions.md").read_text()
missing = [f"{n}: not set in template.yaml" for n in sorted(names) if not re.search(rf"^\s+{n}:", template, re.M)]
missing += [f"{n}: not in docs/functions.md" for n in sorted(names) if f"`{n}`" not in docs]
if missing:
    sys.exit("environment variables:\n  " + "\n  ".join(missing))
print(f"{len(names)} environment variables set in template.yaml and documented")
PY


# Every function's policy on the circuit table allows the actions the store sends and the
# keys its circuit's breakers write, as the runtime forms them: a key or an action added
# later cannot be forgotten here, nor in docs/dynamodb.md.
.local/venv/bin/python scripts/check-iam.py
