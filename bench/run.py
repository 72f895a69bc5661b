"""Measures tfmemlint against issue 18's targets: each a ratio to a floor timed in the same run
(a bare script that does what any Python tool must), alternating them so that drift hits both
alike. ruff's ratios stay beside them as the outside anchor. Reports medians, never asserts.

  cold        tfmemlint check --no-cache   vs  the libcst floor: one process that reads every
              file and libcst-parses those naming `tensorflow` and `Session`   (<= 0.75 x)
  warm        tfmemlint check (cached)     vs  the stat floor: import click, stat every file
                                                                               (<= 1.3 x)
  stress      the cold check on TensorFlow's own sources (--trees)            (<= 0.5 x)
  projects    the cold check on real projects whose programs run through their own modules
              (--trees: tensor2tensor and trax), against the same floors    (as cold)
  hook        tfmemlint on 5 files of TREE that make no session or runtime (naming no API the
              rules know), as a pre-commit hook runs it  vs  python -c "import click"  (<= 1.5 x)
  fix         tfmemlint --fix on 200 generated files that all need a fix  vs  libcst parsing
              them                                                             (<= 2.0 x)
  memory      peak RSS of the cold check, per process                          (<= 200 MB)
  table       tfmemlint --fix on the generated 1.6 MB table module             (<= 2.0 s)
  python2     tfmemlint check --no-cache on a generated tree whose TF1 modules are Python 2
              vs  the same on that tree written in Python 3 (recovery's cost)  (<= 1.5 x)
  tabs        the python2 tree with its Python 2 modules indented with tabs and spaces mixed, as
              Python 2 reads them and Python 3 refuses  vs  the python2 tree (reading the
              indentation as Python 2 does)                                   (<= 1.2 x)
  notebooks   tfmemlint check --no-cache on generated TF1-era course notebooks in nbformat 3
              vs  the same notebooks in nbformat 4 (reading IPython 2's layout)  (<= 1.1 x)
  launch      tfmemlint check --no-cache on 500 generated launch files (Dockerfiles, Compose,
              Kubernetes, Slurm, .env)  vs  reading them all and composing the YAML ones with
              PyYAML in one process                                            (<= 2.0 x)

Cold, warm and fix also show the design's own floors, the least that tfmemlint's design needs.
Cold: libcst parsing over all CPUs; and the least this design can take at all, every Python file
searched for the words that the pre-filter searches a file with none of them for (fewer in a file
with no `import`), and libcst's parse of the files a rule finds something in, over all CPUs.
Warm: a stat cache looked up per file. Fix: each fixed file parsed and printed back by libcst,
over all CPUs (the positions a fix writes at come from libcst's codegen, which also proves the
tree gives the text back).

Usage: python bench/run.py TREE [--rounds N] [--json] [--only cold,warm,...] [--cold-target F]
       python bench/run.py --trees DIR [--wheels DIR] [--rounds N] [--json] [--only ...]

--trees builds (once) the trees that look like real code (`trees.py`: a mixed monorepo of sympy,
django, the generated TF1-era tree and Keras, JAX and tfds programs; TensorFlow's own sources;
two real projects) and runs cold, warm and hook on the monorepo, stress on TensorFlow's sources
and projects on the projects, in one run.
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trees
from generate import generate, generate_launch_files, generate_notebooks, generate_table

PYTHON = sys.executable


def _tool(name: str) -> list[str]:
    beside = Path(PYTHON).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found:
        return [found]
    return [PYTHON, "-m", name]


TFMEMLINT = _tool("tfmemlint")
RUFF = _tool("ruff")
QUIET = ["--isolated", "--exit-zero", "--quiet"]


def _time(command: list[str], prepare: Callable[[], None] | None = None) -> float:
    if prepare is not None:
        prepare()  # untimed: restoring inputs a fix changed, emptying a cache
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def _side_by_side(
    ours: list[str],
    theirs: list[str],
    rounds: int,
    prepare: Callable[[], None] | None = None,
    *others: list[str],
) -> tuple[float, ...]:
    """Medians of each command, run in turn round after round: ours, the yardstick, others."""
    commands = (ours, theirs, *others)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(rounds):
        for command, taken in zip(commands, times, strict=True):
            taken.append(_time(command, prepare))
    return tuple(statistics.median(taken) for taken in times)


def _ratio(name: str, ours: float, theirs: float, target: float, yardstick: str) -> dict:
    ratio = ours / theirs
    return {
        "name": name,
        "tfmemlint_s": round(ours, 3),
        "yardstick": yardstick,
        "yardstick_s": round(theirs, 3),
        "value": round(ratio, 2),
        "unit": "x",
        "target": target,
        "met": ratio <= target,
    }


def _absolute(name: str, value: float, target: float, unit: str) -> dict:
    return {
        "name": name,
        "value": round(value, 2),
        "unit": unit,
        "target": target,
        "met": value <= target,
    }


# Floors: bare scripts that do on the tree what every Python tool has to, and nothing more. They
# walk it as tfmemlint does by default (skipping hidden and build folders, not git's ignores).
# Reading (or, warm, stat-ing) every file is a true floor: no Python tool gets below it. The
# parsing ones show what a parser costs on the files any session rule must look into (those
# naming both `tensorflow` and `Session`) in one process, with no pre-filter beyond that: with
# workers, tfmemlint can split that cost over the CPUs. Each target is a ratio to one floor, its
# yardstick; the floors after it are the design's own: what tfmemlint cannot do without.
_FIND_PY = """
import os, sys
SKIPPED = {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv",
           "__pypackages__"}
def python_files(folder):
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in SKIPPED:
                    yield from python_files(entry.path)
            elif entry.name.endswith(".py"):
                yield entry.path
"""
_READ = """
for path in python_files(sys.argv[1]):
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError:
        continue
    if PARSE is not None and b"tensorflow" in raw and b"Session" in raw:
        try:
            PARSE(raw)
        except Exception:
            pass
"""
# The same parses, split over every CPU by forked workers that start with libcst imported: the
# least a libcst pass can take on this machine, with nothing else done.
_PARSE_OVER_CPUS = """
import libcst
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
def parse(path):
    try:
        with open(path, "rb") as file:
            libcst.parse_module(file.read())
    except Exception:
        pass
chosen = []
for path in python_files(sys.argv[1]):
    with open(path, "rb") as file:
        raw = file.read()
    if b"tensorflow" in raw and b"Session" in raw:
        chosen.append(path)
with ProcessPoolExecutor(os.cpu_count(), mp_context=get_context("fork")) as pool:
    list(pool.map(parse, chosen, chunksize=2))
"""
# The least this design can take on a tree: forked workers read every Python file and search it
# for the words that the pre-filter searches a file with none of them for (fewer where it holds no
# `import`: `family_words`), a word that holds a shorter one of them only where that one is found,
# as `rules.family.holds` spares it; and parse with libcst the files that a rule finds something
# in, which it finds only in libcst's tree (`files_parsed_for_a_finding`). Nothing else: no walk
# through the project, no second stage, no rule, no position. The files to parse go first, in
# tasks of about 256 KB, and only a worker that parses imports libcst (the monorepo's go to one
# worker, a large project's are split). The searches are Python's fastest (`in`, a word at a time:
# see docs/performance.md, "The cold target and the design's own floor"). It prints how many files
# it parsed and how many searches it made. Its inputs are a marshal file (argv[2]): a tree may have
# more files with findings than a command line holds.
_LEAST_OVER_CPUS = """
import marshal
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
with open(sys.argv[2], "rb") as file:
    WORDS, WITHOUT_IMPORT, FOUND = marshal.load(file)
WORDS = sorted(WORDS, key=len)
WITHOUT_IMPORT = [word for word in WORDS if word in set(WITHOUT_IMPORT)]
SHORTER = {w: next((s for s in WORDS if len(s) < len(w) and s in w), None) for w in WORDS}
ROOT = len(sys.argv[1].rstrip(os.sep)) + 1
def look(paths):
    parsed = searched = 0
    for path in paths:
        try:
            with open(path, "rb") as file:
                raw = file.read()
        except OSError:
            continue
        held = set()
        for word in WORDS if b"import" in raw else WITHOUT_IMPORT:
            shorter = SHORTER[word]
            if shorter is None or shorter in held:
                searched += 1
                if word in raw:
                    held.add(word)
        if path[ROOT:] in FOUND:
            import libcst
            try:
                libcst.parse_module(raw)
            except Exception:
                pass
            parsed += 1
    return parsed, searched
paths = list(python_files(sys.argv[1]))
chunks, chunk, size = [], [], 0
for path in (path for path in paths if path[ROOT:] in FOUND):
    chunk.append(path)
    size += os.path.getsize(path)
    if size >= 256 * 1024:
        chunks.append(chunk)
        chunk, size = [], 0
rest = [path for path in paths if path[ROOT:] not in FOUND]
chunks += [chunk] + [rest[i : i + 64] for i in range(0, len(rest), 64)]
with ProcessPoolExecutor(os.cpu_count(), mp_context=get_context("fork")) as pool:
    done = list(pool.map(look, chunks))
print(sum(parsed for parsed, _ in done), "files parsed,", sum(n for _, n in done), "searches")
"""
LEAST_FLOOR = "the rules' words, and libcst on the files with a finding, over all CPUs"


def family_words(source: bytes = b"import os\n") -> list[bytes]:
    """The words the pre-filter searches `source` for, a file that holds none of them, under
    the default rules: what such a file costs at least. (Asked of the tool itself, which shares
    this Python: its `holds` records them.)"""
    from tfmemlint.checking.prefilter import prefilter_verdict
    from tfmemlint.rules import FAMILIES, family

    selected = frozenset(
        rule.code for each in FAMILIES for rule in each.rules if rule.enabled_by_default
    )
    asked: set[bytes] = set()
    holds = family.holds

    def recorded(raw: bytes, word: bytes) -> bool:
        asked.add(word)
        return holds(raw, word)

    family.holds = recorded
    try:
        # New bytes: `holds` remembers what it found in the last bytes it searched.
        prefilter_verdict(bytes(bytearray(source)), selected, lambda: None)
    finally:
        family.holds = holds
    return sorted(asked)


def files_parsed_for_a_finding(tree: Path) -> set[str]:
    """The Python files of the tree that a cold check reports a rule's finding in (untimed),
    relative to the tree, as the floors' walk spells them. A file whose findings are all file
    errors is left out: it may never reach libcst."""
    # The file errors: a file may get one with no libcst parse (bytes that cannot be read or
    # decoded, code nested too deeply for any parser: `running.file_check.check_bytes`). Not
    # TFM904, which only recovery, libcst's parse of a Python 2 file's statements, reports.
    from tfmemlint.rules.file_errors import FAMILY, PYTHON2_SYNTAX

    file_errors = {rule.code for rule in FAMILY.rules} - {PYTHON2_SYNTAX.code}
    command = [*TFMEMLINT, "check", "--no-cache", *QUIET, "--output-format", "json", str(tree)]
    done = subprocess.run(command, capture_output=True, check=False)
    try:  # exit 2 after an internal error in a file: the report is whole all the same
        findings = json.loads(done.stdout)
    except ValueError:
        raise SystemExit(f"no report from {' '.join(command)}: {done.stderr.decode()}") from None
    root = os.path.abspath(tree)
    named = {
        os.path.abspath(finding["filename"])
        for finding in findings
        if finding["code"] not in file_errors
    }
    return {os.path.relpath(path, root) for path in named if path.endswith(".py")}


COLD_FLOORS = {
    "read every file": _FIND_PY + "PARSE = None\n" + _READ,
    "+ ast parse": _FIND_PY + "import ast\nPARSE = ast.parse\n" + _READ,
    "+ libcst parse": _FIND_PY + "import libcst\nPARSE = libcst.parse_module\n" + _READ,
    "+ libcst parse, over all CPUs": _FIND_PY + _PARSE_OVER_CPUS,
}
COLD_YARDSTICK = "+ libcst parse"
# Warm, for a click CLI whose cache trusts a file's stat: start up, import click, stat every file.
_STAT = """
import click
for path in python_files(sys.argv[1]):
    try:
        os.stat(path)
    except OSError:
        pass
"""
# The same, with the least a stat-trusting cache adds: load a marshal file that holds each file's
# stat (written by the first run), and compare each file's stat with it.
_LOOK_UP = """
import click, marshal
stored = os.path.join(sys.argv[2], "stats.marshal")
try:
    with open(stored, "rb") as file:
        known = marshal.loads(file.read())
except OSError:
    known = None
seen = {}
for path in python_files(sys.argv[1]):
    stat = os.stat(path)
    key = [stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino]
    if known is None or known.get(path) != key:
        seen[path] = key
if known is None:
    with open(stored, "wb") as file:
        marshal.dump(seen, file)
"""
WARM_FLOORS = {"stat every file": _FIND_PY + _STAT, "+ a stat cache": _FIND_PY + _LOOK_UP}
WARM_YARDSTICK = "stat every file"


def _against_floor(
    name: str,
    target: float,
    ours: list[str],
    anchor: tuple[str, list[str]],
    rounds: int,
    floors: dict[str, list[str]],
    yardstick: str,
    fill_first: bool = False,
) -> dict:
    """Times ours, ruff (the anchor) and each floor (its arguments after `python -c`) in turn:
    the ratio to the yardstick floor, with every floor's and ruff's beside it. `fill_first`: a
    floor keeps files (a cache), which one untimed run first fills, as ours was."""
    scripts = [[PYTHON, "-c", *arguments] for arguments in floors.values()]
    if fill_first:
        for script in scripts:
            _time(script)
    anchor_label, anchor_command = anchor
    mine, theirs, *least = _side_by_side(ours, anchor_command, rounds, None, *scripts)
    timed = dict(zip(floors, least, strict=True))
    result = _ratio(name, mine, timed[yardstick], target, f"floor: {yardstick}")
    result["floors"] = {
        floor: {"s": round(seconds, 3), "ratio": round(mine / seconds, 2)}
        for floor, seconds in timed.items()
    }
    result["anchor"] = {anchor_label: {"s": round(theirs, 3), "ratio": round(mine / theirs, 2)}}
    return result


def cold(tree: Path, rounds: int, target: float, scratch: Path) -> dict:
    ours = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(tree)]
    ruff = [*RUFF, "check", "--select", "E9", "--no-cache", *QUIET, str(tree)]
    anchor = ("ruff --select E9", ruff)
    floors = cold_floors(tree, scratch)
    return _against_floor("cold", target, ours, anchor, rounds, floors, COLD_YARDSTICK)


def cold_floors(tree: Path, scratch: Path) -> dict[str, list[str]]:
    """Each cold floor's arguments after `python -c`: COLD_FLOORS, and the least this design can
    take on the tree (LEAST_FLOOR), whose inputs, the installed tool's words and the files it
    finds something in, go in a file in `scratch`."""
    inputs = scratch / f"least-floor-{tree.name}.marshal"
    words = (family_words(), family_words(b"x = 1\n"), files_parsed_for_a_finding(tree))
    inputs.write_bytes(marshal.dumps(words))
    floors = {name: [script, str(tree)] for name, script in COLD_FLOORS.items()}
    return {**floors, LEAST_FLOOR: [_FIND_PY + _LEAST_OVER_CPUS, str(tree), str(inputs)]}


def warm(tree: Path, rounds: int, scratch: Path) -> dict:
    ours = [*TFMEMLINT, "check", "--cache-dir", str(scratch / "tfm-cache"), *QUIET, str(tree)]
    ruff = [*RUFF, "check", "--select", "E9", "--cache-dir", str(scratch / "ruff-cache")]
    ruff += [*QUIET, str(tree)]
    _time(ours), _time(ruff)  # fill both caches
    anchor = ("ruff --select E9, cached", ruff)
    floors = {name: [script, str(tree), str(scratch)] for name, script in WARM_FLOORS.items()}
    return _against_floor("warm", 1.3, ours, anchor, rounds, floors, WARM_YARDSTICK, True)


def hook(tree: Path, rounds: int, scratch: Path) -> dict:
    """Five files that make no session or runtime, as pre-commit passes changed files: a fresh
    cache. Such a file names none of the APIs the rules know (`Session`, `RunConfig`, `Server`,
    ...), so tfmemlint sets it aside on its words. A file that does name one costs libcst's
    import on top (the README gives the figure)."""
    # The tool's own words: it shares this Python.
    from tfmemlint.checking.prefilter import any_trigger

    words = any_trigger()
    plain = [
        p for p in sorted(tree.rglob("*.py")) if not words.search(p.read_bytes().decode("latin-1"))
    ]
    chosen = [str(p) for p in plain[:: max(1, len(plain) // 5)][:5]]
    cache = scratch / "pre-commit-cache"
    ours = [*TFMEMLINT, "check", "--cache-dir", str(cache), *chosen]
    theirs = [PYTHON, "-c", "import click"]

    def clear() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    # Four times the rounds: each run is short, and start-up times are the noisiest of all.
    times = _side_by_side(ours, theirs, rounds * 4, clear)
    return _ratio("hook", *times, 1.5, 'python -c "import click"')


def fix(rounds: int, scratch: Path, files: int) -> dict:
    source, work = scratch / "fix-source", scratch / "fix-work"
    generate(source, files, seed=2, session_share=1.0, bare=True)

    def restore() -> None:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(source, work)

    ours = [*TFMEMLINT, "check", "--fix", "--no-cache", *QUIET, str(work)]
    parse_only = (
        "import pathlib, sys, libcst\n"
        "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
        "    libcst.parse_module(p.read_text())\n"
    )
    theirs = [PYTHON, "-c", parse_only, str(work)]
    # The design's floor: each file parsed, and printed back for the positions the fix writes
    # at (split over the CPUs, as tfmemlint's workers split it).
    printed = [PYTHON, "-c", _PARSE_AND_PRINT_OVER_CPUS, str(work)]
    mine, once, floor = _side_by_side(ours, theirs, rounds, restore, printed)
    result = _ratio("fix", mine, once, 2.0, "libcst parse only")
    label = "libcst parse and codegen over all CPUs"
    result["floors"] = {label: {"s": round(floor, 3), "ratio": round(mine / floor, 2)}}
    return result


_PARSE_AND_PRINT_OVER_CPUS = """
import pathlib, sys, libcst
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
def parse_and_print(path):
    libcst.parse_module(path.read_text()).code
paths = sorted(pathlib.Path(sys.argv[1]).rglob("*.py"))
with ProcessPoolExecutor(mp_context=get_context("fork")) as pool:
    list(pool.map(parse_and_print, paths, chunksize=2))
"""


def python2(rounds: int, scratch: Path, files: int) -> dict:
    """Recovery's cost: a cold check of a generated tree whose TF1-era modules are Python 2,
    against the same tree written in Python 3."""
    old, new = scratch / "python2-tree", scratch / "python3-tree"
    generate(old, files, seed=3, session_share=0.2, python2=True)
    generate(new, files, seed=3, session_share=0.2)
    ours = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(old)]
    theirs = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(new)]
    return _ratio("python2", *_side_by_side(ours, theirs, rounds), 1.5, "the tree in Python 3")


def tabs(rounds: int, scratch: Path, files: int) -> dict:
    """The cost of Python 2's indentation: the python2 tree with its Python 2 modules indented
    with tabs and spaces mixed, read through the view that Python 3 accepts, against the same
    tree indented with spaces."""
    mixed, spaces = scratch / "tabs-tree", scratch / "spaces-tree"
    generate(mixed, files, seed=3, session_share=0.2, python2=True, tabs=True)
    generate(spaces, files, seed=3, session_share=0.2, python2=True)
    ours = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(mixed)]
    theirs = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(spaces)]
    return _ratio("tabs", *_side_by_side(ours, theirs, rounds), 1.2, "the tree with spaces")


def notebooks(rounds: int, scratch: Path, count: int) -> dict:
    """nbformat 3's cost: a cold check of IPython 2's notebooks against the same cells saved
    by today's Jupyter."""
    old, new = scratch / "nbformat3", scratch / "nbformat4"
    generate_notebooks(old, count, seed=5, nbformat=3)
    generate_notebooks(new, count, seed=5, nbformat=4)
    ours = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(old)]
    theirs = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(new)]
    return _ratio("notebooks", *_side_by_side(ours, theirs, rounds), 1.1, "the same in nbformat 4")


_LAUNCH_FLOOR = """
import os, sys, yaml
for name in sorted(os.listdir(sys.argv[1])):
    with open(os.path.join(sys.argv[1], name), "rb") as file:
        raw = file.read()
    if name.endswith(".yaml"):
        list(yaml.compose_all(raw.decode(), Loader=yaml.SafeLoader))
"""


def launch(rounds: int, scratch: Path, count: int) -> dict:
    """Launch files: a cold check of a folder of them (each names a variable the launch-file
    rules read), against one process that reads them all and composes the YAML ones with
    PyYAML, the parser the YAML reader uses."""
    folder = scratch / "launch-files"
    generate_launch_files(folder, count, seed=11)
    ours = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(folder)]
    floor = [PYTHON, "-c", _LAUNCH_FLOOR, str(folder)]
    return _ratio("launch", *_side_by_side(ours, floor, rounds), 2.0, "floor: read + PyYAML")


def table(rounds: int, scratch: Path, rows: int) -> dict:
    source, work = scratch / "table-source.py", scratch / "table.py"
    generate_table(source, rows)
    command = [*TFMEMLINT, "check", "--fix", "--no-cache", *QUIET, str(work)]
    times = [_time(command, lambda: shutil.copyfile(source, work)) for _ in range(rounds)]
    result = _absolute("table", statistics.median(times), 2.0, "s")
    result["bytes"] = source.stat().st_size
    return result


def memory(tree: Path) -> dict:
    """The largest peak RSS of any one process of a cold check (the main one or a worker)."""
    command = [*TFMEMLINT, "check", "--no-cache", *QUIET, str(tree)]
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run([PYTHON, "-c", probe, *command], capture_output=True, text=True)
    return _absolute("memory", int(done.stdout) / 1024, 200.0, "MB")


BENCHES = (
    "cold",
    "stress",
    "projects",
    "warm",
    "hook",
    "fix",
    "table",
    "memory",
    "python2",
    "tabs",
    "notebooks",
    "launch",
)


ON_REAL_TREES = ("cold", "stress", "projects", "warm", "hook")
# The benches that run only on a tree of `trees.py`'s own.
ON_OWN_TREES = ("stress", "projects")
STRESS_TARGET = 0.5


def run(
    tree: Path,
    rounds: int,
    only: list[str],
    cold_target: float,
    small: bool,
    stress_tree: Path | None = None,
    projects_tree: Path | None = None,
) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory(prefix="tfmemlint-bench-") as folder:
        scratch = Path(folder)
        for name in only:
            if name == "cold":
                results.append(cold(tree, rounds, cold_target, scratch))
            elif name == "warm":
                results.append(warm(tree, rounds, scratch))
            elif name == "stress":
                assert stress_tree is not None, "stress runs on --trees"
                stressed = cold(stress_tree, rounds, STRESS_TARGET, scratch)
                results.append({**stressed, "name": "stress"})
            elif name == "projects":
                assert projects_tree is not None, "projects runs on --trees"
                projects = cold(projects_tree, rounds, cold_target, scratch)
                results.append({**projects, "name": "projects"})
            elif name == "hook":
                results.append(hook(tree, rounds, scratch))
            elif name == "fix":
                results.append(fix(rounds, scratch, 10 if small else 200))
            elif name == "table":
                results.append(table(rounds, scratch, 2_000 if small else 50_000))
            elif name == "memory":
                results.append(memory(tree))
            elif name == "python2":
                results.append(python2(rounds, scratch, 50 if small else 1000))
            elif name == "tabs":
                results.append(tabs(rounds, scratch, 50 if small else 1000))
            elif name == "notebooks":
                results.append(notebooks(rounds, scratch, 20 if small else 300))
            elif name == "launch":
                results.append(launch(rounds, scratch, 25 if small else 500))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path, nargs="?")
    parser.add_argument(
        "--trees", type=Path, help="build the real trees here (trees.py) and use them"
    )
    parser.add_argument("--wheels", type=Path, default=trees.WHEELS, help="the pinned wheels")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", help="comma-separated benches")
    parser.add_argument("--cold-target", type=float, default=0.75)
    parser.add_argument("--small", action="store_true", help="tiny generated inputs (CI smoke)")
    args = parser.parse_args()
    if (args.tree is None) == (args.trees is None):
        parser.error("give a TREE or --trees DIR")
    default = ON_REAL_TREES if args.trees else [b for b in BENCHES if b not in ON_OWN_TREES]
    only = [name for name in (args.only or ",".join(default)).split(",") if name]
    unknown = sorted(set(only) - set(BENCHES))
    if unknown:
        parser.error(f"unknown bench {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    own = [name for name in only if name in ON_OWN_TREES]
    if own and args.trees is None:
        parser.error(f"{own[0]} runs on a tree of trees.py's own: give --trees DIR")
    stress_tree = projects_tree = None
    if args.trees is not None:
        if "stress" in only:  # the TensorFlow wheel is the one large download
            stress_tree = trees.stress(args.trees, args.wheels)
        if "projects" in only:
            projects_tree = trees.projects(args.trees, args.wheels)
        generated = 40 if args.small else trees.GENERATED_FILES
        args.tree = trees.monorepo(args.trees, args.wheels, generated)
    files = sum(1 for _ in args.tree.rglob("*.py"))
    results = run(
        args.tree, args.rounds, only, args.cold_target, args.small, stress_tree, projects_tree
    )
    if args.json:
        print(
            json.dumps(
                {
                    "tree": str(args.tree),
                    "files": files,
                    "rounds": args.rounds,
                    "cpus": os.cpu_count(),
                    "results": results,
                }
            )
        )
        return
    print(f"{args.tree}: {files} files, {args.rounds} rounds, {os.cpu_count()} CPUs")
    for r in results:
        verdict = "met" if r["met"] else "NOT met"
        if r["unit"] == "x":
            detail = f"{r['tfmemlint_s']:.3f} s vs {r['yardstick_s']:.3f} s ({r['yardstick']})"
        else:
            detail = ""

        target = f"target <= {r['target']}"
        print(
            f"  {r['name']:<11} {r['value']:>8} {r['unit']:<3} {target:<16} {verdict:<8} {detail}"
        )
        for name, floor in r.get("floors", {}).items():
            print(f"  {'':<11} {floor['ratio']:>8} x   vs floor: {name} ({floor['s']:.3f} s)")
        for name, anchor in r.get("anchor", {}).items():
            print(f"  {'':<11} {anchor['ratio']:>8} x   vs {name} ({anchor['s']:.3f} s)")


if __name__ == "__main__":
    main()
