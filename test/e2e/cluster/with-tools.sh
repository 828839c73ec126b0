#!/usr/bin/env bash
# Builds (or finds cached) every e2e tool set, exports where each one is as
# SANDBOX_INJECTOR_<SET>_BIN_DIR, and runs the given command with them.
set -euo pipefail
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
built="$(bash "$script_dir/build.sh" all)"
while read -r set dir; do
  [[ -n "$set" ]] || continue
  export "SANDBOX_INJECTOR_${set^^}_BIN_DIR=$dir"
done <<<"$built"
exec "$@"
