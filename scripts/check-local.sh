#!/usr/bin/env bash
# The local loop's files against template.yaml, without Docker: every events/ file is for a
# function of the template (`<binary>.json` or `<binary>-<variant>.json`) and every function
# has one; local/sam-env.json (`sam local invoke --env-vars`) names exactly the template's
# functions and, for each, exactly its variables (Globals included), with string values and
# the ports of `make local`; the SQS event keeps the shape of
# `sam local generate-event sqs receive-message`; and the environment `sam local invoke`
# gives each function, with and without that file, points where it should
# (scripts/sam-local-env.py).
set -euo pipefail
cd "$(dirname "$0")/.."
generated=$(.local/venv/bin/sam local generate-event sqs receive-message)
GENERATED_SQS="$generated" .local/venv/bin/python3 - <<'PY'
import json, os, pathlib, re, sys
from samcli.yamlhelper import yaml_parse

template = yaml_parse(pathlib.Path("template.yaml").read_text())
globals_vars = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
functions = {}  # logical id -> (binary, variables, events)
for logical_id, resource in template["Resources"].items():
    if resource["Type"] != "AWS::Serverless::Function":
        continue
    binary = resource["Metadata"]["BuildProperties"]["Binary"]
    variables = {**globals_vars, **resource["Properties"].get("Environment", {}).get("Variables", {})}
    functions[logical_id] = (binary, set(variables), resource["Properties"].get("Events", {}))
errors = []

# events/: each file for one function, each function with a file, each file a JSON object.
by_binary = {binary: logical_id for logical_id, (binary, _, _) in functions.items()}
covered = set()
for path in sorted(pathlib.Path("events").glob("*")):
    stem = path.stem
    binary = next((b for b in sorted(by_binary, key=len, reverse=True) if stem == b or stem.startswith(b + "-")), None)
    if path.suffix != ".json" or binary is None:
        errors.append(f"{path}: not <binary>[-variant].json for a binary of template.yaml ({', '.join(sorted(by_binary))})")
        continue
    covered.add(binary)
    try:
        event = json.loads(path.read_text())
    except ValueError as e:
        errors.append(f"{path}: not JSON: {e}")
        continue
    if not isinstance(event, dict):
        errors.append(f"{path}: not a JSON object")
    # An SQS-triggered function's event: the generated record's keys and attribute names.
    _, _, triggers = functions[by_binary[binary]]
    if any(t.get("Type") == "SQS" for t in triggers.values()):
        reference = json.loads(os.environ["GENERATED_SQS"])["Records"][0]
        for i, record in enumerate(event.get("Records", [])):
            if set(record) != set(reference):
                errors.append(f"{path}: record {i} keys {sorted(record)} differ from sam local generate-event sqs receive-message {sorted(reference)}")
            if set(record.get("attributes", {})) != set(reference["attributes"]):
                errors.append(f"{path}: record {i} attributes differ from the generated event's")
        if not event.get("Records"):
            errors.append(f"{path}: no Records for an SQS-triggered function")
errors += [f"{b}: no event in events/" for b in sorted(set(by_binary) - covered)]

# local/sam-env.json: exactly the functions, exactly their variables, strings.
env = json.loads(pathlib.Path("local/sam-env.json").read_text())
for logical_id in sorted(set(env) ^ set(functions)):
    where = "local/sam-env.json" if logical_id in env else "template.yaml"
    errors.append(f"local/sam-env.json: {logical_id} is only in {where}")
for logical_id, (_, variables, _) in functions.items():
    given = env.get(logical_id, {})
    errors += [f"local/sam-env.json: {logical_id}.{v} missing" for v in sorted(variables - set(given))]
    errors += [f"local/sam-env.json: {logical_id}.{v} is not a variable of template.yaml" for v in sorted(set(given) - variables)]
    errors += [f"local/sam-env.json: {logical_id}.{v} is not a string" for v, value in given.items() if not isinstance(value, str)]

# The ports of `make local` (local-stack's base port: AWS endpoint +1, payment API +2).
base = int(re.search(r"const DEFAULT_BASE_PORT: u16 = (\d+);", pathlib.Path("devstack/src/bin/local-stack.rs").read_text()).group(1))
expected = {
    "PAYMENT_API_URL": f"http://host.docker.internal:{base + 2}/charges",
    "OVERFLOW_QUEUE_URL": f"http://host.docker.internal:{base + 1}/123456789012/overflow",
}
for logical_id, given in env.items():
    for variable, value in expected.items():
        if variable in given and given[variable] != value:
            errors.append(f"local/sam-env.json: {logical_id}.{variable} = {given[variable]}, make local serves {value}")

if errors:
    sys.exit("local loop files:\n  " + "\n  ".join(errors))
print(f"{len(list(pathlib.Path('events').glob('*')))} events and local/sam-env.json match the {len(functions)} functions of template.yaml")
PY

# What `sam local invoke` gives each function's container, computed by SAM itself.
.local/venv/bin/python scripts/sam-local-env.py
