"""Worker processes (-j) and the --verbose timing table (issue 6)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tfmemlint.configuration.settings import Settings
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import runner
from tfmemlint.running.cache import ResultCache

BARE = "import tensorflow as tf\nsess = tf.Session()\n"
CONFIGURED = "import tensorflow as tf\nsess = tf.Session(config=tf.ConfigProto())\n"
FIXED = "tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))"


def make_tree(root: Path, count: int) -> list[Path]:
    paths = []
    for index in range(count):
        path = root / f"pkg{index % 3}" / f"m{index:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text([BARE, CONFIGURED, "x = 1\n"][index % 3])
        paths.append(path)
    return paths


def stage(stderr: str, name: str) -> str:
    match = re.search(rf"^  {re.escape(name)}.*$", stderr, re.MULTILINE)
    assert match, stderr
    return match.group()


def test_workers_give_the_same_report_as_one_process(tmp_path: Path) -> None:
    make_tree(tmp_path / "src", 30)
    options = ["--isolated", "--no-cache", "-v", "--output-format", "json"]
    serial = run_cli(*options, "-j", "1", str(tmp_path / "src"))
    parallel = run_cli(*options, "-j", "2", str(tmp_path / "src"))
    assert json.loads(parallel.stdout) == json.loads(serial.stdout)
    assert len(json.loads(serial.stdout)) == 20  # 10 TFM101, 10 TFM102
    assert "in this process" in stage(serial.stderr, "parsed")
    assert "2 worker processes" in stage(parallel.stderr, "parsed")


def test_a_handful_of_files_never_starts_workers(tmp_path: Path) -> None:
    make_tree(tmp_path / "src", 5)
    result = run_cli("--isolated", "--no-cache", "-v", "-j", "8", str(tmp_path / "src"))
    assert "in this process" in stage(result.stderr, "parsed")


def test_workers_fix_every_file(tmp_path: Path) -> None:
    paths = make_tree(tmp_path / "src", 30)
    result = run_cli("--isolated", "--no-cache", "-v", "-j", "2", "--fix", str(tmp_path / "src"))
    assert result.returncode == 0, result.stdout
    assert "20 files" in stage(result.stderr, "fixed")  # TFM101 and TFM102 alike
    assert [FIXED in p.read_text() for p in paths[::3]] == [True] * 10
    assert all("allow_growth" in p.read_text() for p in paths[1::3])
    assert all(p.read_text() == "x = 1\n" for p in paths[2::3])


def test_timing_table_names_every_stage(tmp_path: Path) -> None:
    make_tree(tmp_path / "src", 6)
    (tmp_path / "src" / "plain.py").write_text("print('no trigger word here')\n")
    result = run_cli("--isolated", "--no-cache", "-v", str(tmp_path / "src"))
    assert result.stderr.startswith("tfmemlint timing:")
    assert "7 files" in stage(result.stderr, "walked")
    assert "3 files" in stage(result.stderr, "pre-filtered out")  # plain.py and x = 1
    assert "4 files" in stage(result.stderr, "parsed")
    assert re.search(r"total\s+\d+\.\d{3} s", result.stderr)


def test_jobs_must_be_positive(tmp_path: Path) -> None:
    result = run_cli("-j", "0", str(tmp_path))
    assert result.returncode == 2 and "-j" in result.stderr


def test_a_worker_ended_mid_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    """The pool ends its workers with SIGTERM when one dies; a write in progress must clean
    up after itself and leave the file as it was."""
    target = tmp_path / "a.py"
    target.write_text(BARE)
    script = f"""
import os, sys, time
from tfmemlint.running import runner
from tfmemlint.running.cache import ResultCache
from tfmemlint.rules import ALL_RULES
from tfmemlint.configuration.settings import Settings
runner._start_worker(os.getppid())
os.fsync = lambda fd: (print("writing", flush=True), time.sleep(60))
runner._check_in_worker(runner._Pending({str(target)!r}, Settings.default(ALL_RULES), None, None), "fix", False)
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "writing\n"
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == 128 + signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
    assert target.read_text() == BARE


def test_a_worker_ended_while_sending_a_result_ends(tmp_path: Path) -> None:
    """A worker ended as it sends a result to a parent that no longer reads (the pool's
    manager, busy ending the workers after one died) must end, not retry the send forever:
    the parent waits for every worker."""
    script = """
import multiprocessing, os
from concurrent.futures.process import _sendback_result
from tfmemlint.running import runner
from tfmemlint.running.cache import ResultCache
runner._start_worker(os.getppid())
results = multiprocessing.SimpleQueue()  # nobody reads it: the pipe fills
print("sending", flush=True)
_sendback_result(results, 0, result=b"x" * 10_000_000)
"""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "sending\n"
    time.sleep(0.2)  # into the blocked write
    child.send_signal(signal.SIGTERM)
    try:
        assert child.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        child.kill()


PROGRAM = """import argparse

from models.net import build

if __name__ == "__main__":
    print(build(argparse.ArgumentParser().parse_args()))
"""
NET_WITHOUT_TENSORFLOW = "def build(args):\n    return args\n"
NET_WITH_TENSORFLOW = """import tensorflow as tf


def build(args):
    return tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
"""


def make_large_project(root: Path, net: str) -> None:
    """More files than FIRST_STAGE_IN_WORKERS: sessions, plain modules, and a program that
    starts TensorFlow (or not) only through its project's `models/net.py`."""
    make_tree(root, runner.FIRST_STAGE_IN_WORKERS + 30)
    (root / "models").mkdir()
    (root / "models" / "__init__.py").write_text("")
    (root / "models" / "net.py").write_text(net)
    (root / "train.py").write_text(PROGRAM)


def test_a_large_run_leaves_the_first_stage_to_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its results and counts are those of one process, the program through the project
    included, and this process runs no first stage itself."""
    make_large_project(tmp_path, NET_WITH_TENSORFLOW)
    items = sorted(str(p) for p in tmp_path.rglob("*.py"))
    serial = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=1)
    expected = [(r.filename, [f.code for f in r.findings]) for r in serial]

    def never_here(self: runner.Run, pending: runner._Pending) -> None:
        raise AssertionError(f"the first stage of {pending.path} ran in this process")

    monkeypatch.setattr(runner.Run, "_first_stage", never_here)
    parallel = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=2)
    assert [(r.filename, [f.code for f in r.findings]) for r in parallel] == expected
    assert (str(tmp_path / "train.py"), ["TFM205"]) in expected
    assert parallel.stats.workers == 2
    counts = (serial.stats.parsed, serial.stats.filtered_out)
    assert (parallel.stats.parsed, parallel.stats.filtered_out) == counts


def test_what_a_worker_filtered_out_is_cached_with_what_its_verdict_read(
    tmp_path: Path,
) -> None:
    """The program is clean while its project's module starts nothing; once that module
    starts TensorFlow, the cached run checks the program again."""
    make_large_project(tmp_path / "src", NET_WITHOUT_TENSORFLOW)
    command = ["--isolated", "-v", "-j", "2", "--output-format", "json"]
    command += ["--cache-dir", str(tmp_path / "cache"), str(tmp_path / "src")]
    first = run_cli(*command)
    assert "2 worker processes" in stage(first.stderr, "parsed")
    assert not [f for f in json.loads(first.stdout) if f["filename"].endswith("train.py")]
    (tmp_path / "src" / "models" / "net.py").write_text(NET_WITH_TENSORFLOW)
    second = run_cli(*command)
    found = [f["code"] for f in json.loads(second.stdout) if f["filename"].endswith("train.py")]
    assert found == ["TFM205"], second.stderr


_MAIN_PID = os.getpid()
_CHECK_PENDING = runner._check_pending


def _dying_worker(pending, mode, verbose):  # type: ignore[no-untyped-def]
    """_check_pending, but a worker handed t03.py dies (an out-of-memory kill, say)."""
    if pending.path.endswith("t03.py") and os.getpid() != _MAIN_PID:
        os._exit(1)
    return _CHECK_PENDING(pending, mode, verbose)


@pytest.mark.parametrize("plain_files", [100, 300])  # first stage here; in the workers
def test_a_worker_dying_while_files_are_still_read_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain_files: int
) -> None:
    """Workers start while the pre-filter still reads; one dies before every file is handed
    over: the rest are checked in this process."""
    assert (100 + 11) < runner.FIRST_STAGE_IN_WORKERS <= (300 + 11)
    items = []
    for index in range(10):
        items.append(tmp_path / f"t{index:02d}.py")
        items[-1].write_text(BARE)
    for index in range(plain_files):
        items.append(tmp_path / f"z{index:03d}.py")
        items[-1].write_text("x = 1\n")
    items.append(tmp_path / "last.py")
    items[-1].write_text(BARE)
    prepare = runner.Run._prepare

    def slow(self, item, settings):  # type: ignore[no-untyped-def]
        time.sleep(0.005)  # a slow disk: the worker dies before the last file is read
        return prepare(self, item, settings)

    monkeypatch.setattr(runner, "_check_pending", _dying_worker)
    monkeypatch.setattr(runner.Run, "_prepare", slow)
    run = runner.Run([str(p) for p in items], Settings.default(ALL_RULES), "check", jobs=4)
    results = list(run)
    assert len(results) == len(items)
    assert sum(len(r.findings) for r in results) == 11
    # A batch's files, checked here, are counted as its worker would have: the first stage
    # sets the plain ones aside.
    assert (run.stats.parsed, run.stats.filtered_out) == (11, plain_files)


def _recording(log: Path):  # type: ignore[no-untyped-def]
    """_check_pending, each file's check written down, in whichever process it runs."""

    def check(pending, mode, verbose):  # type: ignore[no-untyped-def]
        with log.open("a") as checked:
            checked.write(pending.path + "\n")
        return _CHECK_PENDING(pending, mode, verbose)

    return check


@pytest.mark.parametrize("case", ["a few changed files", "unreadable files first"])
def test_no_file_is_handed_over_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The workers start once 8 files need parsing, and take every such file found so far:
    not a file whose first stage waits for its batch, nor one found after (checked twice,
    under --fix a file is fixed by one and found changed on disk by the other)."""
    src = tmp_path / "src"
    src.mkdir()
    plain = [src / f"p{index:03d}.py" for index in range(runner.FIRST_STAGE_IN_WORKERS + 12)]
    for path in plain:
        path.write_text("x = 1\n")
    items = [str(p) for p in plain]
    cache = None
    if case == "a few changed files":  # cached: only they go through the first stage
        cache = tmp_path / "cache"
        list(
            runner.Run(
                items, Settings.default(ALL_RULES), "check", jobs=2, cache=ResultCache(str(cache))
            )
        )
        for path in plain[:20]:
            path.write_text(BARE)
    else:
        for index in range(8):
            (src / f"gone{index}.py").symlink_to(src / f"nowhere{index}")
        bare = [src / f"a{index:02d}.py" for index in range(10)]
        for path in bare:
            path.write_text(BARE)
        items = [str(p) for p in bare] + sorted(str(p) for p in src.glob("gone*")) + items
    log = tmp_path / "checked.txt"
    monkeypatch.setattr(runner, "_check_pending", _recording(log))
    run = runner.Run(
        items,
        Settings.default(ALL_RULES),
        "check",
        jobs=2,
        cache=ResultCache(str(cache)) if cache else None,
    )
    results = list(run)
    checked = log.read_text().splitlines()
    assert sorted(set(checked)) == sorted(checked)
    expected = 20 if case == "a few changed files" else 10 + 8  # sessions; 8 unreadable
    assert sum(len(r.findings) for r in results) == expected


_PASSES_FIRST_STAGE = runner._passes_first_stage


def _dying_in_a_first_stage(pending, index):  # type: ignore[no-untyped-def]
    """_passes_first_stage, but a worker handed t00.py dies (its batch with it)."""
    if pending.path.endswith("t00.py") and os.getpid() != _MAIN_PID:
        os._exit(1)
    return _PASSES_FIRST_STAGE(pending, index)


@pytest.mark.parametrize("mode", ["check", "fix"])
def test_a_worker_dying_in_a_first_stage_batch_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A batch writes nothing: its files' first stage runs again here, and each file is
    counted and fixed as in a run where no worker died. (The sessions come last, in a batch
    of their own, the one that dies: no check of theirs can be under way in a worker that
    the pool ends, its fix written but its report lost.)"""
    bare = [tmp_path / f"t{index:02d}.py" for index in range(10)]
    plain = [tmp_path / f"z{index:03d}.py" for index in range(runner.FIRST_STAGE_IN_WORKERS)]
    for path in bare:
        path.write_text(BARE)
    for path in plain:
        path.write_text("x = 1\n")
    monkeypatch.setattr(runner, "_passes_first_stage", _dying_in_a_first_stage)
    items = [str(p) for p in [*plain, *bare]]
    run = runner.Run(items, Settings.default(ALL_RULES), mode, jobs=2)
    results = list(run)
    assert [r.filename for r in results] == items
    assert (run.stats.parsed, run.stats.filtered_out) == (10, len(plain))
    if mode == "fix":
        assert run.stats.fixed == 10 and all("allow_growth" in p.read_text() for p in bare)
    else:
        assert sum(len(r.findings) for r in results) == 10


def test_few_files_that_miss_the_cache_start_no_worker(tmp_path: Path) -> None:
    """Many files, and a cache that answers for all but a few: their first stage runs here,
    and no worker starts for files that need no parsing."""
    plain = [tmp_path / f"p{index:03d}.py" for index in range(runner.FIRST_STAGE_IN_WORKERS + 44)]
    for path in plain:
        path.write_text("x = 1\n")
    cache = str(tmp_path / "cache")
    items = [str(p) for p in plain]
    list(runner.Run(items, Settings.default(ALL_RULES), "check", jobs=2, cache=ResultCache(cache)))
    for path in plain[:40]:
        path.write_text("y = 2\n")
    run = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=2, cache=ResultCache(cache))
    assert not any(r.findings for r in run)
    assert run.stats.workers == 0
    assert (run.stats.from_cache, run.stats.filtered_out) == (len(plain) - 40, 40)


def test_the_bytes_of_a_file_ruled_out_are_not_kept(tmp_path: Path) -> None:
    """A file the workers' first stage rules out leaves its slot as a result, as one ruled out
    here does: a large tree's bytes are not held until the run ends."""
    make_tree(tmp_path, runner.FIRST_STAGE_IN_WORKERS + 30)
    items = sorted(str(p) for p in tmp_path.rglob("*.py"))
    run = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=2)
    assert run.stats.workers == 2
    kept = [s.path for s in run._slots if isinstance(s, runner._Pending)]
    assert kept == [i for i in items if Path(i).read_text() != "x = 1\n"]
    assert len(list(run)) == len(items)


_FIRST_STAGE_IN_WORKER = runner._first_stage_in_worker


def _first_stage_once_every_file_is_read(pendings):  # type: ignore[no-untyped-def]
    """_first_stage_in_worker, held until the main process has read every file (it makes the
    file "every file read" beside the folder of the files)."""
    read = Path(pendings[0].path).parent.parent / "every file read"
    while not read.exists():
        time.sleep(0.01)
    return _FIRST_STAGE_IN_WORKER(pendings)


def test_once_every_file_is_read_the_biggest_go_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While files are still read, the workers get batches in the order found, and no more
    than BATCHES_PER_WORKER each; once every file is read, the rest go biggest first, each
    batch ending at the file that brings it to FIRST_STAGE_BATCH_BYTES. A large module found
    last no longer ends the run alone in one worker while the other waits."""
    src = tmp_path / "src"
    src.mkdir()
    small = [src / f"a{index:03d}.py" for index in range(runner.FIRST_STAGE_IN_WORKERS + 64)]
    for path in small:
        path.write_text("x = 1\n")
    large = [src / f"z{index}.py" for index in range(4)]
    for index, path in enumerate(large):  # 100 KB each, the last found the biggest
        path.write_text(BARE + "# padding\n" * (10_000 + index))
    items = [str(p) for p in [*small, *large]]
    handed: list[tuple[list[str], int]] = []  # each batch, and how many were out before it
    hand_over_batch, last_batches = runner.Run._hand_over_batch, runner.Run._last_batches

    def recording(self: runner.Run, batch: list[int], total: int) -> None:
        slots = [self._slots[i] for i in batch]
        handed.append(
            ([s.path for s in slots if isinstance(s, runner._Pending)], len(self._batches))
        )
        hand_over_batch(self, batch, total)

    def every_file_read(self: runner.Run, total: int) -> None:
        (tmp_path / "every file read").touch()
        last_batches(self, total)

    monkeypatch.setattr(runner, "_first_stage_in_worker", _first_stage_once_every_file_is_read)
    monkeypatch.setattr(runner.Run, "_hand_over_batch", recording)
    monkeypatch.setattr(runner.Run, "_last_batches", every_file_read)
    run = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=2)
    assert sum(len(r.findings) for r in run) == len(large)
    most = runner.BATCHES_PER_WORKER * run.stats.workers
    assert all(out < most for _, out in handed)
    batch = runner.FIRST_STAGE_BATCH
    assert [paths for paths, _ in handed[:most]] == [
        items[start : start + batch] for start in range(0, most * batch, batch)
    ]
    after = [paths for paths, _ in handed[most:]]
    assert after[0] == [str(large[3]), str(large[2]), str(large[1])]  # 300 KB > 256 KB
    assert after[1] == [str(large[0]), *items[most * batch : most * batch + batch - 1]]
    assert sorted(p for paths in after for p in paths) == sorted(items[most * batch :])


def test_a_batch_whole_by_its_bytes_goes_while_files_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While files are still read, a batch goes once it holds FIRST_STAGE_BATCH files or
    FIRST_STAGE_BATCH_BYTES: three large modules do not wait for 29 more files; two small
    ones do."""
    settings = Settings.default(ALL_RULES)
    run = runner.Run([], settings, "check", jobs=2)
    large = b"#" * (runner.FIRST_STAGE_BATCH_BYTES // 3 + 1)
    run._slots = [runner._Pending(f"m{i}.py", settings, large, None) for i in range(3)]
    run._slots += [runner._Pending(f"s{i}.py", settings, b"x = 1\n", None) for i in range(2)]
    handed: list[list[int]] = []
    monkeypatch.setattr(
        runner.Run, "_hand_over_batch", lambda _, batch, total: handed.append(batch)
    )
    run._unfiltered = [0, 1, 2]
    run._hand_over_waiting(5, whole_batches=True)
    assert handed == [[0, 1, 2]] and not run._unfiltered
    run._unfiltered = [3, 4]
    run._hand_over_waiting(5, whole_batches=True)
    assert handed == [[0, 1, 2]] and run._unfiltered == [3, 4]


def _first_stage_slow_in_one_batch(pendings):  # type: ignore[no-untyped-def]
    """_first_stage_in_worker, a second slower for the batch that holds slow.py."""
    if any(pending.path.endswith("slow.py") for pending in pendings):
        time.sleep(1.0)
    return _FIRST_STAGE_IN_WORKER(pendings)


def test_the_wait_for_the_workers_first_stage_is_timed_as_theirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--verbose: the seconds this process waits for the workers' first stage (while they also
    check the files it passed) count as the workers' ("parsed"), not as this process's
    pre-filter."""
    make_tree(tmp_path, runner.FIRST_STAGE_IN_WORKERS + 30)
    (tmp_path / "slow.py").write_text("x = 1\n")
    items = sorted(str(p) for p in tmp_path.rglob("*.py"))
    monkeypatch.setattr(runner, "_first_stage_in_worker", _first_stage_slow_in_one_batch)
    run = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=2)
    assert len(list(run)) == len(items)
    assert run.stats.workers == 2
    assert run.stats.engine_s >= 1.0 > run.stats.prepare_s


@pytest.mark.parametrize("jobs", [1, 2])  # the first stage here; in the workers
def test_the_check_asks_no_word_the_first_stage_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """The second stage, where the file is checked, asks about the words the first stage
    searched (in a worker's batch, or here before other files): a file handed over carries
    what it found, and the check takes that as what the bytes hold."""
    make_tree(tmp_path, runner.FIRST_STAGE_IN_WORKERS + 30)
    items = sorted(str(p) for p in tmp_path.rglob("*.py"))
    run = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=jobs)
    handed_over = [s for s in run._slots if isinstance(s, runner._Pending)]
    assert handed_over and all(s.raw is not None and s.words for s in handed_over)
    for slot in handed_over:
        assert slot.words is not None and slot.words[b"Session"] is True
        assert all((word in slot.raw) == found for word, found in slot.words.items())
    assert sum(len(r.findings) for r in run) == len(handed_over)
    # Here, where the files are checked with one process: each check starts from those words.
    seeded: list[bytes] = []
    searched_already = runner.searched_already

    def recording(raw: bytes, found: dict[bytes, bool]) -> None:
        seeded.append(raw)
        searched_already(raw, found)

    monkeypatch.setattr(runner, "searched_already", recording)
    again = runner.Run(items, Settings.default(ALL_RULES), "check", jobs=1)
    assert sum(len(r.findings) for r in again) == len(handed_over)
    assert sorted(seeded) == sorted(s.raw for s in handed_over if s.raw is not None)


def _fixing_then_dying_worker(pending, mode, verbose):  # type: ignore[no-untyped-def]
    """_check_pending, but a worker handed t05.py dies right after it wrote the fix."""
    result = _CHECK_PENDING(pending, mode, verbose)
    if pending.path.endswith("t05.py") and os.getpid() != _MAIN_PID:
        os._exit(1)
    return result


def test_a_file_checked_again_after_its_worker_died_is_not_cached_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its worker wrote the fix, then died: checked again here from the disk, the file is
    clean, but the bytes the run had read were not. Put back as they were (`git checkout`),
    they must be reported, not served from the cache as clean."""
    items = [tmp_path / f"t{index:02d}.py" for index in range(12)]
    for path in items:
        path.write_text(BARE)
    cache = tmp_path / "cache"
    monkeypatch.setattr(runner, "_check_pending", _fixing_then_dying_worker)
    settings = Settings.default(ALL_RULES)
    fixing = runner.Run(
        [str(p) for p in items], settings, "fix", jobs=2, cache=ResultCache(str(cache))
    )
    assert len(list(fixing)) == len(items)
    assert "allow_growth" in items[5].read_text()
    items[5].write_text(BARE)
    again = runner.Run([str(items[5])], settings, "check", jobs=1, cache=ResultCache(str(cache)))
    [result] = list(again)
    assert [f.code for f in result.findings] == ["TFM101"]
    assert again.stats.from_cache == 0


def _deaf_worker_start(parent: int, config_root: str | None = None) -> None:
    """A worker that misses SIGTERM, as one still starting under an inherited handler may."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _dying_or_stuck_worker(pending, mode, verbose):  # type: ignore[no-untyped-def]
    """_dying_worker, and a worker handed t00.py stays in its task (it never ends by itself)."""
    if pending.path.endswith("t00.py") and os.getpid() != _MAIN_PID:
        time.sleep(3600)
    if pending.path.endswith("t00.py"):
        time.sleep(0.5)  # in this process: let the other worker reach t03.py and die first
    return _dying_worker(pending, mode, verbose)


def test_a_worker_that_misses_the_pools_sigterm_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker dies; the pool ends the others with SIGTERM and waits for them. One that
    misses it would keep the run from ever ending: after POOL_END_S it is killed, and the
    files are checked in this process."""
    items = []
    for index in range(12):
        items.append(tmp_path / f"t{index:02d}.py")
        items[-1].write_text(BARE)
    monkeypatch.setattr(runner, "_start_worker", _deaf_worker_start)
    monkeypatch.setattr(runner, "_check_pending", _dying_or_stuck_worker)
    monkeypatch.setattr(runner, "POOL_END_S", 1.0)
    started = time.monotonic()
    results = list(
        runner.Run([str(p) for p in items], Settings.default(ALL_RULES), "check", jobs=2)
    )
    assert len(results) == len(items)
    assert sum(len(r.findings) for r in results) == len(items)
    assert time.monotonic() - started < 120  # a guard against a hang, not a speed check
