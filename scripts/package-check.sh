#!/usr/bin/env bash
# Ready to publish: `cargo package` (which verifies each package by building it from its
# .crate alone) of the three library crates, then the README's quickstart built as a user's
# crate of its own (quickstart/) against those packages: the .crate files unpacked and
# patched in for crates.io, not the workspace's paths. The quickstart is built in release
# with the profile the README gives (`panic = "unwind"`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
crates=(breaker-rules breaker-macro breaker-runtime)
work=target/quickstart

# The quickstart crate is the README's: its main.rs, and its Cargo.toml's lines besides the
# dependency on breaker-runtime (a path in the README, a version here).
readme_main=$(awk '/^## Quickstart/{q=1} q&&/^```rust,no_run/{r=1;next} r&&/^```/{exit} r{print}' README.md)
if ! diff -u <(printf '%s\n' "$readme_main") quickstart/src/main.rs; then
  echo "package-check: quickstart/src/main.rs differs from the README's quickstart (diff above)" >&2
  exit 1
fi
while IFS= read -r line; do
  [[ -z "$line" || "$line" == breaker-runtime* ]] && continue
  if ! grep -qxF -- "$line" quickstart/Cargo.toml; then
    echo "package-check: the README's quickstart Cargo.toml line is missing from quickstart/Cargo.toml: $line" >&2
    exit 1
  fi
done < <(awk '/^## Quickstart/{q=1} q&&/^```toml/{r=1;next} r&&/^```/{exit} r{print}' README.md)

# Each crate's `rust-version` is at least the highest one its dependency tree declares (normal
# and build dependencies, the features the workspace enables); clippy's `incompatible_msrv`
# (`make lint`) checks the std APIs our code calls against it.
"$cargo" metadata --locked --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
version = lambda v: tuple(int(x) for x in (v or "0").split("."))
failed = False
for name in sys.argv[1:]:
    root = next(p["id"] for p in meta["packages"] if p["name"] == name)
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack += [d["pkg"] for d in nodes[node]["deps"]
                  if any(k["kind"] in (None, "build") for k in d["dep_kinds"])]
    floor = max(seen - {root}, key=lambda i: version(packages[i]["rust_version"]), default=None)
    declared = packages[root]["rust_version"]
    need = packages[floor]["rust_version"] if floor else None
    by = packages[floor]["name"] if floor else "no dependency"
    print(f"package-check: {name} declares rust-version {declared}; its dependencies need {need} ({by})")
    if version(declared) < version(need):
        failed = True
sys.exit(1 if failed else 0)
' "${crates[@]}"

# Cargo unpacks each packaged crate into its registry's sources once per version and never
# again: a copy left by an earlier run (the same version, older code) would be verified in
# place of this one. Only our own crates are removed; Cargo unpacks them afresh.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/breaker-{rules,macro,runtime}-[0-9]*
# Nor does Cargo rebuild a registry crate of the same version whose code changed, nor a path
# crate unpacked with the archive's fixed file times: forget what earlier runs compiled of
# our crates, in the verification's target and the quickstart's.
rm -rf target/debug/.fingerprint/breaker-{rules,macro,runtime}-* \
  "$work"/target/release/.fingerprint/breaker-{rules,macro,runtime}-*

start=$SECONDS
# Dependencies without debug info, as the workspace builds them (`[profile.dev.package."*"]`),
# so the verification reuses what `make test` compiled where features agree.
CARGO_PROFILE_DEV_DEBUG=false "$cargo" package --locked "${crates[@]/#/-p}"
echo "package-check: packaged and verified ${crates[*]} in $((SECONDS - start)) s"

rm -rf "$work/crates" "$work/crate"
mkdir -p "$work/crates"
patches=()
for crate in "${crates[@]}"; do
  file=$(ls target/package/"$crate"-[0-9]*.crate)
  tar -xzf "$file" -C "$work/crates"
  dir=$(basename "$file" .crate)
  patches+=(--config "patch.crates-io.$crate.path=\"$PWD/$work/crates/$dir\"")
done
cp -r quickstart "$work/crate"
# Its own workspace, as a user's crate is (the copy sits under this workspace's target/).
printf '\n[workspace]\n' >> "$work/crate/Cargo.toml"
# The versions the workspace tests with; Cargo adds the patched crates and drops the rest.
cp Cargo.lock "$work/crate/Cargo.lock"
start=$SECONDS
"$cargo" build --release --manifest-path "$work/crate/Cargo.toml" --target-dir "$work/target" "${patches[@]}"
for crate in "${crates[@]}"; do
  source=$("$cargo" pkgid --manifest-path "$work/crate/Cargo.toml" "${patches[@]}" "$crate")
  if [[ "$source" != *"/$work/crates/$crate-"* ]]; then
    echo "package-check: the quickstart's $crate is $source, not the unpacked package" >&2
    exit 1
  fi
done
echo "package-check: the quickstart built against the packaged crates in $((SECONDS - start)) s:" \
  "$(ls -l "$work/target/release/breaker-quickstart" | awk '{print $5}') bytes"
