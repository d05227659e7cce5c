#!/usr/bin/env bash
# Prints the README's native coverage table of the model zoo
# (tests/fixtures/zoo), the skip reasons, and the measured shares that
# tests/fixtures/zoo/coverage.json holds as floors; then the table's share
# of msprobe's hook lists (runtime/tests/hook_coverage.rs holds its floors).
set -euo pipefail
cd "$(dirname "$0")/.."
ZOO_TABLE=1 cargo test --quiet --test zoo -- --nocapture 2>&1 | sed -n '/^| dump/,/^}/p'
HOOK_TABLE=1 cargo test --quiet -p runtime --test hook_coverage -- --nocapture 2>&1 | grep '^|'
