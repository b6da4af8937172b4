"""Tables of a bench/before_after.sh run: per checkout, the best of its rounds.

    bench/before_after.sh BEFORE > run.txt; .venv/bin/python bench/before_after_table.py run.txt

Per call: the least µs over the rounds of kanedyn and of Pinocchio, and their ratio;
batched: the most states per second of kanedyn (2 threads) and of the Pinocchio loop,
and kanedyn's speed-up. Markdown, one row per robot, "before / after" in each cell.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

ALGOS = ("RNEA", "CRBA", "ABA")
CALL = re.compile(r"^  (\S.*?)\s{2,}(\d+) \|" + r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\|?" * 3)

def parse(path: str):
    calls = defaultdict(lambda: defaultdict(lambda: [float("inf"), float("inf")]))
    batch = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    order, who = [], None
    for line in open(path):
        m = re.match(r"=== round \d+: (\S+) at (\w+)", line)
        if m:
            who = m.group(2)
            if who not in order:
                order.append(who)
            continue
        m = CALL.match(line)
        if m and who:
            robot, nums = m.group(1).strip(), [float(x) for x in m.groups()[2:]]
            for k, algo in enumerate(ALGOS):
                best = calls[who][(robot, algo)]
                best[0] = min(best[0], nums[3 * k])
                best[1] = min(best[1], nums[3 * k + 1])
            continue
        if who and "vs" in line and "=" in line and "|" in line:
            robot = line[:25].strip()
            for algo, kd2, _, pin in re.findall(
                    r"(RNEA|CRBA|ABA)\s+([\d.]+) \(([\d.]+)\) vs ([\d.]+)", line):
                best = batch[who][(robot, algo)]
                best[0] = max(best[0], float(kd2))
                best[1] = max(best[1], float(pin))
    return order, calls, batch


def table(title: str, best, order, robots, cell) -> None:
    """A markdown table: a row per robot, a column per algorithm, checkouts in a cell."""
    print(title + ", " + " / ".join(order))
    print("| robot | " + " | ".join(ALGOS) + " |\n|---|" + "---|" * len(ALGOS))
    for robot in robots:
        cells = [" / ".join(cell(*best[w][(robot, algo)]) for w in order) for algo in ALGOS]
        print(f"| {robot} | " + " | ".join(cells) + " |")


def main(path: str) -> None:
    order, calls, batch = parse(path)
    robots = list(dict.fromkeys(r for r, _ in calls[order[0]]))
    table("per call, µs kanedyn (ratio to Pinocchio)", calls, order, robots,
          lambda k, p: f"{k:.2f} ({k / p:.2f})")
    print()
    table("batched, million states/s kanedyn on 2 threads (speed-up over the Pinocchio loop)",
          batch, order, robots, lambda k, p: f"{k:.2f} ({k / max(p, 1e-300):.1f}x)")


if __name__ == "__main__":
    main(sys.argv[1])
