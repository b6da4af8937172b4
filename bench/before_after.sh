#!/bin/bash
# Before/after of a change, side by side in one run: bench/rbd_vs_pinocchio.py --quick
# --no-compile from two checkouts, alternately, two rounds each (machine load hits both
# alike; ROUNDS=n for more). Usage: bench/before_after.sh BEFORE_CHECKOUT [AFTER_CHECKOUT] [PYTHON]
# e.g. `git worktree add /tmp/before 1e13821 --detach` (copy the built _fastcall*.so
# into its src/kanedyn/dynamics/), then `bench/before_after.sh /tmp/before`.
set -euo pipefail
before=${1:?a checkout of the base commit}
after=${2:-$(cd "$(dirname "$0")/.." && pwd)}
python=${3:-$after/.venv/bin/python}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for d in "$before" "$after"; do
    echo "=== round $round: $d at $(git -C "$d" rev-parse --short HEAD); $(uptime)"
    (cd "$d" && PYTHONPATH="$d/src" "$python" bench/rbd_vs_pinocchio.py --quick --no-compile)
  done
done
