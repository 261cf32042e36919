"""Powertools for AWS Lambda (Python) sharing the circuit table the `breaker` CLI operates.

Usage: powertools.py ENDPOINT TABLE CIRCUIT CALLS ok|fail
Makes CALLS calls through Powertools' circuit breaker (failure threshold 2, recovery 1 s,
no local cache) to a downstream that succeeds or fails, and prints one JSON object: how
many calls reached the downstream, and each call's outcome (ran, failed, rejected).
"""

import json
import os
import sys

import boto3
from aws_lambda_powertools.utilities.circuit_breaker import (
    CircuitBreakerConfig,
    CircuitBreakerOpenError,
    circuit_breaker,
)
from aws_lambda_powertools.utilities.circuit_breaker.persistence import (
    CircuitBreakerDynamoDBPersistence,
)

endpoint, table, circuit, calls, mode = sys.argv[1:6]
client = boto3.client("dynamodb", endpoint_url=endpoint, region_name=os.environ["AWS_REGION"])
store = CircuitBreakerDynamoDBPersistence(table_name=table, boto3_client=client)
config = CircuitBreakerConfig(failure_threshold=2, recovery_timeout=1, local_cache_max_age=0)
reached = 0


@circuit_breaker(name=circuit, persistence_store=store, config=config)
def downstream():
    global reached
    reached += 1
    if mode == "fail":
        raise RuntimeError("503")
    return "paid"


outcomes = []
for _ in range(int(calls)):
    try:
        downstream()
        outcomes.append("ran")
    except CircuitBreakerOpenError:
        outcomes.append("rejected")
    except RuntimeError:
        outcomes.append("failed")
print(json.dumps({"reached": reached, "outcomes": outcomes}))
