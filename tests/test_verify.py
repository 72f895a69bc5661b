"""`tfmemlint verify` for real: real child processes, the real TensorFlow CPU build, real process
trees that crash, hang, fork and ignore SIGTERM."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import AFTER, BEFORE, built_once, fixture_scripts, run_cli
from tfmemlint.verify.simulated_gpus import (
    PHYSICAL_AFTER_INIT,
    VIRTUAL_AFTER_INIT,
    VISIBLE_AFTER_INIT,
)

RESULT_FIELDS = {
    "script",
    "exit_code",
    "duration_s",
    "memory_settings",
    "memory_aware",
    "gpu_peak_bytes",
    "gpu_measurement",
    "tf_peak_bytes",
    "tf_visible_gpus",
    "jax_backend",
    "jax_environment",
    "keras_backend",
    "simulated_gpus",
    "simulated_devices",
    "verdict",
    "reason",
}
JAX_VARIABLES = {
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
}
SETTING_FIELDS = {
    "api",
    "allow_growth",
    "per_process_gpu_memory_fraction",
    "memory_limit_mb",
    "source",
}


def verify(*args: str, cwd: Path | None = None, timeout: float = 540):
    result = run_cli("verify", "--output-format", "json", *args, cwd=cwd, timeout=timeout)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


# Every fixed fixture, and the unfixed counterpart of each that fixing changed, each a process
# that imports TensorFlow: the suite's one run of them, shared by every worker. The
# hang guard leaves room for a busy machine, and so does pytest-timeout for the tests that set
# the run up (fixture included).
FIXTURES_RUN_S = 1500
fixture_run_timeout = pytest.mark.timeout(FIXTURES_RUN_S + 120)


def on_the_fixtures_run(test):
    """A test of the one run of the fixtures: slow, with room for the run."""
    return pytest.mark.slow(fixture_run_timeout(test))


@dataclass
class FixturesRun:
    result: subprocess.CompletedProcess
    document: dict
    baseline: Path  # the unfixed scripts that ran: those that fixing changed


@pytest.fixture(scope="module")
def fixtures_verified(tmp_path_factory: pytest.TempPathFactory) -> FixturesRun:
    """`verify --baseline` over every fixed script, once for all workers. An unfixed script that
    fixing left byte for byte as it was (with its packages) is the same program as its fixed one,
    so it runs once."""
    pytest.importorskip("tensorflow")

    def run(folder: Path) -> None:
        baseline = folder / "before"
        shutil.copytree(BEFORE, baseline)
        for script in fixture_scripts(baseline):
            if not _changed(script.relative_to(baseline).as_posix()):
                script.unlink()
        result, _ = verify("--baseline", str(baseline), str(AFTER), timeout=FIXTURES_RUN_S)
        kept = {"returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}
        (folder / "run.json").write_text(json.dumps(kept))

    folder = built_once(tmp_path_factory, "fixtures-verified", run)
    kept = json.loads((folder / "run.json").read_text())
    result = subprocess.CompletedProcess(
        ["verify"], kept["returncode"], kept["stdout"], kept["stderr"]
    )
    document = json.loads(result.stdout) if result.stdout.strip() else None
    return FixturesRun(result, document, folder / "before")


# The TF2 scripts: without a GPU, verify runs them on simulated GPUs (2 by default), and they
# are judged by each GPU's settings as the runtime started.
TF2_SIMULATED = {
    "tf2_absl_app.py",
    "tf2_click_command.py",
    "tf2_configured_after_first_op.py",
    "tf2_fire_cli.py",
    "tf2_growth_every_index.py",
    "tf2_growth_in_main.py",
    "tf2_main_guard.py",
    "tf2_module_level_fit.py",
    "tf2_typer_app.py",
    "tf2_tyro_cli.py",
    "tf2_search_objective.py",
    "keras3_default_backend.py",
    "keras3_explicit_tensorflow.py",
    "project_tf2_configured/train_helper.py",
    "project_tf2_configured/train_imported.py",
    "project_tf2_scripts/run_train.py",
    "tf2_fire_class.py",
    "tf2_gradient_tape_loop.py",
    "tf2_guardless_script.py",
    "tf2_flag_default_off.py",
    "served_streamlit_app.py",
}
# Served programs, and a program that starts TensorFlow in a project module: the variable set
# at the entry's top holds in each worker, wherever the program starts the runtime.
FIXED_BY_THE_VARIABLE = {
    "project_tf2_helper_start/train.py",
    "served_flask_app.py",
    "served_fastapi_app.py",
    "served_celery_task.py",
    "tf2_function_local_import.py",
}
# TensorFlow passes no memory growth to the runtime once any device, a CPU included, has a
# logical configuration (context.py, `_compute_device_options`;
# test_simulation_agrees_with_tensorflow shows it), so virtual_cpus.py is fixed with
# TF_FORCE_GPU_ALLOW_GROWTH, which the allocator reads whatever the options say.
DROPPED_GROWTH = "TensorFlow drops growth once any device has a logical configuration"
# The misuse fixtures: the error TensorFlow raises on a machine with more than one GPU.
MISUSE = {
    "tf2_growth_in_main.py": "ValueError: Memory growth cannot differ between GPU devices",
    "tf2_configured_after_first_op.py": "RuntimeError: Physical devices cannot be modified after being initialized",
}
VIRTUAL_CPUS = {
    "api": "set_logical_device_configuration",
    "allow_growth": None,
    "per_process_gpu_memory_fraction": None,
    "memory_limit_mb": None,
    "source": "set_logical_device_configuration",
}
# JAX's allocator is judged only on a GPU: on a CPU the probe records what JAX read, before and
# after the fix.
JAX_UNOBSERVABLE_WITHOUT_GPU = {
    "jax_preallocate_value.py": ("FALSE", "false"),
    "keras3_on_jax.py": (None, "false"),
    "project_jax_tf1_helper/train.py": (None, "false"),
}
UNOBSERVED = "eager runtime started with default options: it preallocates"
SIMULATED_PASS = "configured before use, on 2 simulated GPUs: GPU:0 growth, GPU:1 growth"


@on_the_fixtures_run
def test_every_fixed_fixture_runs_and_passes_with_its_settings_recorded(
    fixtures_verified: FixturesRun,
) -> None:
    result, document = fixtures_verified.result, fixtures_verified.document
    assert document["gpu"] is None  # this machine has no GPU
    assert result.returncode == 0, result.stderr
    by_name = {Path(r["script"]).relative_to(AFTER).as_posix(): r for r in document["results"]}
    # Every fixed script ran under TensorFlow, to its end.
    assert sorted(by_name) == [p.relative_to(AFTER).as_posix() for p in fixture_scripts(AFTER)]
    for name, outcome in by_name.items():
        assert outcome["exit_code"] == 0, (name, outcome)
        assert outcome["gpu_peak_bytes"] is None and outcome["gpu_measurement"] is None
        assert outcome["simulated_gpus"] == 2, name
        if name == "virtual_cpus.py":  # see DROPPED_GROWTH
            assert outcome["verdict"] == "pass", outcome
            assert outcome["reason"].startswith("TF_FORCE_GPU_ALLOW_GROWTH=true"), outcome
            # the variable, as the runtime read it, and the CPU's logical configuration
            assert [s["source"] for s in outcome["memory_settings"]] == [
                "TF_FORCE_GPU_ALLOW_GROWTH",
                "set_logical_device_configuration",
            ]
            assert outcome["memory_settings"][1] == VIRTUAL_CPUS
            assert [d["memory_growth"] for d in outcome["simulated_devices"]] == [None, None]
            assert [d["growth_applied"] for d in outcome["simulated_devices"]] == [True, True]
            continue
        assert outcome["verdict"] == "pass", (name, outcome)
        if name in TF2_SIMULATED:  # each simulated GPU's settings as the runtime started
            devices = outcome["simulated_devices"]
            assert [d["name"] for d in devices] == [f"/physical_device:GPU:{i}" for i in (0, 1)]
            assert all(
                d["visible"] and (d["growth_applied"] or d["memory_limit_mb"]) for d in devices
            )
            assert "simulated GPUs" in outcome["reason"], (name, outcome)
        assert outcome["memory_aware"] is True
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
    # A server holds the GPU with its own config; the session on its target runs inside it.
    server, session = by_name["local_server.py"]["memory_settings"]
    assert (server["api"], server["source"], server["allow_growth"]) == (
        "train.Server",
        "train.Server",
        True,
    )
    assert session["api"] == "Session" and session["allow_growth"] is False
    assert by_name["local_server.py"]["reason"].startswith("first server limits GPU memory")
    assert by_name["project_compat/train_relative.py"]["memory_settings"][0]["allow_growth"]
    for name in FIXED_BY_THE_VARIABLE:  # see FIXED_BY_THE_VARIABLE
        assert by_name[name]["reason"].startswith("TF_FORCE_GPU_ALLOW_GROWTH=true"), name


def _changed(script: str) -> bool:
    """Whether fixing changed what a `before` script runs: itself, or for a script of a
    multi-module fixture, a module of its packages."""
    if (BEFORE / script).read_bytes() != (AFTER / script).read_bytes():
        return True
    if "/" not in script:
        return False
    folder = script.split("/")[0]
    return any(
        (AFTER / p.relative_to(BEFORE)).read_bytes() != p.read_bytes()
        for p in (BEFORE / folder).rglob("*.py")
        if (p.parent / "__init__.py").is_file()
    )


@on_the_fixtures_run
def test_every_changed_before_script_is_not_memory_aware(fixtures_verified: FixturesRun) -> None:
    document = fixtures_verified.document
    for outcome in document["results"]:
        name = Path(outcome["script"]).relative_to(AFTER).as_posix()
        baseline = outcome["baseline"]
        if not _changed(name):  # the same program as `outcome`, which passed
            assert baseline is None, name
            assert outcome["memory_aware"] is True and outcome["verdict"] == "pass", name
            continue
        assert Path(baseline["script"]).relative_to(fixtures_verified.baseline).as_posix() == name
        assert set(baseline) == RESULT_FIELDS
        if name in MISUSE:  # the error TensorFlow raises, marked as simulated
            assert baseline["verdict"] == "fail", baseline
            assert baseline["exit_code"] == 1
            assert MISUSE[name] in baseline["reason"] and "simulated" in baseline["reason"]
            assert outcome["verdict"] == "pass" and outcome["reason"].startswith(SIMULATED_PASS)
            continue
        if name in TF2_SIMULATED and _changed(name):
            assert baseline["verdict"] == "fail", baseline
            assert baseline["reason"].startswith("simulated GPU:0, GPU:1: neither"), baseline
            assert baseline["simulated_devices"] is not None
            continue
        if name in JAX_UNOBSERVABLE_WITHOUT_GPU:
            before = baseline["jax_environment"]["XLA_PYTHON_CLIENT_PREALLOCATE"]
            after = outcome["jax_environment"]["XLA_PYTHON_CLIENT_PREALLOCATE"]
            assert (before, after) == JAX_UNOBSERVABLE_WITHOUT_GPU[name], name
            continue
        changed = _changed(name)
        assert baseline["memory_aware"] is not changed, name
        assert baseline["verdict"] == ("fail" if changed else "pass"), name


@on_the_fixtures_run
def test_json_shape(fixtures_verified: FixturesRun) -> None:
    document = fixtures_verified.document
    assert set(document) == {"gpu", "jobs", "results"}
    assert document["jobs"] == (os.cpu_count() or 1)
    for outcome in document["results"]:
        assert set(outcome) == RESULT_FIELDS | {"baseline"}
        assert isinstance(outcome["duration_s"], float)
        for setting in outcome["memory_settings"]:
            assert set(setting) == SETTING_FIELDS
        assert set(outcome["jax_environment"]) == JAX_VARIABLES


@pytest.mark.slow
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


@pytest.mark.slow
def test_unfixed_script_fails_and_exits_1(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    script = _script(tmp_path, "bare.py", (BEFORE / "bare_session.py").read_text())
    result, document = verify(str(script))
    assert result.returncode == 1
    [outcome] = document["results"]
    assert outcome["verdict"] == "fail"
    assert outcome["memory_aware"] is False
    # without a config, TF2 hands it the eager context's options: on the 2 simulated GPUs, none
    assert outcome["reason"].startswith("first session preallocates, with the eager context's")


def test_script_without_tensorflow_passes_with_empty_settings(tmp_path: Path) -> None:
    script = _script(
        tmp_path, "plain.py", "import sys\nassert sys.argv[1:] == ['a', '--b'], sys.argv\n"
    )
    result, document = verify(str(script), "--", "a", "--b")
    assert result.returncode == 0, document
    [outcome] = document["results"]
    assert outcome["memory_settings"] == [] and outcome["verdict"] == "pass"
    assert outcome["reason"].startswith("does not import TensorFlow")


def test_a_launchers_environment_is_the_scripts(tmp_path: Path) -> None:
    """`--launcher`: the script runs with what the launch file sets, as in its image or job."""
    check = (
        "import os, sys\n"
        "assert os.environ.get('TF_FORCE_GPU_ALLOW_GROWTH') == 'true', os.environ\n"
        "assert os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE') == 'false', os.environ\n"
    )
    script = _script(tmp_path, "job.py", check)
    image = tmp_path / "Dockerfile"
    image.write_text(
        "FROM python:3.12\nENV TF_FORCE_GPU_ALLOW_GROWTH=true XLA_PYTHON_CLIENT_PREALLOCATE=false\n"
    )
    job = tmp_path / "job.sbatch"
    job.write_text(
        "#!/bin/bash\nexport TF_FORCE_GPU_ALLOW_GROWTH=true\n"
        "#SBATCH --export=ALL,XLA_PYTHON_CLIENT_PREALLOCATE=false\nsrun python job.py\n"
    )
    for launcher in (image, job):
        result, document = verify("--launcher", str(launcher), str(script))
        assert result.returncode == 0, (launcher, document)
    assert verify(str(script))[0].returncode == 1  # without it, the variables are not there
    two = tmp_path / "compose.yaml"
    two.write_text("services:\n  a:\n    image: x\n  b:\n    image: y\n")
    refused = run_cli("verify", "--launcher", str(two), str(script))
    assert refused.returncode == 2 and "it starts 2 containers, not one" in refused.stderr


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


def test_a_script_that_fails_says_why_in_its_exceptions_words(tmp_path: Path) -> None:
    """The reason ends with the line that names what ended the script, as Python prints it."""
    absent = "tfmemlint_no_such_package"
    cases = {
        "missing.py": (
            f"import {absent}.sub\n",
            f"ModuleNotFoundError: No module named '{absent}'",
        ),
        "raises.py": ("raise ValueError('bad shape\\nsecond line')\n", "ValueError: bad shape"),
        "message.py": (
            "import sys\nsys.exit('no config at ./train.yaml')\n",
            "no config at ./train.yaml",
        ),
        "syntax.py": ("compile('x = (', 'in.py', 'exec')\n", "SyntaxError: '(' was never closed"),
    }
    for name, (body, _) in cases.items():
        _script(tmp_path, name, body)
    _script(tmp_path, "status.py", "raise SystemExit(4)\n")
    result, document = verify(str(tmp_path))
    assert result.returncode == 1
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    for name, (_, last_line) in cases.items():
        assert by_name[name]["verdict"] == "error", by_name[name]
        assert by_name[name]["reason"] == f"exited with status 1: {last_line}", name
    assert (by_name["status.py"]["verdict"], by_name["status.py"]["reason"]) == (
        "error",
        "exited with status 4",
    )


def test_a_bundled_fixture_whose_package_is_missing_is_skipped(tmp_path: Path) -> None:
    """With no PATHS (the bundled fixtures), a script that needs a package not installed here
    is skipped, and names it; the run passes on what did run. Named, the same script is an
    error: the user's own program cannot run."""
    bundled = tmp_path / "fixtures" / "after"
    bundled.mkdir(parents=True)
    _script(bundled, "a_needs.py", "import tfmemlint_no_such_cli\n")
    _script(bundled, "b_plain.py", "print('runs anywhere')\n")
    result, document = verify(cwd=tmp_path)
    assert result.returncode == 0, document
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    assert by_name["a_needs.py"]["verdict"] == "skipped"
    assert (
        by_name["a_needs.py"]["reason"]
        == "needs `tfmemlint_no_such_cli`, which is not installed here"
    )
    assert by_name["b_plain.py"]["verdict"] == "pass"
    table = run_cli("verify", cwd=tmp_path)
    assert table.returncode == 0, table.stdout + table.stderr
    assert "verdicts: 1 pass, 0 fail, 0 error, 1 skipped" in table.stdout
    named, document = verify(str(bundled / "a_needs.py"))
    assert named.returncode == 1
    assert document["results"][0]["verdict"] == "error"
    # A missing submodule of a package that is there is the script's own bug, not a skip.
    _script(bundled, "c_typo.py", "import tfmemlint.no_such_module\n")
    typo, document = verify(cwd=tmp_path)
    assert typo.returncode == 1
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    assert by_name["c_typo.py"]["verdict"] == "error"
    assert by_name["c_typo.py"]["reason"].endswith(
        "ModuleNotFoundError: No module named 'tfmemlint.no_such_module'"
    )


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


def test_missing_paths_and_empty_folders_are_usage_errors(tmp_path: Path) -> None:
    script = _script(tmp_path, "plain.py", "pass\n")
    result = run_cli("verify", str(tmp_path / "missing.py"), str(script))
    assert result.returncode == 2
    assert "no such file or directory" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("verify", str(empty))
    assert result.returncode == 2 and "no Python scripts found" in result.stderr


def test_a_script_without_a_counterpart_has_a_null_baseline(tmp_path: Path) -> None:
    (tmp_path / "fixed").mkdir()
    (tmp_path / "unfixed").mkdir()
    script = _script(tmp_path / "fixed", "only_here.py", "pass\n")
    result, document = verify("--baseline", str(tmp_path / "unfixed"), str(script.parent))
    assert result.returncode == 0
    assert document["results"][0]["baseline"] is None


def test_default_paths_are_the_bundled_fixtures() -> None:
    from tfmemlint.verify.cli import _default_paths

    [path] = _default_paths()
    assert Path(path).resolve() == AFTER.resolve()
    assert os.path.isdir(path)


def test_processes_that_escape_in_every_way_are_ended(tmp_path: Path) -> None:
    """A double-forked daemon, children left behind at exit, and children started from a
    SIGTERM handler: none outlives the run."""
    pids = tmp_path / "pids"
    pids.mkdir()
    sleeper = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
    record = f"open(os.path.join({str(pids)!r}, str(p.pid)), 'w').close()"
    _script(
        tmp_path,
        "daemon.py",
        f"""\
        import os, subprocess, sys
        if os.fork() == 0:
            os.setsid()
            p = subprocess.Popen([sys.executable, "-c", {sleeper!r}])
            {record}
            os._exit(0)
        os.wait()
        """,
    )
    _script(
        tmp_path,
        "leaves_children.py",
        f"""\
        import os, subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", {sleeper!r}], start_new_session=True)
        {record}
        """,
    )
    _script(
        tmp_path,
        "respawns.py",
        f"""\
        import os, signal, subprocess, sys, time
        def respawn(signum, frame):
            p = subprocess.Popen([sys.executable, "-c", {sleeper!r}], start_new_session=True)
            {record}
        signal.signal(signal.SIGTERM, respawn)
        time.sleep(300)
        """,
    )
    _result, document = verify("--timeout", "3", str(tmp_path))
    verdicts = {Path(r["script"]).name: r["verdict"] for r in document["results"]}
    assert verdicts == {"daemon.py": "pass", "leaves_children.py": "pass", "respawns.py": "error"}
    time.sleep(0.5)
    recorded = [int(p.name) for p in pids.iterdir()]
    assert len(recorded) >= 3
    assert not [pid for pid in recorded if _alive(pid)]


@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_an_interrupted_verify_ends_the_scripts_and_exits_130(tmp_path: Path, signum: str) -> None:
    import signal
    import subprocess

    marker = tmp_path / "child.pid"
    _script(
        tmp_path,
        "hang.py",
        f"import os, time\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\ntime.sleep(300)\n",
    )
    parent = subprocess.Popen(
        [sys.executable, "-m", "tfmemlint", "verify", str(tmp_path / "hang.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A suite started in the background (`cmd &`) inherits SIGINT ignored, and Python keeps
        # it ignored: give verify the Ctrl-C a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    child = int(marker.read_text())
    parent.send_signal(getattr(signal, signum))  # SIGINT is what Ctrl-C sends
    _, err = parent.communicate(timeout=60)
    assert parent.returncode == 130, err
    assert "interrupted" in err
    time.sleep(0.3)
    assert not _alive(child)


def test_the_probe_keeps_python_semantics(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "sibling.py").write_text("VALUE = 7\n")
    (real / "main.py").write_text(
        "import sys, threading\nfrom sibling import VALUE\n"
        "assert __name__ == '__main__' and VALUE == 7\n"
        "assert sys.argv[1:] == ['x'], sys.argv\n"
    )
    links = tmp_path / "links"
    links.mkdir()
    (links / "main.py").symlink_to(real / "main.py")
    result, document = verify(str(links / "main.py"), "--", "x")
    assert result.returncode == 0, document["results"][0]


@pytest.mark.slow
def test_settings_the_probe_must_not_miss(tmp_path: Path) -> None:
    """One real TensorFlow run per case, all in one verify call."""
    pytest.importorskip("tensorflow")
    v1 = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"
    growth = "tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"
    cases = {
        "thread_session.py": (
            "import threading, time\n"
            "def later():\n    time.sleep(0.5)\n    import tensorflow.compat.v1 as tf\n"
            "    tf.disable_v2_behavior()\n    tf.Session()\n"
            "threading.Thread(target=later).start()\n",
            "fail",
        ),
        "os_exit.py": (v1 + f"s = tf.Session(config={growth})\nimport os\nos._exit(0)\n", "pass"),
        "subclass.py": (v1 + "class MySession(tf.Session):\n    pass\nMySession()\n", "fail"),
        "hidden.py": (
            'import tensorflow as tf\ntf.config.set_visible_devices([], "GPU")\n'
            "print(tf.constant(1.0) + 1)\n",
            "pass",
        ),
        "env_too_late.py": (
            "import os\nimport tensorflow as tf\nprint(tf.constant(1.0) + 1)\n"
            'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"\n',
            "fail",
        ),
        "eager_then_session.py": (
            "import tensorflow as tf\nprint(tf.constant(1.0) + 1)\n"
            f"sess = tf.compat.v1.Session(config={growth.replace('tf.', 'tf.compat.v1.')})\n",
            "fail",
        ),
        "forced_env.py": (
            'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"\n' + v1 + "tf.Session()\n",
            "pass",
        ),
    }
    for name, (body, _) in cases.items():
        (tmp_path / name).write_text(body)
    _result, document = verify(str(tmp_path))
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    for name, (_, expected) in cases.items():
        assert by_name[name]["verdict"] == expected, (name, by_name[name])
    assert by_name["subclass.py"]["memory_settings"][0]["api"] == "Session"
    assert "took the GPU before the first session" in by_name["eager_then_session.py"]["reason"]
    forced = by_name["forced_env.py"]["memory_settings"]
    assert {
        "api": "environment",
        "allow_growth": True,
        "per_process_gpu_memory_fraction": None,
        "memory_limit_mb": None,
        "source": "TF_FORCE_GPU_ALLOW_GROWTH",
    } in forced


@pytest.mark.slow
def test_what_the_guest_and_jax_fixes_set_is_read_from_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One real run per case, all in one verify call: the GPUs left visible to TensorFlow, JAX's
    variables as it started and its backend, Keras's backend; and the probe starts nothing the
    script did not (each `atexit` check runs after the probe's last reading)."""
    pytest.importorskip("tensorflow")
    pytest.importorskip("jax")
    pytest.importorskip("keras")
    for name in (*JAX_VARIABLES, "KERAS_BACKEND", "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)  # the scripts choose; the shell must not
    checks = tmp_path / "checks"
    checks.mkdir()

    def at_exit(name: str, expression: str) -> str:
        path = str(checks / name)
        return (
            "import atexit, json, sys\n"
            f"atexit.register(lambda: open({path!r}, 'w').write(json.dumps({expression})))\n"
        )

    tf_runtime = "sys.modules['tensorflow.python.eager.context'].context()._context_handle is None"
    jax_started = "sys.modules['jax._src.xla_bridge'].backends_are_initialized()"
    preallocate = 'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n'
    cases = {
        "tf_hidden.py": 'import tensorflow as tf\ntf.config.set_visible_devices([], "GPU")\n'
        "print(tf.constant(1.0) + 1)\n",
        # Without a GPU TensorFlow lets a late call through; with one it would raise.
        "tf_hidden_late.py": "import tensorflow as tf\nprint(tf.constant(1.0) + 1)\n"
        'tf.config.set_visible_devices([], "GPU")\n',
        # TensorFlow 2.21 imports JAX (tensorflow/lite/python/util.py) and Keras where installed.
        "tf_imported_only.py": at_exit("tf_imported_only", f"[{tf_runtime}, {jax_started}]")
        + "import tensorflow as tf\n",
        "plain.py": at_exit(
            "plain", "[m for m in ('jax', 'keras', 'tensorflow') if m in sys.modules]"
        )
        + "print('no framework')\n",
        "jax_off.py": "import os\n" + preallocate + "import jax.numpy as jnp\n"
        "print(jnp.ones(3).sum())\n"
        # After the start: JAX never reads it, and the report must not show it.
        'os.environ["XLA_CLIENT_MEM_FRACTION"] = ".5"\n',
        "jax_os_exit.py": "import os\n" + preallocate + "import jax.numpy as jnp\n"
        "print(jnp.ones(3).sum())\nos._exit(0)\n",
        "jax_imported_only.py": at_exit("jax_imported_only", jax_started)
        + "import os\nimport jax\n"
        'os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "platform"\n',
        "keras_on_jax.py": 'import os\nos.environ["KERAS_BACKEND"] = "jax"\nimport keras\n'
        "print(keras.ops.sum(keras.ops.ones(3)))\n",
        "keras_on_tf.py": 'import os\nos.environ["KERAS_BACKEND"] = "tensorflow"\nimport keras\n',
    }
    for name, body in cases.items():
        (tmp_path / name).write_text(body)
    # Without simulated GPUs: what the process shows on a machine with none (the simulated ones
    # are test_simulated_gpus_*'s).
    _result, document = verify("--simulate-gpus", "0", str(tmp_path))
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    assert sorted(by_name) == sorted(cases)
    assert {r["simulated_gpus"] for r in document["results"]} == {None}
    for name, outcome in by_name.items():
        assert outcome["exit_code"] == 0, (name, outcome)
        assert set(outcome["jax_environment"]) == JAX_VARIABLES, name

    hidden = by_name["tf_hidden.py"]
    assert hidden["tf_visible_gpus"] == []
    assert (hidden["verdict"], hidden["jax_backend"]) == ("pass", None)
    assert hidden["reason"].startswith("TF sees no GPU;"), hidden
    late = by_name["tf_hidden_late.py"]
    assert late["tf_visible_gpus"] == []
    assert (late["verdict"], late["reason"]) == ("fail", UNOBSERVED)

    only = by_name["tf_imported_only.py"]
    assert only["tf_visible_gpus"] == [] and only["jax_backend"] is None
    assert only["reason"].startswith("starts no TensorFlow runtime;")
    # Reading the visible GPUs started no runtime, and JAX's backends stayed unstarted.
    assert json.loads((checks / "tf_imported_only").read_text()) == [True, False]
    plain = by_name["plain.py"]
    assert [plain[k] for k in ("tf_visible_gpus", "jax_backend", "keras_backend")] == [None] * 3
    assert json.loads((checks / "plain").read_text()) == []  # the probe imported none of them

    off = by_name["jax_off.py"]
    assert off["jax_environment"] == {
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": None,
        "XLA_CLIENT_MEM_FRACTION": None,
        "XLA_PYTHON_CLIENT_ALLOCATOR": None,
    }
    assert (off["jax_backend"], off["tf_visible_gpus"], off["verdict"]) == ("cpu", None, "pass")
    assert off["reason"].startswith(
        "does not import TensorFlow, JAX runs on cpu: no GPU memory to judge;"
    )
    gone = by_name["jax_os_exit.py"]
    assert gone["jax_backend"] == "cpu"
    assert gone["jax_environment"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"

    never = by_name["jax_imported_only.py"]
    assert never["jax_backend"] is None
    assert never["jax_environment"]["XLA_PYTHON_CLIENT_ALLOCATOR"] == "platform"  # at exit
    assert never["reason"].startswith("does not import TensorFlow;")
    assert json.loads((checks / "jax_imported_only").read_text()) is False  # JAX never started

    assert (
        by_name["keras_on_jax.py"]["keras_backend"],
        by_name["keras_on_jax.py"]["jax_backend"],
    ) == (
        "jax",
        "cpu",
    )
    assert by_name["keras_on_tf.py"]["keras_backend"] == "tensorflow"
    assert by_name["keras_on_tf.py"]["jax_backend"] is None
    assert by_name["jax_off.py"]["keras_backend"] is None


CONTEXT_MESSAGES = (
    "PHYSICAL_AFTER_INIT",
    "VISIBLE_AFTER_INIT",
    "VIRTUAL_AFTER_INIT",
    "GROWTH_DIFFERS",
    "GROWTH_WITH_VIRTUAL",
    "LIMIT_REQUIRED",
)


@pytest.mark.slow
def test_simulated_messages_are_the_installed_tensorflows() -> None:
    """Each message the simulation raises stands, word for word, in the installed TensorFlow's
    context.py, inside a `raise` of the same exception type."""
    pytest.importorskip("tensorflow")
    from tensorflow.python.eager import context

    from tfmemlint.verify import simulated_gpus

    source = " ".join(Path(context.__file__).read_text().split())
    for name in CONTEXT_MESSAGES:
        message = getattr(simulated_gpus, name)
        kind = "RuntimeError" if name.endswith("AFTER_INIT") else "ValueError"
        assert f'raise {kind}( "{message}"' in source or f'raise {kind}("{message}"' in source, name
    assert 'raise ValueError("Unrecognized device: %s" % repr(d))' in source


def _tensorflow_with_gpus(count: int):
    """A fresh eager context of the installed TensorFlow whose physical devices include `count`
    GPUs, so that its own Python (set_memory_growth, _compute_gpu_options) judges them."""
    from tensorflow.python.eager import context

    real = context.Context()
    real._initialize_physical_devices()
    gpus = [context.PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(count)]
    real._physical_devices += gpus
    real._visible_device_list += gpus
    real._memory_growth_map.update(dict.fromkeys(gpus))
    return real, gpus


def _simulation(count: int):
    from tensorflow.python.eager import context
    from tensorflow.python.framework import config

    from tfmemlint.verify.simulated_gpus import SIMULATED_FUNCTIONS, SimulatedGpus

    simulated = SimulatedGpus(count, context, lambda api, values: None, lambda: False)
    simulated.real = {name: getattr(config, name) for name in SIMULATED_FUNCTIONS}
    assert simulated.active()  # this machine has no GPU
    return simulated


@pytest.mark.slow
@pytest.mark.parametrize(
    "steps",
    [
        ["growth 0"],
        ["growth 0", "growth 1"],
        ["growth 0", "growth 1", "limit 0"],  # growth, then a limit: growth is dropped
        ["limit 0", "growth 0"],  # growth on a device with a limit: ValueError
        ["limit 0", "limit 1"],
        ["visible 0", "growth 0"],  # only visible GPUs are compared
        ["cpu logical", "growth 0", "growth 1"],  # a CPU's configuration drops GPU growth too
        ["growth 0", "nogrowth 1"],
        [],
    ],
)
def test_simulation_agrees_with_tensorflow(steps: list[str]) -> None:
    """The same calls on TensorFlow's own context (with GPUs put into its device lists) and on
    the simulation: the same errors at the same step, and the same growth and limits passed to
    the runtime as it starts."""
    pytest.importorskip("tensorflow")
    import tensorflow as tf

    from tfmemlint.verify.simulated_gpus import short_name

    real, real_gpus = _tensorflow_with_gpus(2)
    simulated = _simulation(2)

    def run(target, gpus, step: str):
        what, _, index = step.partition(" ")
        if what == "growth":
            target.set_memory_growth(gpus[int(index)], True)
        elif what == "nogrowth":
            target.set_memory_growth(gpus[int(index)], False)
        elif what == "limit":
            limit = [tf.config.LogicalDeviceConfiguration(memory_limit=1024)]
            target.set_logical_device_configuration(gpus[int(index)], limit)
        elif what == "visible":
            target.set_visible_devices([gpus[int(index)]], "GPU")
        elif what == "cpu" and target is real:
            cpus = real.list_physical_devices("CPU")
            real.set_logical_device_configuration(
                cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
            )

    def outcome(action):
        try:
            return action()
        except (ValueError, RuntimeError) as exc:
            return (type(exc).__name__, str(exc))

    for step in steps:
        on_tensorflow = outcome(functools.partial(run, real, real_gpus, step))
        on_simulation = outcome(functools.partial(run, simulated, simulated.gpus, step))
        assert on_tensorflow == on_simulation, step
    options = outcome(real._compute_gpu_options)
    at_start = outcome(lambda: simulated.runtime_starting(real))
    if isinstance(options, tuple):  # TensorFlow raised as the runtime would start
        assert at_start == options
        return
    visible = [int(i) for i in options.visible_device_list.split(",")]
    limits = [list(v.memory_limit_mb) for v in options.experimental.virtual_devices]
    devices = [d for d in at_start["devices"] if d["visible"]]
    assert [int(short_name(d["name"]).split(":")[1]) for d in devices] == visible
    for position, device in enumerate(devices):
        assert device["growth_applied"] is bool(options.allow_growth), step
        expected = limits[position] if limits else []
        assert (device["memory_limit_mb"] or []) == expected


@pytest.mark.slow
def test_simulated_gpus_behave_as_tensorflow_where_the_cpu_build_can_show_it(
    tmp_path: Path,
) -> None:
    """Under verify, a script meets the simulated GPUs and TensorFlow's real CPU in one process:
    after `list_logical_devices` (which starts the runtime, in TensorFlow as in the simulation)
    a change to either raises the same error; growth on the CPU is TensorFlow's own ValueError;
    and TensorFlow's own placement (MirroredStrategy's default devices) never sees a simulated
    GPU."""
    pytest.importorskip("tensorflow")
    results = tmp_path / "results.json"
    _script(
        tmp_path,
        "probe_me.py",
        f"""\
        import json
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        cpus = tf.config.list_physical_devices("CPU")
        out = {{"gpus": [g.name for g in gpus], "all": len(tf.config.list_physical_devices())}}

        def catch(key, action):
            try:
                action()
                out[key] = None
            except (ValueError, RuntimeError) as exc:
                out[key] = [type(exc).__name__, str(exc)]

        catch("cpu_growth", lambda: tf.config.experimental.set_memory_growth(cpus[0], True))
        catch("gpu_growth_before", lambda: tf.config.experimental.set_memory_growth(gpus[1], True))
        catch("gpu_growth_0", lambda: tf.config.experimental.set_memory_growth(gpus[0], True))
        out["logical"] = [d.name for d in tf.config.list_logical_devices("GPU")]
        out["started"] = tf.executing_eagerly()
        catch("cpu_visible", lambda: tf.config.set_visible_devices([], "CPU"))
        catch("gpu_visible", lambda: tf.config.set_visible_devices([], "GPU"))
        config = [tf.config.LogicalDeviceConfiguration()] * 2
        catch("cpu_virtual", lambda: tf.config.set_logical_device_configuration(cpus[0], config))
        limit = [tf.config.LogicalDeviceConfiguration(memory_limit=512)]
        catch("gpu_virtual", lambda: tf.config.experimental.set_virtual_device_configuration(gpus[0], limit))
        catch("gpu_growth_after", lambda: tf.config.experimental.set_memory_growth(gpus[0], False))
        catch("gpu_growth_same", lambda: tf.config.experimental.set_memory_growth(gpus[0], True))
        out["growth"] = [tf.config.experimental.get_memory_growth(g) for g in gpus]
        out["strategy"] = list(tf.distribute.MirroredStrategy().extended.worker_devices)
        out["sum"] = float(tf.reduce_sum(tf.ones([3])))
        json.dump(out, open({str(results)!r}, "w"))
        """,
    )
    _result, document = verify(str(tmp_path / "probe_me.py"))
    [outcome] = document["results"]
    assert outcome["exit_code"] == 0, outcome
    seen = json.loads(results.read_text())
    assert seen["gpus"] == ["/physical_device:GPU:0", "/physical_device:GPU:1"]
    assert seen["all"] == 3  # the CPU and both GPUs
    assert seen["cpu_growth"] == [
        "ValueError",
        "Cannot set memory growth on non-GPU and non-Pluggable devices",
    ]
    assert seen["gpu_growth_before"] is None and seen["gpu_growth_0"] is None
    assert seen["logical"] == ["/device:GPU:0", "/device:GPU:1"]
    assert seen["cpu_visible"] == seen["gpu_visible"] == ["RuntimeError", VISIBLE_AFTER_INIT]
    assert seen["cpu_virtual"] == seen["gpu_virtual"] == ["RuntimeError", VIRTUAL_AFTER_INIT]
    assert seen["gpu_growth_after"] == ["RuntimeError", PHYSICAL_AFTER_INIT]
    assert seen["gpu_growth_same"] is None  # the value in force: TensorFlow returns early
    assert seen["growth"] == [True, True]
    assert seen["strategy"] == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert seen["sum"] == 3.0
    # The errors were caught: the verdict rests on the settings as the runtime started.
    assert outcome["verdict"] == "pass" and outcome["reason"].startswith(SIMULATED_PASS)


@pytest.mark.slow
def test_simulated_gpus_judge_each_device(tmp_path: Path) -> None:
    """One real run per case, all in one verify call, on 2 simulated GPUs (3 for one call)."""
    pytest.importorskip("tensorflow")
    head = 'import tensorflow as tf\ngpus = tf.config.list_physical_devices("GPU")\n'
    limit = "[tf.config.LogicalDeviceConfiguration(memory_limit=1024)]"
    each = "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n"
    op = "print(tf.ones([2]))\n"
    cases = {
        "growth_then_limit.py": (
            head + each + f"tf.config.set_logical_device_configuration(gpus[0], {limit})\n" + op,
            "fail",
            "simulated GPU:1: neither memory growth nor a memory limit as the runtime started, "
            f"so it preallocates ({DROPPED_GROWTH})",
        ),
        "limit_then_growth.py": (
            head + f"tf.config.set_logical_device_configuration(gpus[0], {limit})\n" + each + op,
            "fail",
            "exited with status 1 after set_memory_growth raised ValueError: "
            "Cannot set memory growth on device when virtual devices configured "
            "(as TensorFlow does on 2 GPUs; simulated)",
        ),
        "limits.py": (
            head
            + f"for gpu in gpus:\n    tf.config.set_logical_device_configuration(gpu, {limit})\n"
            + op,
            "pass",
            "configured before use, on 2 simulated GPUs: GPU:0 limit 1024 MB, GPU:1 limit 1024 MB",
        ),
        "hidden_late.py": (
            head + op + 'tf.config.set_visible_devices([], "GPU")\n',
            "fail",
            f"exited with status 1 after set_visible_devices raised RuntimeError: {VISIBLE_AFTER_INIT}",
        ),
        "guest.py": (
            head + 'tf.config.set_visible_devices([], "GPU")\n' + op,
            "pass",
            "TF sees no GPU: all 2 simulated GPUs hidden",
        ),
        "one_visible.py": (
            head
            + 'tf.config.set_visible_devices(gpus[0], "GPU")\n'
            + "tf.config.experimental.set_memory_growth(gpus[0], True)\n"
            + op,
            "pass",
            "configured before use, on 1 simulated GPUs: GPU:0 growth",
        ),
        "forced_invalid.py": (
            'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "True"\n' + head + op,
            "fail",
            "simulated GPU:0, GPU:1: neither memory growth nor a memory limit",
        ),
        "forced_false.py": (
            'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "false"\n' + head + each + op,
            "fail",
            "TF_FORCE_GPU_ALLOW_GROWTH=false overrides",
        ),
        "cuda_one.py": (
            'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
            + head
            + "tf.config.experimental.set_memory_growth(gpus[0], True)\n"
            + op,
            "pass",
            "configured before use, on 1 simulated GPUs: GPU:0 growth",
        ),
        "only_lists.py": (head + "print(len(gpus))\n", "pass", "starts no TensorFlow runtime"),
        # TF2 hands a session made without a config the eager context's GPU options.
        "session.py": (
            "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\ntf.Session()\n",
            "fail",
            "simulated GPU:0, GPU:1: neither memory growth nor a memory limit",
        ),
        "session_after_growth.py": (
            "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"
            + head.split("\n", 1)[1]
            + each
            + "tf.Session()\n",
            "pass",
            "configured before use, on 2 simulated GPUs: GPU:0 growth, GPU:1 growth",
        ),
        # The runtime started with a limit on GPU:0 alone holds GPU:1 whole, session or not.
        "limit_on_one_then_session.py": (
            head
            + f"tf.config.set_logical_device_configuration(gpus[0], {limit})\n"
            + op
            + "options = tf.compat.v1.GPUOptions(allow_growth=True)\n"
            + "tf.compat.v1.Session(config=tf.compat.v1.ConfigProto(gpu_options=options))\n",
            "fail",
            "simulated GPU:1: neither memory growth nor a memory limit",
        ),
        "details_and_memory_info.py": (
            head
            + each
            + 'print(tf.config.experimental.get_device_details(gpus[0])["compute_capability"])\n'
            + op
            + 'print(tf.config.experimental.get_memory_info("GPU:0"))\n',
            "pass",
            "configured before use, on 2 simulated GPUs",
        ),
        # An error the script caught is no reason for its exit status.
        "caught_then_exit.py": (
            "import sys\n"
            + head
            + "try:\n    tf.config.set_logical_device_configuration(gpus[0], "
            + "[tf.config.LogicalDeviceConfiguration()])\nexcept ValueError:\n    pass\n"
            + each
            + op
            + "sys.exit(3)\n",
            "error",
            "exited with status 3",
        ),
        "numpy_limit.py": (
            "import numpy as np\n"
            + head
            + "for gpu in gpus:\n    tf.config.set_logical_device_configuration(gpu, "
            + "[tf.config.LogicalDeviceConfiguration(memory_limit=np.int64(1024))])\n"
            + op,
            "pass",
            "GPU:0 limit 1024 MB, GPU:1 limit 1024 MB",
        ),
        # CUDA reads CUDA_VISIBLE_DEVICES when the GPUs are first listed: later, it hides none.
        "hidden_after_listing.py": (
            head + 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "-1"\n' + op,
            "fail",
            "simulated GPU:0, GPU:1: neither memory growth nor a memory limit",
        ),
        # A project's own module whose name starts like a TensorFlow package's is the program's.
        "uses_a_project_helper.py": (
            "import tensorflow as tf\nimport tensorflow_utils\n\ntensorflow_utils.setup()\n" + op,
            "pass",
            "configured before use, on 2 simulated GPUs: GPU:0 growth, GPU:1 growth",
        ),
    }
    helper = tmp_path / "helpers"
    helper.mkdir()
    (helper / "tensorflow_utils.py").write_text(
        "import tensorflow as tf\n\n\ndef setup():\n"
        '    for gpu in tf.config.list_physical_devices("GPU"):\n'
        "        tf.config.experimental.set_memory_growth(gpu, True)\n"
    )
    for name, (body, _, _) in cases.items():
        (tmp_path / name).write_text(
            "import sys\nsys.path.insert(0, sys.path[0] + '/helpers')\n" + body
            if name == "uses_a_project_helper.py"
            else body
        )
    _result, document = verify(str(tmp_path))
    by_name = {Path(r["script"]).name: r for r in document["results"]}
    for name, (_, verdict, reason) in cases.items():
        outcome = by_name[name]
        assert outcome["simulated_gpus"] == 2, name
        assert outcome["verdict"] == verdict and reason in outcome["reason"], outcome
    assert by_name["growth_then_limit.py"]["simulated_devices"][1]["memory_growth"] is True
    assert by_name["only_lists.py"]["simulated_devices"] is None

    table = run_cli("verify", str(tmp_path / "limits.py"), "--simulate-gpus", "3")
    assert table.returncode == 0, table.stdout
    assert "(simulated)" in table.stdout  # the settings column (wrapped in the table)
    assert "3 simulated GPUs" in table.stdout
    assert "verdicts: 1 pass, 0 fail, 0 error (on 3 simulated GPUs)" in table.stdout
    _, off = verify("--simulate-gpus", "0", str(tmp_path / "growth_then_limit.py"))
    assert off["results"][0]["simulated_gpus"] is None
    assert off["results"][0]["simulated_devices"] is None
