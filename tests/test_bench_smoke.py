"""The benchmark runs (a smoke test on a tiny tree; the timings themselves are never asserted:
speed is measured with bench/, not with timed tests)."""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT


def test_generator_and_bench_run(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), str(tree), "--files", "40"],
        check=True,
    )
    assert len(list(tree.rglob("*.py"))) == 40
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), str(again), "--files", "40"],
        check=True,
    )
    assert [p.read_bytes() for p in sorted(tree.rglob("*.py"))] == [
        p.read_bytes() for p in sorted(again.rglob("*.py"))
    ]  # deterministic
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            str(tree),
            "--rounds",
            "1",
            "--small",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout)
    assert report["files"] == 40 and report["rounds"] == 1
    results = {r["name"]: r for r in report["results"]}
    assert list(results) == [
        "cold",
        "warm",
        "hook",
        "fix",
        "table",
        "memory",
        "python2",
        "tabs",
        "notebooks",
        "launch",
    ]
    for name in ("cold", "warm", "hook", "fix", "python2", "tabs", "notebooks", "launch"):
        assert results[name]["unit"] == "x" and results[name]["value"] > 0
        assert results[name]["tfmemlint_s"] > 0 and results[name]["yardstick_s"] > 0
    assert list(results["cold"]["floors"]) == [
        "read every file",
        "+ ast parse",
        "+ libcst parse",
        "+ libcst parse, over all CPUs",
        "the rules' words, and libcst on the files with a finding, over all CPUs",
    ]
    assert list(results["warm"]["floors"]) == ["stat every file", "+ a stat cache"]
    assert list(results["fix"]["floors"]) == ["libcst parse and codegen over all CPUs"]
    assert results["cold"]["yardstick"] == "floor: + libcst parse"
    assert results["warm"]["yardstick"] == "floor: stat every file"
    assert list(results["cold"]["anchor"]) == ["ruff --select E9"]
    targets = {name: r["target"] for name, r in results.items()}
    assert targets == {
        "cold": 0.75,
        "warm": 1.3,
        "hook": 1.5,
        "fix": 2.0,
        "table": 2.0,
        "memory": 200.0,
        "python2": 1.5,
        "tabs": 1.2,
        "notebooks": 1.1,
        "launch": 2.0,
    }
    for name in ("cold", "warm", "fix"):
        assert all(f["s"] > 0 and f["ratio"] > 0 for f in results[name]["floors"].values())
    assert results["table"]["unit"] == "s" and results["memory"]["unit"] == "MB"
    assert results["memory"]["value"] > 10  # a real peak RSS, in MB


def test_the_floor_scripts_run(tmp_path: Path) -> None:
    """The bench times them without looking at their exit status: they must not fail fast."""
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "a.py").write_text("x = 1\n")
    bench = runpy.run_path(str(ROOT / "bench" / "run.py"))
    (tmp_path / "deep" / "s.py").write_text("import tensorflow as tf\ntf.Session()\n")
    (tmp_path / "deep" / "bad.py").write_text("import tensorflow as tf\ntf.Session(\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    cold_floors = bench["cold_floors"](tmp_path, scratch)
    assert set(cold_floors) == {*bench["COLD_FLOORS"], bench["LEAST_FLOOR"]}
    warm_floors = [
        [script, str(tmp_path), str(scratch)] for script in bench["WARM_FLOORS"].values()
    ]
    for arguments in [*cold_floors.values(), *warm_floors]:
        for _ in range(2):  # the stat cache's first run writes it, the second reads it
            subprocess.run([sys.executable, "-c", *arguments], check=True)
    assert (scratch / "stats.marshal").is_file()
    fixed = tmp_path / "deep" / "er"
    subprocess.run(
        [sys.executable, "-c", bench["_PARSE_AND_PRINT_OVER_CPUS"], str(fixed)], check=True
    )


def test_the_least_floor_searches_the_words_and_parses_the_files_with_a_finding(
    tmp_path: Path,
) -> None:
    """The design's least floor searches each file for the words that the pre-filter searches a
    file with none of them for, and parses the files a rule finds something in: not a file
    whose only finding is a file error, which may never reach libcst (this one, nested too
    deeply for any parser, would crash its worker)."""
    bench = runpy.run_path(str(ROOT / "bench" / "run.py"))
    with_import = bench["family_words"]()
    assert {b"tensorflow", b"Session", b"jax", b"__main__"} <= set(with_import)
    # A file with no import reaches no project module: no entry point's words for it.
    without_import = bench["family_words"](b"x = 1\n")
    assert b"__main__" not in without_import and set(without_import) < set(with_import)
    files = {
        "plain.py": b"x = 1\n",
        "imports.py": b"import os\n",
        "pkg/session.py": b"import tensorflow as tf\ntf.Session()\n",
        "deep.py": b"import tensorflow as tf\ntf.Session()\nx = " + b"-" * 20_000 + b"1\n",
    }
    for name, raw in files.items():
        (tmp_path / "tree" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / name).write_bytes(raw)
    assert bench["files_parsed_for_a_finding"](tmp_path / "tree") == {
        os.path.join("pkg", "session.py")
    }
    floor = bench["cold_floors"](tmp_path / "tree", tmp_path)[bench["LEAST_FLOOR"]]
    done = subprocess.run([sys.executable, "-c", *floor], capture_output=True, check=True)

    # Each word once; a longer word only where the shorter ones it holds are found.
    def searches(raw: bytes) -> int:
        words = with_import if b"import" in raw else without_import
        shorter = {w: [s for s in with_import if s != w and s in w] for w in words}
        return sum(all(s in raw for s in shorter[w]) for w in words)

    expected = sum(searches(raw) for raw in files.values())
    assert done.stdout.decode().split() == ["1", "files", "parsed,", str(expected), "searches"]


def test_the_python2_tree_is_python2_and_the_same_modules(tmp_path: Path) -> None:
    """The python2 bench compares two trees that differ only in the TF1 modules' Python."""
    bench = runpy.run_path(str(ROOT / "bench" / "generate.py"))
    bench["generate"](tmp_path / "two", 60, seed=3, session_share=0.5, python2=True)
    bench["generate"](tmp_path / "three", 60, seed=3, session_share=0.5)
    two, three = (
        sorted((tmp_path / "two").rglob("*.py")),
        sorted((tmp_path / "three").rglob("*.py")),
    )
    assert [p.name for p in two] == [p.name for p in three]
    changed = [p for p, q in zip(two, three, strict=True) if p.read_bytes() != q.read_bytes()]
    assert changed and all(b'print "building"' in p.read_bytes() for p in changed)


def test_the_tabs_tree_is_python2_that_python3_refuses_for_its_tabs(tmp_path: Path) -> None:
    """The tabs bench's Python 2 modules are those of the python2 tree, indented with tabs and
    spaces mixed: Python 2 reads the same blocks, and Python 3 stops at a TabError."""
    bench = runpy.run_path(str(ROOT / "bench" / "generate.py"))
    bench["generate"](tmp_path / "tabs", 60, seed=3, session_share=0.5, python2=True, tabs=True)
    bench["generate"](tmp_path / "spaces", 60, seed=3, session_share=0.5, python2=True)
    pairs = [
        (p, tmp_path / "spaces" / p.relative_to(tmp_path / "tabs"))
        for p in sorted((tmp_path / "tabs").rglob("*.py"))
    ]
    changed = [(p, q) for p, q in pairs if p.read_bytes() != q.read_bytes()]
    assert changed
    for mixed, spaces in changed:
        text = mixed.read_text()
        assert b'print "building"' in spaces.read_bytes()
        # A line indented with a tab, then one of its block with 8 spaces: TabError.
        assert re.search(r"^\t\S.*\n {8}\S", text, re.M)
        assert [line.expandtabs(8).strip() for line in text.splitlines()] == [
            line.strip() for line in spaces.read_text().splitlines()
        ]


def test_compare_times_two_installs_in_turn(tmp_path: Path) -> None:
    """bench/compare.py, here with the same install on both sides."""
    tree = tmp_path / "tree"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), str(tree), "--files", "20"],
        check=True,
    )
    tool = shutil.which("tfmemlint") or str(Path(sys.executable).with_name("tfmemlint"))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "compare.py"),
            tool,
            tool,
            str(tree),
            "--rounds",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"cold\s+base \d+\.\d+ s\s+new \d+\.\d+ s\s+new/base \d+\.\d+", done.stdout)
    assert re.search(r"warm\s+base", done.stdout)


def test_the_server_bench_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "server.py"), "--rounds", "2", "--lines", "60"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = re.findall(
        r"^  (with sessions|no trigger word) \((\d+) findings\) +([\d.]+) ms", done.stdout, re.M
    )
    assert [(label, int(found) > 0) for label, found, _ in rows] == [
        ("with sessions", True),
        ("no trigger word", False),
    ]


def _wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> None:
    """A wheel as pip would leave it: a zip of the package's files (and one that is not)."""
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for member, text in files.items():
            archive.writestr(f"{name}/{member}", text)
        archive.writestr(f"{name}-{version}.dist-info/METADATA", f"Name: {name}\n")


def test_the_real_trees_build_offline_from_the_pinned_wheels_and_run(tmp_path: Path) -> None:
    """bench/trees.py unpacks the wheels it finds (no network), and `run.py --trees` times
    cold, stress, projects, warm and hook on them in one run."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    trees = runpy.run_path(str(ROOT / "bench" / "trees.py"))
    pinned = trees["PINNED"]
    session = "import tensorflow as tf\nsess = tf.Session()\n"
    _wheel(wheels, "tensorflow", pinned["tensorflow"], {"python/client/s.py": session})
    _wheel(wheels, "sympy", pinned["sympy"], {"core/add.py": "x = 1\n", "data.txt": "no"})
    _wheel(wheels, "django", pinned["django"], {"db/models.py": "y = 2\n"})
    # A project whose program runs through one of its own modules, as tensor2tensor's do.
    trainer = "from tensor2tensor.utils import trainer_lib\n\nif __name__ == '__main__':\n"
    trainer += "    trainer_lib.main()\n"
    library = "import tensorflow as tf\n\n\ndef main():\n    tf.constant(1)\n"
    _wheel(
        wheels,
        "tensor2tensor",
        pinned["tensor2tensor"],
        {
            "__init__.py": "",
            "bin/__init__.py": "",
            "bin/t2t_trainer.py": trainer,
            "utils/__init__.py": "",
            "utils/trainer_lib.py": library,
        },
    )
    _wheel(wheels, "trax", pinned["trax"], {"__init__.py": "", "layers.py": "import jax\n"})
    out = tmp_path / "trees"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--trees", str(out)]
    done = subprocess.run(
        [*command, "--wheels", str(wheels), "--rounds", "1", "--small", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout)
    results = {r["name"]: r for r in report["results"]}
    assert list(results) == ["cold", "stress", "projects", "warm", "hook"]
    assert results["stress"]["target"] == 0.5 and results["cold"]["target"] == 0.75
    assert all(r["value"] > 0 for r in results.values())
    stress, monorepo, projects = out / "stress", out / "monorepo", out / "projects"
    # Each project in a folder of its own, its package under it: the program's root.
    assert (projects / "tensor2tensor" / "tensor2tensor" / "bin" / "t2t_trainer.py").is_file()
    assert (projects / "trax" / "trax" / "layers.py").is_file()
    # The program reaches TensorFlow through its project's module, which TFM205's walk enters.
    found = subprocess.run(
        [sys.executable, "-m", "tfmemlint", "check", "--isolated", "--no-cache", str(projects)],
        capture_output=True,
        text=True,
    )
    assert "t2t_trainer.py:1:1: TFM205" in found.stdout, found.stdout
    assert (stress / "tensorflow" / "python" / "client" / "s.py").read_text() == session
    assert not (monorepo / "vendor" / "sympy" / "data.txt").exists()  # Python only
    assert (monorepo / "vendor" / "django" / "db" / "models.py").is_file()
    assert len(list((monorepo / "services").rglob("*.py"))) == 40
    # The programs hold the words the Keras, JAX and tfds families look for.
    programs = "".join(p.read_text(errors="replace") for p in (monorepo / "programs").rglob("*.py"))
    for word in ("keras", "jax", "tensorflow_datasets", "Session"):
        assert word in programs, word
    # Built once: a second build leaves the trees as they are.
    stamp = (monorepo / "BUILT").stat().st_mtime_ns
    trees["monorepo"](out, wheels, 40)
    assert (monorepo / "BUILT").stat().st_mtime_ns == stamp
