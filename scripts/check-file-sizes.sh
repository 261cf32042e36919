#!/usr/bin/env bash
# Every Rust source file outside tests and benches stays within 450 lines: a file that
# grows past it holds more than one job, and is split by job.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=450
over=$(git ls-files '*.rs' \
  | grep -Ev '(^|/)(tests|benches)/|(^|/)tests\.rs$|_tests\.rs$' \
  | while read -r file; do
      lines=$(wc -l < "$file")
      if [ "$lines" -gt "$limit" ]; then echo "  $file: $lines lines"; fi
    done)
if [ -n "$over" ]; then
  echo "source files over $limit lines (split them by job):"
  echo "$over"
  exit 1
fi
echo "every source file outside tests and benches is within $limit lines"
