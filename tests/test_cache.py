"""The result cache (issue 6): a second run reads only what changed, and never serves a result
for other bytes, other settings or another version of the tool."""

from __future__ import annotations

import json
import marshal
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tfmemlint.configuration.settings import Settings
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import cache as cache_module
from tfmemlint.running.cache import ResultCache
from tfmemlint.running.runner import Run

BARE = "import tensorflow as tf\nsess = tf.Session()\n"
CLEAN = "import os\nprint(os.sep)\n"


def served(result: subprocess.CompletedProcess[str]) -> int:
    """How many files the run took from the cache, from its --verbose timing table."""
    match = re.search(r"served from the cache\s+(\d+) files", result.stderr)
    assert match, result.stderr
    return int(match.group(1))


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "src"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def check(root: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--isolated", "-v", "--cache-dir", str(cache), *args, str(root))


def test_a_second_run_is_served_from_the_cache_with_the_same_report(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE, "b.py": CLEAN, "c.py": "# Session\n"})
    cache = tmp_path / "cache"
    first = check(root, cache, "--output-format", "json")
    second = check(root, cache, "--output-format", "json")
    assert served(first) == 0 and served(second) == 3
    assert second.returncode == first.returncode == 1
    assert json.loads(second.stdout) == json.loads(first.stdout)  # fixes, positions, all
    text = check(root, cache, "--show-fixes")
    assert served(text) == 3 and "sess = tf.Session()" in text.stdout  # the excerpt is there


def test_the_cache_folder_ignores_itself(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert run_cli("--isolated", str(root), cwd=tmp_path).returncode == 1
    folder = tmp_path / ".tfmemlint_cache"
    assert (folder / "results.marshal").is_file() and (folder / "CACHEDIR.TAG").is_file()
    untracked = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert untracked.splitlines() == ["?? src/a.py"]


def test_changed_bytes_are_checked_again_even_with_the_same_stat(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": CLEAN.replace("os.sep", "os.xx")})
    path = root / "a.py"
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # long ago: its stat is trusted
    cache = tmp_path / "cache"
    assert check(root, cache).returncode == 0
    # Same size, same mtime: only ctime (and the content hash) can tell.
    path.write_text("import os\nSession = 1\n"[: len(CLEAN)].ljust(len(CLEAN) - 1) + "\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    again = check(root, cache, "--output-format", "json")
    assert served(again) == 0
    path.write_text(BARE)
    assert check(root, cache).returncode == 1


def test_a_just_written_file_is_verified_by_its_hash(tmp_path: Path) -> None:
    """A file changed within the clock's tick of being read could change again unseen: its
    entry is not trusted on its stat alone (git's racy-file rule)."""
    root = tree(tmp_path, {"a.py": BARE})
    settings = Settings.default(ALL_RULES)
    store = ResultCache(str(tmp_path / "cache"))
    list(Run([str(root / "a.py")], settings, "check", cache=store))
    store.save()
    [entry] = marshal.loads((tmp_path / "cache" / "results.marshal").read_bytes())["files"].values()
    assert entry[cache_module.TRUSTED] is False
    reads: list[int] = []
    again = ResultCache(str(tmp_path / "cache"))
    stat = os.stat(root / "a.py")
    hit = again.lookup(str(root / "a.py"), settings, stat, lambda: reads.append(1) or BARE.encode())
    assert hit is not None and [f.code for f in hit.findings] == ["TFM101"] and reads == [1]


def test_other_settings_are_never_served(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    cache = tmp_path / "cache"
    assert check(root, cache, "--select", "TFM2").returncode == 0
    other = check(root, cache)
    assert served(other) == 0 and other.returncode == 1
    fraction = check(root, cache, "--policy", "fraction=0.5", "--output-format", "json")
    assert served(fraction) == 0
    assert "per_process_gpu_memory_fraction=0.5" in fraction.stdout


def test_another_version_of_the_tool_starts_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    store = ResultCache(str(tmp_path / "cache"))
    list(Run([str(root / "a.py")], Settings.default(ALL_RULES), "check", cache=store))
    store.save()
    stat = os.stat(root / "a.py")
    same = ResultCache(str(tmp_path / "cache"))
    assert same.lookup(str(root / "a.py"), Settings.default(ALL_RULES), stat, lambda: BARE.encode())
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    newer = ResultCache(str(tmp_path / "cache"))
    assert (
        newer.lookup(str(root / "a.py"), Settings.default(ALL_RULES), stat, lambda: BARE.encode())
        is None
    )


def test_no_cache_writes_nothing_and_a_broken_cache_is_ignored(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    assert run_cli("--isolated", "--no-cache", str(root), cwd=tmp_path).returncode == 1
    assert not (tmp_path / ".tfmemlint_cache").exists()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "results.marshal").write_bytes(b"\x00not marshal")
    assert check(root, cache).returncode == 1
    assert marshal.loads((cache / "results.marshal").read_bytes())["files"]


def test_an_unwritable_cache_folder_does_not_fail_the_run(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    blocker = tmp_path / "cache"
    blocker.write_text("a file where a folder should be")
    result = check(root, blocker / "inside")
    assert result.returncode == 1 and "TFM101" in result.stdout
    assert "warning: cannot write the cache" in result.stderr


def test_fix_after_a_cached_check_still_fixes(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE, "b.py": CLEAN})
    cache = tmp_path / "cache"
    assert check(root, cache).returncode == 1
    fixed = check(root, cache, "--fix")
    assert fixed.returncode == 0 and served(fixed) == 1  # b.py, clean, was not read again
    assert "allow_growth=True" in (root / "a.py").read_text()
    after = check(root, cache)
    assert after.returncode == 0


def test_concurrent_runs_share_one_cache(tmp_path: Path) -> None:
    files = {f"m{i:02d}.py": BARE if i % 3 == 0 else CLEAN for i in range(30)}
    root = tree(tmp_path, files)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "tfmemlint", "--isolated", "--output-format", "json"]
    runs = [
        subprocess.Popen(
            [*command, "--cache-dir", str(cache), str(root)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outputs = [json.loads(run.communicate(timeout=300)[0]) for run in runs]
    assert all(len(output) == 10 for output in outputs)
    assert sorted(p.name for p in cache.iterdir()) == [
        ".gitignore",
        "CACHEDIR.TAG",
        "results.marshal",
    ]
    assert len(marshal.loads((cache / "results.marshal").read_bytes())["files"]) == 30
    assert served(check(root, cache)) == 30


def test_cache_dir_from_the_configuration(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    (tmp_path / "tfmemlint.toml").write_text('cache-dir = "build/lint-cache"\n')
    assert run_cli(str(root), cwd=tmp_path).returncode == 1
    assert (tmp_path / "build" / "lint-cache" / "results.marshal").is_file()
    (tmp_path / "tfmemlint.toml").write_text("cache-dir = 3\n")
    bad = run_cli(str(root), cwd=tmp_path)
    assert bad.returncode == 2 and "'cache-dir' must be a string" in bad.stderr


def test_trust_is_judged_at_read_time_not_at_store_time(tmp_path: Path) -> None:
    """A file changed one second before it was read is not trusted on its stat, however long
    the check took before the result was stored (the review's racy case)."""
    path = tmp_path / "a.py"
    path.write_text(BARE)
    changed = time.time_ns() - 60_000_000_000
    os.utime(path, ns=(changed, changed))
    stat = os.stat(path)
    store = ResultCache(str(tmp_path / "cache"))
    read_soon_after = max(stat.st_mtime_ns, stat.st_ctime_ns) + 1_000_000_000
    store.store(str(path), Settings.default(ALL_RULES), stat, BARE.encode(), [], read_soon_after)
    store.save()
    [entry] = marshal.loads((tmp_path / "cache" / "results.marshal").read_bytes())["files"].values()
    assert entry[cache_module.TRUSTED] is False


def test_a_cache_dir_that_exists_gets_no_marker_files(tmp_path: Path) -> None:
    """`--cache-dir .` must not drop a `.gitignore` of `*` into a project."""
    root = tree(tmp_path, {"a.py": CLEAN})
    assert run_cli("--isolated", "--cache-dir", ".", ".", cwd=root).returncode == 0
    assert (root / "results.marshal").is_file()
    assert not (root / ".gitignore").exists() and not (root / "CACHEDIR.TAG").exists()


@pytest.mark.parametrize(
    "path",
    ["a.py", "./a.py", "src/a.py", "src/./a.py", "src//a.py", "../x/a.py", "src/../a.py", "/a.py"],
)
def test_an_entry_is_keyed_by_the_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Folders are normalized once per run; the key is still os.path.abspath's, so a cache
    written by an earlier version, or under another spelling of the path, is found."""
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    cache = ResultCache(str(tmp_path / "cache"))
    assert cache._key(path) == os.path.abspath(path)
    assert cache._key(path) == os.path.abspath(path)  # the folder known now


def settled(root: Path) -> None:
    """Wait until every file under `root` was last changed long enough ago for the cache to
    trust its stat alone: until then no run is recorded for replay."""
    newest = max(max(p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in root.rglob("*"))
    time.sleep(max(0.0, (newest + cache_module._RACY_NS) / 1e9 - time.time()) + 0.2)


def reports(cache: Path) -> list[Path]:
    return sorted(cache.glob("report-*.marshal"))


def test_an_unchanged_run_replays_its_report(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE, "b.py": CLEAN, "pkg/c.py": "# Session\n"})
    cache = tmp_path / "cache"
    settled(root)
    plain = ("--isolated", "--cache-dir", str(cache), str(root))
    to_file = ("--output-format", "json", "-o", str(tmp_path / "out.json"))
    first, first_json = run_cli(*plain), run_cli(*to_file, *plain)
    assert first.returncode == first_json.returncode == 1 and len(reports(cache)) == 2
    written = (tmp_path / "out.json").read_text()
    # Without the entries, only a replay can give the report back: nothing is checked again.
    (cache / "results.marshal").unlink()
    (tmp_path / "out.json").unlink()
    second, second_json = run_cli(*plain), run_cli(*to_file, *plain)
    assert (second.stdout, second.stderr, second.returncode) == (
        first.stdout,
        first.stderr,
        first.returncode,
    )
    assert second_json.returncode == 1 and (tmp_path / "out.json").read_text() == written
    assert not (cache / "results.marshal").exists()
    # Another way of running it is no replay: --exit-zero checks again, and ends 0.
    assert run_cli("--exit-zero", *plain).returncode == 0
    assert (cache / "results.marshal").exists()


def test_what_changed_since_the_recorded_run_is_never_replayed(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": CLEAN, "b.py": CLEAN})
    cache = tmp_path / "cache"
    settled(root)
    plain = ("--isolated", "--cache-dir", str(cache), str(root))
    assert run_cli(*plain).returncode == 0 and reports(cache)
    (root / "b.py").write_text(BARE)  # its stat changes
    changed = run_cli(*plain)
    assert changed.returncode == 1 and "b.py:2:" in changed.stdout
    (root / "b.py").write_text(CLEAN)
    settled(root)
    assert run_cli(*plain).returncode == 0
    (root / "new.py").write_text(BARE)  # a file the recorded run did not check
    assert "new.py:2:" in run_cli(*plain).stdout


@pytest.mark.parametrize("checked", ["app", "."])
def test_a_changed_project_module_is_never_replayed(tmp_path: Path, checked: str) -> None:
    """The results of the files checked depend on a module outside the folder checked, or on
    one of the files checked."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg/__init__.py").write_text("")
    (tmp_path / "mypkg/compat.py").write_text("import tensorflow.compat.v1 as tf\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app/run.py").write_text("from mypkg.compat import tf\nsess = tf.Session()\n")
    settled(tmp_path)
    command = ("--isolated", "--cache-dir", "cache", checked)
    assert run_cli(*command, cwd=tmp_path).returncode == 1 and reports(tmp_path / "cache")
    (tmp_path / "cache/results.marshal").unlink()
    assert run_cli(*command, cwd=tmp_path).returncode == 1  # replayed: nothing checked again
    assert not (tmp_path / "cache/results.marshal").exists()
    (tmp_path / "mypkg/compat.py").write_text("tf = None\n")
    assert run_cli(*command, cwd=tmp_path).returncode == 0


def test_a_module_that_appears_where_none_was_is_never_replayed(tmp_path: Path) -> None:
    """A recorded run keeps the paths where a module was looked for and none was, folded into
    their folder's stat: a name that appears there since changes that stat, and the names are
    looked at again. Another change to the folder is looked through, and replays."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app/run.py").write_text("from compat import tf\nsess = tf.Session()\n")
    settled(tmp_path)
    command = ("--isolated", "--cache-dir", "cache", "app")
    assert run_cli(*command, cwd=tmp_path).returncode == 0  # `compat` is nowhere: no finding
    [report] = reports(tmp_path / "cache")
    folded = [d for d in marshal.loads(report.read_bytes())["dependencies"] if "absent:" in d[-1]]
    # Among them, `compat`'s two paths beside run.py (and, up to /, the packaging files).
    names = {d[0]: set(d[-1].removeprefix("absent:").split("\0")) for d in folded}
    assert {"compat", "compat.py"} <= names[str(tmp_path / "app")]
    (tmp_path / "cache/results.marshal").unlink()
    (tmp_path / "app/notes.txt").write_text("not a module\n")  # the folder changes, not its names
    assert run_cli(*command, cwd=tmp_path).returncode == 0
    assert not (tmp_path / "cache/results.marshal").exists()  # replayed
    (tmp_path / "app/compat.py").write_text("import tensorflow.compat.v1 as tf\n")
    appeared = run_cli(*command, cwd=tmp_path)
    assert appeared.returncode == 1 and "run.py:2:" in appeared.stdout


def test_no_run_is_recorded_for_a_terminal_or_a_just_written_file(tmp_path: Path) -> None:
    import pty

    root = tree(tmp_path, {"a.py": BARE})
    cache = tmp_path / "cache"
    assert run_cli("--isolated", "--cache-dir", str(cache), str(root)).returncode == 1
    assert not reports(cache)  # a.py may still change within its mtime's tick
    settled(root)
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tfmemlint", "--isolated", "--cache-dir", str(cache), str(root)],
            stdout=secondary,
            stderr=subprocess.PIPE,
            timeout=300,
        )
        shown = os.read(primary, 65536)
    finally:
        os.close(primary)
        os.close(secondary)
    assert done.returncode == 1 and not reports(cache)
    assert b"\x1b[" in shown and b"TFM101" in shown  # in colour, as a terminal shows it


def test_a_result_served_but_then_not_read_is_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache served a.py, but reading it for the report's excerpt failed, so the run checked
    it after all and reported TFM901: that run must not be replayed."""
    from tfmemlint.running import file_check, runner

    root = tree(tmp_path, {"a.py": BARE})
    settled(root)
    items, settings = [str(root / "a.py")], Settings.default(ALL_RULES)
    first = ResultCache(str(tmp_path / "cache"))
    list(Run(items, settings, "check", cache=first))
    first.save()

    def unreadable(path: str) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(runner, "read_file", unreadable)
    monkeypatch.setattr(file_check, "read_file", unreadable)
    second = ResultCache(str(tmp_path / "cache"))
    [result] = list(Run(items, settings, "check", cache=second))
    assert [f.code for f in result.findings] == ["TFM901"]
    second.record("way", items, "a report", 1)
    assert not reports(tmp_path / "cache")
    monkeypatch.undo()
    third = ResultCache(str(tmp_path / "cache"))
    list(Run(items, settings, "check", cache=third))
    third.record("way", items, "a report", 1)
    assert third.replay("way", items) == ("a report", 1)


def test_a_damaged_report_is_ignored_and_only_reports_are_pruned(tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    cache = tmp_path / "cache"
    cache.mkdir()
    for number in range(20):  # a user's own files, in a folder given as --cache-dir
        (cache / f"report-{number:02}.txt").write_text("mine\n")
    settled(root)
    command = ("--isolated", "--cache-dir", str(cache), str(root))
    first = run_cli(*command)
    [recorded] = reports(cache)
    assert len(list(cache.glob("report-*.txt"))) == 20
    assert recorded.stat().st_mode & 0o077 == 0  # it quotes the code: its owner's alone
    stored = marshal.loads(recorded.read_bytes())
    recorded.write_bytes(marshal.dumps({**stored, "report": b"bytes", "status": "1"}))
    again = run_cli(*command)
    assert (again.stdout, again.returncode) == (first.stdout, first.returncode)


def test_a_diff_comes_before_its_summary_and_a_bad_option_before_the_walk(
    tmp_path: Path,
) -> None:
    root = tree(tmp_path, {"a.py": BARE})
    done = subprocess.run(
        [sys.executable, "-m", "tfmemlint", "--isolated", "--no-cache", "--diff", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert done.stdout.index("+sess = tf.Session(") < done.stdout.index("Would fix 1 finding")
    (tmp_path / "empty").mkdir()
    wrong = run_cli("--isolated", "--select", "BOGUS", str(tmp_path / "empty"))
    assert wrong.returncode == 2 and "No Python files" not in wrong.stderr
    assert "BOGUS" in wrong.stderr
