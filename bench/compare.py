"""Compares two installs of tfmemlint on one tree, cold and warm, alternating them round by round
so that drift hits both alike: how a change moved the lint path. Reports medians and the ratio
new / base, never asserts.

Usage: python bench/compare.py BASE_TFMEMLINT NEW_TFMEMLINT TREE [--rounds N]

Each TFMEMLINT is the `tfmemlint` executable of a regular install (`pip install .` into its own
virtualenv): an editable install adds an import hook to every start-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import QUIET, _time


def compare(base: str, new: str, tree: Path, rounds: int) -> dict[str, tuple[float, float]]:
    """{bench: (base median, new median)} for the cold and the warm check."""
    tools = {"base": base, "new": new}
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="tfmemlint-compare-") as caches:
        cache = {name: str(Path(caches) / name) for name in tools}
        for name, tool in tools.items():  # fill each one's cache, untimed
            _time([tool, *QUIET, "--cache-dir", cache[name], str(tree)])
        for _ in range(rounds):
            for name, tool in tools.items():
                cold = [tool, *QUIET, "--no-cache", str(tree)]
                warm = [tool, *QUIET, "--cache-dir", cache[name], str(tree)]
                times.setdefault(("cold", name), []).append(_time(cold))
                times.setdefault(("warm", name), []).append(_time(warm))
    return {
        bench: (statistics.median(times[bench, "base"]), statistics.median(times[bench, "new"]))
        for bench in ("cold", "warm")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("tree", type=Path)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print(f"{args.tree}: {args.rounds} rounds, alternating")
    for bench, (base, new) in compare(args.base, args.new, args.tree, args.rounds).items():
        print(f"  {bench:5}  base {base:.3f} s  new {new:.3f} s  new/base {new / base:.3f}")


if __name__ == "__main__":
    main()
