#!/usr/bin/env bash
# The public surface of breaker-runtime as rustdoc shows it (every feature on): each named
# item, then the count of inherent methods, public fields and variants. `#[doc(hidden)]`
# items (`__private`, `unstable`) are not part of it. Usage: scripts/public-items.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo doc --quiet -p breaker-runtime --no-deps --features metrics,call-spans,tower,contract,serde
python3 - <<'PY'
import os, re
root = "target/doc/breaker_runtime"
page = open(f"{root}/all.html").read()
items = re.findall(r'<li><a href="([^"]+)">([^<]+)</a></li>', page)
methods = fields = variants = 0
for href, name in items:
    kind = os.path.basename(href).split(".")[0]
    print(f"{kind:9} {name}")
    html = open(os.path.join(root, href)).read()
    inherent = html.split('id="trait-implementations"')[0]
    methods += len(set(re.findall(r'id="method\.([a-z_0-9]+)"', inherent)))
    fields += len(re.findall(r'id="structfield\.', html))
    variants += len(re.findall(r'id="variant\.[A-Za-z0-9_]+"', html))
print(f"{len(items)} named items, {methods} inherent methods, {fields} public fields, {variants} variants")
PY
