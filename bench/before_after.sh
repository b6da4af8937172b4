#!/bin/bash
# before/after of a change: a worktree of the base commit in /work/wt/before and this checkout, alternately, bench/rbd_vs_pinocchio.py --quick --no-compile, each tree its own script
for r in 1 2; do
  for t in before main; do
    d=/work/wt/before; [ $t = main ] && d=/work/main
    echo "=== round $r tree $t ($(git -C $d rev-parse --short HEAD)) $(uptime)"
    (cd $d && PYTHONPATH=$d/src /work/main/.venv/bin/python bench/rbd_vs_pinocchio.py --quick --no-compile)
  done
done
