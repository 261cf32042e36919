"""The environment `sam local invoke` gives each function of template.yaml, without Docker.

Runs SAM CLI's own `sam local invoke <function> --event events/<binary>.json ...` in this
process with the container runtime replaced: no Docker client is created, and the step that
would start the container records the environment SAM computed for it instead (template,
Globals, parameter defaults, samconfig.toml, --env-vars, credentials, region). Then checks:

- with samconfig.toml's defaults (no flags), and with `--env-vars local/sam-env.json
  --region us-east-1` and no samconfig.toml, every function reaches DynamoDB, SQS and Cost
  Explorer (the SDK's AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL) and the payment API
  at the ports of `make local` through host.docker.internal, in us-east-1 (where moto holds
  the queues);
- with neither, no variable points at a local address;
- deployed with the parameters' defaults, the endpoint variables are not set at all: each is
  `!If [condition, ..., !Ref AWS::NoValue]` and the condition is false.

Run by scripts/check-local.sh with SAM's Python (.local/venv/bin/python) at the repository's
root.
"""

import contextlib
import io
import json
import os
import pathlib
import re
import sys
import tempfile
from unittest import mock

from samcli.cli.main import cli
from samcli.lib.intrinsic_resolver.intrinsic_property_resolver import IntrinsicResolver
from samcli.lib.intrinsic_resolver.intrinsics_symbol_table import IntrinsicsSymbolTable
from samcli.lib.providers.sam_function_provider import SamFunctionProvider
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider
from samcli.local.docker.container_client_factory import ContainerClientFactory
from samcli.local.lambdafn.runtime import LambdaRuntime
from samcli.yamlhelper import yaml_parse

TEMPLATE = "template.yaml"
ENV_FILE = "local/sam-env.json"
REGION = "us-east-1"
# The SDK's service ids as its per-service variables spell them (AWS_ENDPOINT_URL_<ID>).
SERVICES = {"DynamoDB": "DYNAMODB", "SQS": "SQS", "Cost Explorer": "COST_EXPLORER"}
LOCAL_MARKERS = ("host.docker.internal", "127.0.0.1", "localhost", "0.0.0.0")

# The ports of `make local` (local-stack's base port: AWS endpoint +1, payment API +2).
base = int(re.search(r"const DEFAULT_BASE_PORT: u16 = (\d+);", pathlib.Path("devstack/src/bin/local-stack.rs").read_text()).group(1))
local = "http://host.docker.internal"
expected_endpoints = {"DynamoDB": f"{local}:{base}", "SQS": f"{local}:{base + 1}", "Cost Explorer": f"{local}:{base + 1}"}
expected_values = {
    "PAYMENT_API_URL": f"{local}:{base + 2}/charges",
    "OVERFLOW_QUEUE_URL": f"{local}:{base + 1}/123456789012/overflow",
}

template = yaml_parse(pathlib.Path(TEMPLATE).read_text())
functions = {
    logical_id: resource["Metadata"]["BuildProperties"]["Binary"]
    for logical_id, resource in template["Resources"].items()
    if resource["Type"] == "AWS::Serverless::Function"
}

# SAM gives a variable the shell's value over the template's, and takes credentials and
# region from the shell: only the check's inputs count.
declared_names = set(template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
for logical_id in functions:
    declared_names |= set(template["Resources"][logical_id]["Properties"].get("Environment", {}).get("Variables", {}))
for name in list(os.environ):
    if name.startswith(("AWS_", "SAM_")) or name in declared_names:
        del os.environ[name]
os.environ["SAM_CLI_TELEMETRY"] = "0"
# A shell whose region is not make local's: only --region (or samconfig.toml) gives us-east-1.
os.environ["AWS_DEFAULT_REGION"] = "eu-west-1"


def container_environments(flags):
    """{function: the environment `sam local invoke <function> --event ... <flags>` starts
    its container with}."""
    seen = {}

    def record(_runtime, function_config, _event, *_args, **_kwargs):
        seen[function_config.name] = function_config.env_vars.resolve()

    with mock.patch.object(ContainerClientFactory, "create_client", staticmethod(mock.MagicMock)), mock.patch.object(
        LambdaRuntime, "invoke", record
    ):
        for logical_id, binary in functions.items():
            args = ["local", "invoke", logical_id, "--event", f"events/{binary}.json", *flags]
            # SAM's banners, kept for a failure; a text stream SAM can reconfigure to UTF-8.
            output = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                cli.main(args=args, prog_name="sam", standalone_mode=False)
            if logical_id not in seen:
                output.seek(0)
                sys.exit(f"sam local invoke {logical_id} reached no container:\n{output.read()}")
    return seen


def endpoint(env, service):
    """The endpoint the Rust SDK resolves for `service` from the environment ("" = AWS's)."""
    return env.get(f"AWS_ENDPOINT_URL_{SERVICES[service]}") or env.get("AWS_ENDPOINT_URL") or ""


errors = []
no_config = tempfile.NamedTemporaryFile("w", suffix=".toml")
no_config.write("version = 0.1\n")
no_config.flush()

for how, flags in [
    ("samconfig.toml", []),
    (f"--env-vars {ENV_FILE}", ["--config-file", no_config.name, "--env-vars", ENV_FILE, "--region", REGION]),
]:
    local_envs = container_environments(flags)
    for logical_id, env in sorted(local_envs.items()):
        for service, url in expected_endpoints.items():
            if endpoint(env, service) != url:
                hint = "" if any(n.startswith("AWS_ENDPOINT_URL") for n in env) else f" (--env-vars sets only the variables {TEMPLATE} declares)"
                errors.append(f"{how}: {logical_id} reaches {service} at {endpoint(env, service) or 'AWS'}, not {url}{hint}")
        for name, value in expected_values.items():
            if name in env and env[name] != value:
                errors.append(f"{how}: {logical_id} {name}={env[name]}, not {value}")
        if env.get("AWS_REGION") != REGION:
            errors.append(f"{how}: {logical_id} AWS_REGION={env.get('AWS_REGION')}, not {REGION}")
    if not any("PAYMENT_API_URL" in env for env in local_envs.values()):
        errors.append(f"{how}: no function has PAYMENT_API_URL")

without_file = container_environments(["--config-file", no_config.name])
for logical_id, env in sorted(without_file.items()):
    errors += [
        f"without --env-vars or samconfig.toml: {logical_id} {name}={value} points at a local address"
        for name, value in sorted(env.items())
        if any(marker in value for marker in LOCAL_MARKERS)
    ]

# Deployed: CloudFormation drops a variable whose value is AWS::NoValue.
stacks, _ = SamLocalStackProvider.get_stacks(TEMPLATE)
defaults = SamFunctionProvider(stacks)
resolver = IntrinsicResolver(
    template=template,
    symbol_resolver=IntrinsicsSymbolTable(
        logical_id_translator={name: p.get("Default") for name, p in template.get("Parameters", {}).items()},
        template=template,
    ),
)
declared = set()
for logical_id in functions:
    variables = defaults.get(logical_id).environment["Variables"]
    for name, value in sorted(variables.items()):
        if not name.startswith("AWS_ENDPOINT_URL"):
            continue
        declared.add(name)
        branches = value.get("Fn::If") if isinstance(value, dict) else None
        if not branches or branches[2] != {"Ref": "AWS::NoValue"}:
            errors.append(f"{TEMPLATE}: {logical_id} {name} is not !If [condition, ..., !Ref AWS::NoValue]: {value}")
            continue
        if resolver.intrinsic_property_resolver(template["Conditions"][branches[0]], False) is not False:
            errors.append(f"{TEMPLATE}: {logical_id} {name} is set in a deployed stack (condition {branches[0]} is true by default)")

if errors:
    sys.exit("sam local invoke environment:\n  " + "\n  ".join(errors))
print(
    f"sam local invoke (samconfig.toml, or --env-vars {ENV_FILE}): {len(functions)} functions reach DynamoDB, SQS,"
    f" Cost Explorer and the payment API on make local's ports; without either none does;"
    f" deployed, {', '.join(sorted(declared))} unset"
)
