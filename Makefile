# Two commands for a newcomer: `make demo` and `make test`. Each installs what it needs
# into .local/ (git-ignored) first.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: demo local invoke test tools lint unit-tests doc-tests examples template-checks bench quickstart sim cross-check model mutants mutants-models package bench-user

tools:
	scripts/install-tools.sh all

demo: tools
	scripts/demo.sh

# The local stack and `cargo lambda watch`, for invocations by hand (docs/functions.md);
# Ctrl-C stops everything.
local: tools
	scripts/local.sh

# One invocation against `make local`, from another terminal:
# make invoke FUNCTION=charge [EVENT=events/charge.json] [INVOKE_PORT=9000]
FUNCTION ?=
EVENT ?= events/$(FUNCTION).json
INVOKE_PORT ?= 9000
invoke:
	@test -n "$(FUNCTION)" || { echo "usage: make invoke FUNCTION=cost-report|charge|overflow-replay [EVENT=events/<file>.json]"; exit 2; }
	.local/venv/bin/cargo-lambda lambda invoke --invoke-port $(INVOKE_PORT) $(FUNCTION) --data-file $(EVENT)

quickstart:
	$(CARGO) run --quiet -p breaker-runtime --example quickstart

test: tools lint unit-tests doc-tests examples template-checks
	@echo "make test: every check passed"

lint:
	$(CARGO) fmt --all --check
	scripts/check-file-sizes.sh
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p breaker-runtime --all-targets --features metrics,call-spans,tower,contract,serde -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --all-features --quiet

# The functions' tests run the real function binaries, which `cargo test` does not build for
# packages other than the test's own: build every binary first.
unit-tests:
	$(CARGO) build --workspace --bins
	$(CARGO) nextest run --workspace --lib --bins --tests --examples --no-fail-fast
	$(CARGO) nextest run -p breaker-runtime --features metrics,call-spans,tower --test metrics --test call_spans

doc-tests:
	$(CARGO) test --workspace --doc

# Each example of breaker-runtime run to its end (nextest only builds them): each asserts
# what it shows, so a wrong result fails. tower_lambda and lambda_dynamodb_* need a Lambda
# Runtime API (cold-start runs the latter, docs/performance.md) and
# iam_policy is run by scripts/check-template.sh: built, not run here.
EXAMPLES := quickstart on_circuit_open warm_up deadlines shadow tower_http_client store_contract
examples:
	$(CARGO) build --quiet -p breaker-runtime --features tower,contract --examples
	@for example in $(EXAMPLES); do \
		echo "example $$example"; \
		$(CARGO) run --quiet -p breaker-runtime --features tower,contract --example $$example >/dev/null || exit 1; \
	done

template-checks:
	scripts/check-template.sh
	scripts/check-local.sh

# The template's architecture (arm64), built with Debian's cross toolchain and run under
# qemu against the local stack: an order charged once. Installs apt packages (root); CI runs
# it after `make test` (.ci/run). docs/functions.md, "Build for Lambda".
cross-check: tools
	scripts/install-tools.sh cross
	scripts/cross-check.sh

# The three library crates as they would be published (`cargo package`, verified), and the
# README's quickstart built as a crate of its own against those packages (quickstart/).
package:
	scripts/package-check.sh

# The `metrics` group twice: without the feature (in the first run), then with it.
bench:
	$(CARGO) bench -p breaker-runtime --features tower --bench hot_path
	$(CARGO) bench -p breaker-runtime --features tower,metrics --bench hot_path -- metrics
	$(MAKE) bench-user

# breaker's closed path against recloser and failsafe in a user's crate (user-bench/, outside
# the workspace): Cargo's default release profile, then cargo-lambda's release settings (thin
# LTO, one codegen unit). docs/performance.md, "Hot path: as users build it".
bench-user:
	cd user-bench && $(CARGO) run --quiet --locked --release --target-dir ../target/user-bench/default
	cd user-bench && CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
	  $(CARGO) run --quiet --locked --release --target-dir ../target/user-bench/lambda

# Every fleet scenario of the simulator (docs/scale.md): a table each on stdout, then the
# markdown table of all; charts in docs/scale/. About 4 minutes on 2 cores. Then the keyed
# scenarios on seeds 1-3 (docs/scale.md, "Keyed circuits"): about 15 minutes more.
sim:
	$(CARGO) run --release -p breaker-sim -- --markdown
	$(CARGO) run --release -p breaker-sim -- --scenario keyed --seed 1,2,3 --markdown --no-charts
	$(CARGO) run --release -p breaker-sim -- --scenario managed --seed 1,2,3 --markdown --no-charts

# Mutation testing of the protocol and the store's requests (docs/testing.md); not part of
# `make test` (proptest saves no failures: they are the mutants'). One file: make mutants MUTANTS_ARGS='-f breaker-runtime/src/protocol/write.rs'
MUTANTS_ARGS ?=
mutants:
	scripts/install-tools.sh mutants
	PROPTEST_DISABLE_FAILURE_PERSISTENCE=1 .local/cargo/bin/cargo-mutants mutants --in-place --timeout 120 $(MUTANTS_ARGS)

# The mutants the last `make mutants` left alive (`--iterate` skips those caught), again
# with the model checker's `make test` models: minutes per mutant, so only those.
mutants-models:
	scripts/install-tools.sh mutants
	PROPTEST_DISABLE_FAILURE_PERSISTENCE=1 .local/cargo/bin/cargo-mutants mutants --in-place --iterate --timeout 600 \
		--cargo-test-arg=--test --cargo-test-arg=protocol \
		--cargo-test-arg=--test --cargo-test-arg=keyed $(MUTANTS_ARGS)

# The protocol's model checker at its deeper horizons (docs/design.md): sizes, times, and
# any counterexample's trace. `make test` runs the shorter horizons (model/tests).
model:
	$(CARGO) run -p breaker-model
