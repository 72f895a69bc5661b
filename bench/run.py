"""Times `tfmemlint check` against `ruff check --select E9 --no-cache --isolated` on one tree,
alternating the runs, and prints medians and the ratio. Ratios, never absolute times: these
machines are noisy.

Usage: python bench/run.py TREE [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _time(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def bench(tree: Path, rounds: int) -> dict[str, float]:
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    commands = {
        "tfmemlint": [
            sys.executable,
            "-m",
            "tfmemlint",
            "check",
            "--exit-zero",
            "--isolated",
            str(tree),
        ],
        "ruff": [
            ruff,
            "check",
            "--select",
            "E9",
            "--no-cache",
            "--isolated",
            "--exit-zero",
            str(tree),
        ],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):  # alternate, so that drift hits both alike
        for name, command in commands.items():
            times[name].append(_time(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "files": sum(1 for _ in tree.rglob("*.py")),
        "rounds": rounds,
        "tfmemlint_median_s": round(medians["tfmemlint"], 3),
        "ruff_median_s": round(medians["ruff"], 3),
        "ratio": round(medians["tfmemlint"] / medians["ruff"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = bench(args.tree, args.rounds)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['files']} files, {result['rounds']} rounds: tfmemlint "
            f"{result['tfmemlint_median_s']} s, ruff --select E9 {result['ruff_median_s']} s, "
            f"ratio {result['ratio']}"
        )


if __name__ == "__main__":
    main()
