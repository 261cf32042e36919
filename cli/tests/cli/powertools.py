"""Powertools for AWS Lambda (Python) sharing the circuit table the `breaker` CLI operates.

Usage: powertools.py ENDPOINT TABLE CIRCUIT
Prints {"version": ...} (the Powertools release that runs), then reads one line per call
from stdin, `ok` or `fail`, and makes that call through Powertools' circuit breaker
(failure threshold 2, recovery 1 s, success threshold 3, no local cache) to a downstream
that succeeds or fails; after each it prints {"outcome": "ran" | "failed" | "rejected",
"reached": calls that reached the downstream so far}. One process is one execution
environment: Powertools keeps its failure and probe-success counts in the module between
calls, as between the invocations of a warm environment.
"""

import json
import os
import sys

import boto3
from aws_lambda_powertools.shared.version import VERSION
from aws_lambda_powertools.utilities.circuit_breaker import (
    CircuitBreakerConfig,
    CircuitBreakerOpenError,
    circuit_breaker,
)
from aws_lambda_powertools.utilities.circuit_breaker.persistence import (
    CircuitBreakerDynamoDBPersistence,
)

endpoint, table, circuit = sys.argv[1:4]
client = boto3.client("dynamodb", endpoint_url=endpoint, region_name=os.environ["AWS_REGION"])
store = CircuitBreakerDynamoDBPersistence(table_name=table, boto3_client=client)
config = CircuitBreakerConfig(
    failure_threshold=2, recovery_timeout=1, success_threshold=3, local_cache_max_age=0
)
reached = 0
mode = "ok"


@circuit_breaker(name=circuit, persistence_store=store, config=config)
def downstream():
    global reached
    reached += 1
    if mode == "fail":
        raise RuntimeError("503")
    return "paid"


def say(message):
    print(json.dumps(message), flush=True)


say({"version": VERSION})
for line in sys.stdin:
    mode = line.strip()
    if mode not in ("ok", "fail"):
        sys.exit(f"unknown call {mode!r}: ok or fail")
    try:
        downstream()
        outcome = "ran"
    except CircuitBreakerOpenError:
        outcome = "rejected"
    except RuntimeError:
        outcome = "failed"
    say({"outcome": outcome, "reached": reached})
