"""The store of project modules' summaries (issue 45): a module is summarized once while its
bytes stay the same, by whichever process or run with the cache gets to it first; what another
tool wrote, a damaged entry or changed bytes are summarized again."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tfmemlint.configuration.settings import Settings
from tfmemlint.model import FileResult
from tfmemlint.project import index as index_module
from tfmemlint.project import summary_store
from tfmemlint.project.module_summary import ModuleSummary
from tfmemlint.project.summary_store import SummaryStore
from tfmemlint.reading.digest import content_hash
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.cache import ResultCache
from tfmemlint.running.runner import Run

COMPAT = "import tensorflow.compat.v1 as tfv1\n"
TRAIN = "from mypkg.compat import tfv1\n\nsess = tfv1.Session()\n"


def project(root: Path, compat: str = COMPAT) -> Path:
    (root / "mypkg").mkdir(parents=True, exist_ok=True)
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "compat.py").write_text(compat)
    (root / "train.py").write_text(TRAIN)
    return root / "train.py"


def check(paths: list[Path], cache: Path | None) -> list[FileResult]:
    """A run in this process, as the CLI makes it, with the cache in `cache`."""
    store = ResultCache(str(cache)) if cache is not None else None
    run = Run([str(p) for p in paths], Settings.default(ALL_RULES), "check", cache=store)
    return list(run)


def codes(results: list[FileResult]) -> list[str]:
    return [finding.code for result in results for finding in result.findings]


@pytest.fixture
def summarized(monkeypatch: pytest.MonkeyPatch) -> list[ModuleSummary | None]:
    """Every summary this process builds from a syntax tree, as it builds it."""
    built: list[ModuleSummary | None] = []

    def summarize(tree: object) -> ModuleSummary | None:
        built.append(original(tree))
        return built[-1]

    original = index_module.summarize
    monkeypatch.setattr(index_module, "summarize", summarize)
    return built


def test_a_later_run_is_served_the_summary_an_earlier_one_made(
    tmp_path: Path, summarized: list[ModuleSummary | None]
) -> None:
    train = project(tmp_path / "src")
    cache = tmp_path / "cache"
    assert codes(check([train], cache)) == ["TFM101"]
    assert len(summarized) == 1  # mypkg/compat.py, through which `tfv1` resolves
    compat = (tmp_path / "src" / "mypkg" / "compat.py").read_bytes()
    entry = cache / "summaries" / f"{content_hash(compat)}.marshal"
    assert entry.is_file()
    train.write_text(TRAIN + "# edited: checked again, its module's summary from the store\n")
    assert codes(check([train], cache)) == ["TFM101"]
    assert len(summarized) == 1


def test_changed_bytes_are_summarized_again(
    tmp_path: Path, summarized: list[ModuleSummary | None]
) -> None:
    train = project(tmp_path / "src")
    cache = tmp_path / "cache"
    assert codes(check([train], cache)) == ["TFM101"]
    # `tfv1` is no TensorFlow any more: a summary served by the path would still say it is.
    (tmp_path / "src" / "mypkg" / "compat.py").write_text("import numpy as tfv1\n")
    assert codes(check([train], cache)) == []
    assert len(summarized) == 2
    assert len(list((cache / "summaries").iterdir())) == 2


def test_another_tools_entry_or_a_damaged_one_is_never_served(
    tmp_path: Path, summarized: list[ModuleSummary | None]
) -> None:
    train = project(tmp_path / "src")
    cache = tmp_path / "cache"
    key = content_hash(COMPAT.encode())
    entry = cache / "summaries" / f"{key}.marshal"
    # Another version of the tool would read `tfv1` as numpy's.
    entry.parent.mkdir(parents=True)
    wrong = ModuleSummary(bindings={"tfv1": ["numpy"]}, bound={"tfv1": 1})
    SummaryStore(str(entry.parent), "another tool").put(key, wrong)
    assert SummaryStore(str(entry.parent), "another tool").get(key) == wrong
    assert codes(check([train], cache)) == ["TFM101"]
    assert len(summarized) == 1
    entry.write_bytes(b"\x00not marshal")
    train.write_text(TRAIN + "# edited\n")
    assert codes(check([train], cache)) == ["TFM101"]
    assert len(summarized) == 2
    _, fingerprint, _, _ = marshal.loads(entry.read_bytes())  # written anew, whole
    assert fingerprint == ResultCache(str(cache)).fingerprint


def test_every_field_of_a_summary_comes_back(tmp_path: Path) -> None:
    summary = ModuleSummary(
        bindings={"tf": ["tensorflow"], "tfv1": ["=tf.compat.v1"], "x": None},
        stars=["..compat"],
        public=frozenset({"tf", "tfv1"}),
        functions={"make"},
        bound={"tf": 1, "tfv1": 1, "x": 2, "make": 1},
        bound_to_calls={"x"},
    )
    made: list[str] = []
    store = SummaryStore(str(tmp_path / "summaries"), "this tool", lambda: made.append("cache"))
    assert store.get("0" * 32) is None
    store.put("0" * 32, summary)
    assert store.get("0" * 32) == summary
    assert made == ["cache"]  # the cache's folder first, on the first write alone
    store.put("1" * 32, summary)
    assert made == ["cache"]
    assert SummaryStore(str(tmp_path / "summaries"), "another tool").get("0" * 32) is None


def test_a_store_that_cannot_be_written_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    store = SummaryStore(str(tmp_path / "gone" / "summaries"), "this tool")
    store.put("0" * 32, ModuleSummary())  # its parent is not there: left out, no error
    assert store.get("0" * 32) is None
    assert not (tmp_path / "gone").exists()


def test_the_oldest_entries_go_once_the_store_is_full(tmp_path: Path) -> None:
    folder = tmp_path / "summaries"
    folder.mkdir()
    store = SummaryStore(str(folder), "this tool")
    for number in range(12):
        store.put(f"{number + 1:032x}", ModuleSummary())
        os.utime(folder / f"{number + 1:032x}.marshal", ns=(number * 10**9, number * 10**9))
    for name in ("notes.txt", "mine.marshal", ".summary-notes.tmp"):  # a user's own files
        (folder / name).write_text("kept")
        os.utime(folder / name, ns=(0, 0))
    summary_store.prune(str(folder), 8)
    kept = sorted(path.name for path in folder.iterdir())
    # Down to three quarters of 8: the 6 written last, and what is not the store's.
    assert kept == [
        ".summary-notes.tmp",
        *(f"{number + 1:032x}.marshal" for number in range(6, 12)),
        "mine.marshal",
        "notes.txt",
    ]


def test_a_summary_made_under_the_checks_deeper_limit_is_not_served_to_the_pre_filter(
    tmp_path: Path,
) -> None:
    """How deep a tree CPython builds follows the recursion limit, and the checks run under a
    higher one than the pre-filter: a served summary must not make a module parse where it
    would not."""
    root = tmp_path / "src"
    deep = COMPAT + "x = " + "+".join(["a"] * 5000) + "\n"
    project(root, compat=deep)
    # Checked, it resolves `tfv1` through the module, under the checks' limit.
    both = "import tensorflow as tf\nfrom mypkg.compat import tfv1\n\nsess = tf.Session()\n"
    (root / "both.py").write_text(both + "sess2 = tfv1.Session()\n")
    cache = tmp_path / "cache"
    options = ["--isolated", "--output-format", "json"]
    run_cli(*options, "--cache-dir", str(cache), str(root / "both.py"))
    uncached = run_cli(*options, "--no-cache", str(root / "train.py"))
    cached = run_cli(*options, "--cache-dir", str(cache), str(root / "train.py"))
    assert json.loads(cached.stdout) == json.loads(uncached.stdout)


def test_a_run_that_summarizes_nothing_makes_no_cache_folder(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import tensorflow as tf\nsess = tf.Session()\n")
    diff = run_cli("--isolated", "--diff", "train.py", cwd=tmp_path)
    assert diff.returncode == 1 and "+sess = tf.Session(config=" in diff.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_a_source_from_stdin_shares_the_caches_summaries(tmp_path: Path) -> None:
    train = project(tmp_path / "src")
    cache = tmp_path / "cache"
    options = ["--isolated", "--stdin-filename", str(train), "-"]
    uncached = run_cli("--no-cache", *options, stdin=TRAIN, cwd=tmp_path)
    assert uncached.returncode == 1 and "TFM101" in uncached.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    # Without a configuration file or a cache named, the current folder may be an editor's.
    loose = run_cli(*options, stdin=TRAIN, cwd=tmp_path)
    assert loose.stdout == uncached.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    stdin = run_cli("--cache-dir", str(cache), *options, stdin=TRAIN, cwd=tmp_path)
    assert stdin.stdout == uncached.stdout
    compat = (tmp_path / "src" / "mypkg" / "compat.py").read_bytes()
    assert [p.name for p in (cache / "summaries").iterdir()] == [f"{content_hash(compat)}.marshal"]


def test_a_source_from_stdin_is_checked_from_a_folder_that_is_gone(tmp_path: Path) -> None:
    train = project(tmp_path / "src")
    (tmp_path / "src" / "tfmemlint.toml").write_text("")
    gone = tmp_path / "gone"
    gone.mkdir()
    command = 'cd "$1" && rmdir "$1" && exec "$2" -m tfmemlint check --fix --stdin-filename "$3" -'
    fixed = subprocess.run(
        ["sh", "-c", command, "sh", str(gone), sys.executable, str(train)],
        input=TRAIN,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert fixed.returncode == 0, fixed.stderr
    assert "tfv1.Session(config=tfv1.ConfigProto(" in fixed.stdout
    assert (tmp_path / "src" / ".tfmemlint_cache" / "summaries").is_dir()


def test_no_cache_keeps_no_summary_anywhere(tmp_path: Path) -> None:
    root = tmp_path / "src"
    project(root)
    for number in range(13):  # enough files for two workers
        (root / f"train{number:02d}.py").write_text(TRAIN)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    options = ["--isolated", "--no-cache", "-v", "-j", "2", str(root)]
    result = run_cli(*options, cwd=tmp_path, env={"TMPDIR": str(scratch)})
    assert result.returncode == 1 and "2 worker processes" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src", "tmp"]
    assert list(scratch.iterdir()) == []
