#!/usr/bin/env python3
"""Checks template.yaml's policies on the circuit table, and docs/dynamodb.md's IAM, against
what the runtime uses: the SDK operations the store's source sends (the operators' listings
aside), which DynamoDbStore::IAM_ACTIONS must name, and each circuit's dynamodb:LeadingKeys
values as examples/iam_policy.rs prints them from the runtime's own key format."""
import pathlib
import re
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
STORE = ROOT / "breaker-runtime/src/store/dynamodb"
# The circuit docs/dynamodb.md's IAM example is written for.
DOCUMENTED_CIRCUIT = "payment-backend"


class Loader(yaml.SafeLoader):
    """CloudFormation's short tags (`!GetAtt X.Arn`) read as the text `!GetAtt X.Arn`."""


Loader.add_multi_constructor(
    "!",
    lambda loader, tag, node: f"!{tag} {loader.construct_scalar(node)}"
    if isinstance(node, yaml.ScalarNode)
    else f"!{tag}",
)


def sent_actions():
    ops = set()
    for path in STORE.glob("*.rs"):
        if path.name == "listing.rs":  # `breaker list`: operators' Scan/Query
            continue
        ops |= set(re.findall(r"\.(\w+_item|query|scan)\(\)", path.read_text()))
    return {"dynamodb:" + "".join(w.capitalize() for w in op.split("_")) for op in ops}


def circuit_table_statements(template):
    for name, resource in template["Resources"].items():
        for policy in resource.get("Properties", {}).get("Policies", []) or []:
            if not isinstance(policy, dict):
                continue
            for statement in policy.get("Statement", []):
                if statement.get("Resource") == "!GetAtt CircuitTable.Arn":
                    yield name, statement


def main():
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=Loader)
    statements = list(circuit_table_statements(template))
    problems = [] if statements else ["no policy on the circuit table in template.yaml"]
    circuits = {DOCUMENTED_CIRCUIT}
    for _, st in statements:
        like = st.get("Condition", {}).get("ForAllValues:StringLike", {})
        circuits |= {k for k in like.get("dynamodb:LeadingKeys", []) if "*" not in k}
    printed = subprocess.run(
        ["cargo", "run", "-q", "-p", "breaker-runtime", "--example", "iam_policy", "--", *sorted(circuits)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.splitlines()
    actions = {line.split()[1] for line in printed if line.startswith("action ")}
    keys = {line.split()[1]: set(line.split()[2:]) for line in printed if line.startswith("key ")}

    unnamed = sent_actions() - actions
    if unnamed:
        problems.append(f"the store sends {sorted(unnamed)}, missing from DynamoDbStore::IAM_ACTIONS")
    for name, st in statements:
        granted = set(st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
        if not actions <= granted:
            problems.append(f"{name}: {sorted(actions - granted)} not allowed on the circuit table")
        like = st.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
        if like is None:
            problems.append(f"{name}: needs ForAllValues:StringLike on dynamodb:LeadingKeys")
            continue
        own = [k for k in like if "*" not in k]
        if len(own) != 1:
            problems.append(f"{name}: LeadingKeys {like} should name one circuit")
            continue
        missing = keys[own[0]] - set(like)
        if missing:
            problems.append(f"{name}: LeadingKeys {like} lack {sorted(missing)}")
    docs = (ROOT / "docs/dynamodb.md").read_text()
    for needed in sorted(actions | keys[DOCUMENTED_CIRCUIT]):
        if needed not in docs:
            problems.append(f"docs/dynamodb.md's IAM lacks {needed}")
    if problems:
        sys.exit("IAM on the circuit table:\n  " + "\n  ".join(problems))
    print(f"{len(statements)} circuit-table policies allow the {len(actions)} actions and every key the breakers write")


if __name__ == "__main__":
    main()
