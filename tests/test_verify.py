"""`tfmemlint verify` for real: real child processes, the real TensorFlow CPU build, real process
trees that crash, hang, fork and ignore SIGTERM."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import AFTER, BEFORE, FIXTURE_NAMES, run_cli

RESULT_FIELDS = {
    "script",
    "exit_code",
    "duration_s",
    "memory_settings",
    "memory_aware",
    "gpu_peak_bytes",
    "gpu_measurement",
    "tf_peak_bytes",
    "verdict",
    "reason",
}
SETTING_FIELDS = {
    "api",
    "allow_growth",
    "per_process_gpu_memory_fraction",
    "memory_limit_mb",
    "source",
}


def verify(*args: str, cwd: Path | None = None):
    result = run_cli("verify", "--output-format", "json", *args, cwd=cwd)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


@pytest.fixture(scope="module")
def fixtures_verified():
    pytest.importorskip("tensorflow")
    return verify("--baseline", str(BEFORE), str(AFTER))


def test_every_fixed_fixture_passes_with_its_settings_recorded(fixtures_verified) -> None:
    result, document = fixtures_verified
    assert result.returncode == 0, result.stderr
    assert document["gpu"] is None  # this machine has no GPU
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    assert sorted(by_name) == FIXTURE_NAMES
    for name, outcome in by_name.items():
        assert outcome["verdict"] == "pass", (name, outcome)
        assert outcome["memory_aware"] is True
        assert outcome["exit_code"] == 0
        assert outcome["gpu_peak_bytes"] is None and outcome["gpu_measurement"] is None
        assert "no NVIDIA GPU visible" in outcome["reason"]
    # What the probe saw inside the processes, not what the source says.
    assert by_name["bare_session.py"]["memory_settings"] == [
        {
            "api": "Session",
            "allow_growth": True,
            "per_process_gpu_memory_fraction": None,
            "memory_limit_mb": None,
            "source": "ConfigProto",
        }
    ]
    interactive = by_name["correct_interactive_bare.py"]["memory_settings"]
    assert [s["source"] for s in interactive] == ["InteractiveSession default"] * 2
    assert all(s["allow_growth"] for s in interactive)
    assert by_name["correct_fraction.py"]["memory_settings"][0][
        "per_process_gpu_memory_fraction"
    ] == pytest.approx(0.4)
    assert by_name["correct_virtual_devices.py"]["memory_settings"][0]["memory_limit_mb"] == 1024
    assert by_name["not_sessions.py"]["memory_settings"] == []


def test_every_changed_before_script_is_not_memory_aware(fixtures_verified) -> None:
    _, document = fixtures_verified
    for outcome in document["results"]:
        name = Path(outcome["script"]).name
        baseline = outcome["baseline"]
        assert Path(baseline["script"]).name == name
        assert set(baseline) == RESULT_FIELDS
        changed = (BEFORE / name).read_bytes() != (AFTER / name).read_bytes()
        assert baseline["memory_aware"] is not changed, name
        assert baseline["verdict"] == ("fail" if changed else "pass"), name


def test_json_shape(fixtures_verified) -> None:
    _, document = fixtures_verified
    assert set(document) == {"gpu", "results"}
    for outcome in document["results"]:
        assert set(outcome) == RESULT_FIELDS | {"baseline"}
        assert isinstance(outcome["duration_s"], float)
        for setting in outcome["memory_settings"]:
            assert set(setting) == SETTING_FIELDS


def test_table_shows_before_and_after(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    name = "bare_session.py"
    result = run_cli("verify", "--baseline", str(BEFORE / name), str(AFTER / name))
    assert result.returncode == 0
    assert "before: settings" in result.stdout and "after: settings" in result.stdout
    assert "allow_growth (ConfigProto)" in result.stdout
    assert "no NVIDIA GPU visible" in result.stdout
    assert "verdicts: 1 pass, 0 fail, 0 error" in result.stdout


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_unfixed_script_fails_and_exits_1(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    script = _script(tmp_path, "bare.py", (BEFORE / "bare_session.py").read_text())
    result, document = verify(str(script))
    assert result.returncode == 1
    [outcome] = document["results"]
    assert outcome["verdict"] == "fail"
    assert outcome["memory_aware"] is False
    assert outcome["reason"] == "first session preallocates"


def test_script_without_tensorflow_passes_with_empty_settings(tmp_path: Path) -> None:
    script = _script(
        tmp_path, "plain.py", "import sys\nassert sys.argv[1:] == ['a', '--b'], sys.argv\n"
    )
    result, document = verify(str(script), "--", "a", "--b")
    assert result.returncode == 0, document
    [outcome] = document["results"]
    assert outcome["memory_settings"] == [] and outcome["verdict"] == "pass"
    assert outcome["reason"].startswith("does not import TensorFlow")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_crash_timeout_and_escaped_children_are_all_ended(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    crash = _script(tmp_path, "a_crash.py", "raise SystemExit(3)\n")
    hang = _script(
        tmp_path,
        "b_hang.py",
        f"""\
        import os, signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ignores the polite request
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        escaped = subprocess.Popen(
            [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"],
            start_new_session=True,
        )
        for pid in (os.getpid(), child.pid, escaped.pid):
            open(os.path.join({str(pids)!r}, str(pid)), "w").close()
        time.sleep(300)
        """,
    )
    fine = _script(tmp_path, "c_fine.py", "print('still runs')\n")
    started = time.monotonic()
    result, document = verify("--timeout", "3", str(tmp_path))
    assert time.monotonic() - started < 60
    assert result.returncode == 1
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    assert by_name[crash.name]["verdict"] == "error"
    assert by_name[crash.name]["exit_code"] == 3
    assert by_name[hang.name]["verdict"] == "error"
    assert by_name[hang.name]["reason"] == "timed out"
    assert by_name[hang.name]["exit_code"] is None
    assert by_name[fine.name]["verdict"] == "pass"
    recorded = [int(p.name) for p in pids.iterdir()]
    assert len(recorded) == 3
    time.sleep(0.5)
    assert not [pid for pid in recorded if _alive(pid)]


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    script = _script(tmp_path, "plain.py", "pass\n")
    assert run_cli("verify", "--timeout", "0", str(script)).returncode == 2
    assert run_cli("verify", "--python", str(tmp_path / "nope"), str(script)).returncode == 2
    assert run_cli("verify", "--output-format", "xml", str(script)).returncode == 2


def test_require_gpu_without_a_gpu_fails(tmp_path: Path) -> None:
    script = _script(tmp_path, "plain.py", "pass\n")
    result = run_cli(
        "verify",
        "--require-gpu",
        str(script),
    )
    assert result.returncode == 1
    assert "no NVIDIA GPU visible" in result.stderr


def test_python_option_chooses_the_interpreter(tmp_path: Path) -> None:
    script = _script(
        tmp_path, "which.py", f"import sys\nassert sys.executable == {sys.executable!r}\n"
    )
    result, document = verify("--python", sys.executable, str(script))
    assert result.returncode == 0, document


def test_missing_path_is_reported_and_others_still_run(tmp_path: Path) -> None:
    script = _script(tmp_path, "plain.py", "pass\n")
    result, document = verify(str(tmp_path / "missing.py"), str(script))
    assert result.returncode == 1
    assert "no such file or directory" in result.stderr
    assert [r["verdict"] for r in document["results"]] == ["pass"]


def test_default_paths_are_the_bundled_fixtures() -> None:
    from tfmemlint.verify.cli import _default_paths

    [path] = _default_paths()
    assert Path(path).resolve() == AFTER.resolve()
    assert os.path.isdir(path)
