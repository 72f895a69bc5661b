"""Launch files (TFM501-TFM506): Dockerfiles, Compose files, Kubernetes manifests, shell and Slurm
scripts, `.env` files. Each reader is held against another tool's reading of the same text
(dockerfile-parse, PyYAML's loader, bash itself); the fixtures in `fixtures/launch` are fixed as
`after` shows, and the fixed files still read."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from tests.conftest import FIXTURES, run_cli
from tfmemlint.reading.launch import kind_of, read_launch_text
from tfmemlint.reading.launch.model import LaunchError

BEFORE = FIXTURES / "launch" / "before"
AFTER = FIXTURES / "launch" / "after"
NAMES = sorted(p.relative_to(BEFORE).as_posix() for p in BEFORE.rglob("*") if p.is_file())


def _json(*args: str, cwd: Path | None = None) -> list[dict]:
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", *args, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _codes(path: Path, *args: str) -> list[tuple[int, str]]:
    return [(f["location"]["row"], f["code"]) for f in _json(*args, str(path))]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# -- the fixtures --------------------------------------------------------------------------------
def test_every_launch_fixture_has_its_pair_and_each_kind_is_there() -> None:
    assert sorted(p.relative_to(AFTER).as_posix() for p in AFTER.rglob("*") if p.is_file()) == NAMES
    assert {kind_of(name) for name in NAMES} == {"dockerfile", "yaml", "shell", "dotenv", None}


def test_the_fixtures_are_fixed_as_after_shows_and_a_second_fix_changes_nothing(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    shutil.copytree(BEFORE, work)
    done = run_cli("--no-cache", "--isolated", "--fix", str(work))
    assert done.returncode == 1, done.stdout + done.stderr  # the unfixable findings stay
    for name in NAMES:
        assert (work / name).read_bytes() == (AFTER / name).read_bytes(), name
    again = run_cli("--no-cache", "--isolated", "--fix", str(work))
    assert "(0 fixable with `--fix`)" in again.stdout
    for name in NAMES:
        assert (work / name).read_bytes() == (AFTER / name).read_bytes(), name


def test_each_rule_is_found_in_the_fixtures_and_only_the_unfixable_ones_stay() -> None:
    before = {(Path(f["filename"]).name, f["code"]) for f in _json(str(BEFORE))}
    codes = {code for _, code in before}
    assert codes == {"TFM205", *(f"TFM5{n:02}" for n in (1, 2, 3, 4, 5, 6, 11, 12, 13, 14))}
    assert not any(name in ("configured.Dockerfile", "train.py") for name, _ in before)
    after = sorted((Path(f["filename"]).name, f["code"], f["fix"]) for f in _json(str(AFTER)))
    assert after == [
        ("Dockerfile", "TFM504", None),
        ("deployment.yaml", "TFM502", None),
        ("docker-compose.yml", "TFM504", None),
        ("gpu.env", "TFM503", None),  # an allocator jaxlib does not know: no fix
        ("serve.sh", "TFM506", None),
        ("serving-compose.yaml", "TFM512", None),
        ("serving-compose.yaml", "TFM513", None),
    ]
    assert ("export.py", "TFM205") in before  # the project's other program: run by hand


def test_the_fixed_files_read_as_meant() -> None:
    """Compose and Kubernetes read strings; bash reads the scripts; the Dockerfile's values
    are what dockerfile-parse makes of them."""
    compose = yaml.safe_load((AFTER / "docker-compose.yml").read_text())
    assert compose["services"]["trainer"]["environment"]["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    documents = list(yaml.safe_load_all((AFTER / "deployment.yaml").read_text()))
    env = documents[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [entry.get("value") for entry in env] == ["true", "0.5", None]
    serving = yaml.safe_load((AFTER / "serving-compose.yaml").read_text())["services"]
    assert serving["serving"]["environment"] == {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    assert serving["canary"]["environment"][-1] == "TF_FORCE_GPU_ALLOW_GROWTH=true"
    kserve, deployment = yaml.safe_load_all((AFTER / "inference-service.yaml").read_text())
    assert kserve["spec"]["predictor"]["tensorflow"]["env"] == [
        {"name": "TF_FORCE_GPU_ALLOW_GROWTH", "value": "true"}
    ]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["env"][-1] == {"name": "TF_FORCE_GPU_ALLOW_GROWTH", "value": "true"}
    served = DockerfileParser(fileobj=io.BytesIO((AFTER / "serving.Dockerfile").read_bytes()))
    assert served.envs["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    for script in ("serve.sh", "train.sbatch", "serve-local.sh"):
        checked = subprocess.run(["bash", "-n", str(AFTER / script)], capture_output=True)
        assert checked.returncode == 0, checked.stderr
    parsed = DockerfileParser(fileobj=io.BytesIO((AFTER / "Dockerfile").read_bytes()))
    assert parsed.args["GROWTH"] == "true"
    assert parsed.envs["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"


# -- the readers ----------------------------------------------------------------------------------
DOCKERFILE = """\
# escape=`
FROM python:3.12 AS base
ARG LEVEL
ARG GROWTH=false
ENV A=1 B="two words" C='single' `
    # dropped by the builder
    D=four
ENV E five six
ENV F=$GROWTH G=${GROWTH} H=$HOME
FROM base AS second
ENV I=$GROWTH
"""


def test_the_dockerfile_reader_agrees_with_dockerfile_parse() -> None:
    launch = read_launch_text("dockerfile", DOCKERFILE)
    ours = {s.variable: s.value for s in launch.settings}
    first_stage = DOCKERFILE.split("FROM base")[0]  # dockerfile-parse tells the last stage's
    theirs = DockerfileParser(fileobj=io.BytesIO(first_stage.encode())).envs
    assert {k: v for k, v in ours.items() if v is not None and k != "I"} == {
        k: v for k, v in theirs.items() if k != "H"
    }
    assert ours["F"] == ours["G"] == "false"  # an ARG's default, in the same stage
    assert ours["H"] is None  # the builder's environment: not written here
    assert ours["I"] is None  # a new stage forgets the ARG
    # each value's place is where its text is
    for setting in launch.settings:
        if setting.value is not None and setting.value_span is not None:
            start, end = setting.value_span
            written = DOCKERFILE[start:end]
            assert written.strip(setting.quote) == setting.value


@pytest.mark.parametrize(
    "line",
    [
        "export TF_FORCE_GPU_ALLOW_GROWTH=1",
        "TF_FORCE_GPU_ALLOW_GROWTH=1 python train.py",
        "env TF_FORCE_GPU_ALLOW_GROWTH=1 python train.py",
        "docker run -e TF_FORCE_GPU_ALLOW_GROWTH=1 image",
        "docker run --env TF_FORCE_GPU_ALLOW_GROWTH='1' image",
        "docker run --env=TF_FORCE_GPU_ALLOW_GROWTH=1 image",
        "srun --export=ALL,TF_FORCE_GPU_ALLOW_GROWTH=1 python train.py",
        "#SBATCH --export=TF_FORCE_GPU_ALLOW_GROWTH=1",
    ],
)
def test_each_way_a_script_sets_a_variable_is_read_and_fixed(tmp_path: Path, line: str) -> None:
    script = _write(tmp_path, "job.sh", f"#!/bin/bash\n{line}\n")
    assert _codes(script) == [(2, "TFM501")]
    assert run_cli("--no-cache", "--isolated", "--fix", str(script)).returncode == 0
    fixed = script.read_text()
    assert fixed == f"#!/bin/bash\n{line.replace('1', 'true')}\n"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_what_a_script_does_not_set_is_not_read(tmp_path: Path) -> None:
    """A here-document's lines, a quoted word, a value that expands something, a comment."""
    script = _write(
        tmp_path,
        "job.sh",
        """\
        cat > env.txt <<EOF
        export TF_FORCE_GPU_ALLOW_GROWTH=1
        EOF
        echo "TF_FORCE_GPU_ALLOW_GROWTH=1"
        export TF_FORCE_GPU_ALLOW_GROWTH=$GROWTH
        # export TF_FORCE_GPU_ALLOW_GROWTH=1
        """,
    )
    assert _codes(script) == []


def test_a_comment_inside_a_continued_command_cuts_its_settings_off(tmp_path: Path) -> None:
    """bash itself runs the lines after the comment as a command of their own."""
    text = """\
        #!/bin/bash
        show() { printf '%s\\n' "$@"; }
        show first \\
          # the memory settings
          -e TF_FORCE_GPU_ALLOW_GROWTH=true
        show last \\
          -e XLA_PYTHON_CLIENT_PREALLOCATE=false
        """
    script = _write(tmp_path, "run.sh", text)
    ran = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert ran.stdout.splitlines()[0] == "first"  # the -e line did not reach `show`
    assert "command not found" in ran.stderr
    found = _json(str(script))
    assert [(f["code"], f["location"]["row"]) for f in found] == [("TFM506", 4)]
    assert "`show first`" in found[0]["message"]
    assert "TF_FORCE_GPU_ALLOW_GROWTH" in found[0]["message"]


def test_compose_and_kubernetes_values_as_yaml_reads_them(tmp_path: Path) -> None:
    compose = _write(
        tmp_path,
        "compose.yaml",
        """\
        services:
          a:
            environment:
              TF_FORCE_GPU_ALLOW_GROWTH: on
              XLA_PYTHON_CLIENT_MEM_FRACTION: 0.5
              UNRELATED: yes
        """,
    )
    # `on` is YAML 1.1's boolean; a number is fine for Compose; other variables are not ours
    assert _codes(compose) == [(4, "TFM505")]
    run_cli("--no-cache", "--isolated", "--fix", str(compose))
    loaded = yaml.safe_load(compose.read_text())["services"]["a"]["environment"]
    assert loaded["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert loaded["UNRELATED"] is True


def test_libyaml_reads_each_yaml_fixture_as_the_pure_python_loader_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader takes libyaml's loader where PyYAML has it: the same places and styles."""
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("this PyYAML has no libyaml")
    texts = [p.read_text() for p in [*BEFORE.rglob("*.y*ml"), *AFTER.rglob("*.y*ml")]]
    texts.append(
        "services:\n  a:\n    environment:\n      - A=1\n      - 'B=2'\n"
        "  b:\n    environment:\n      C:\n      D: yes\n"
    )
    with_libyaml = [read_launch_text("yaml", text) for text in texts]
    monkeypatch.delattr(yaml, "CSafeLoader")
    assert [read_launch_text("yaml", text) for text in texts] == with_libyaml


def test_a_file_that_does_not_read_is_one_finding_and_the_run_goes_on(tmp_path: Path) -> None:
    _write(tmp_path, "broken.yml", "services:\n  a: [TF_FORCE_GPU_ALLOW_GROWTH\n")
    _write(
        tmp_path,
        "chart.yaml",
        "env:\n  - name: TF_FORCE_GPU_ALLOW_GROWTH\n    value: {{ .Values.g }}\n",
    )
    _write(tmp_path, "ok.env", "TF_FORCE_GPU_ALLOW_GROWTH=1\n")
    found = _json(str(tmp_path))
    assert [(Path(f["filename"]).name, f["code"]) for f in found] == [
        ("broken.yml", "TFM902"),
        ("ok.env", "TFM501"),
    ]
    assert found[0]["message"].startswith("Not checked: YAML does not parse:")
    assert "\n" not in found[0]["message"]
    with pytest.raises(LaunchError):
        read_launch_text("yaml", "a: [b\n")


def test_lookalikes_are_only_names_nobody_reads(tmp_path: Path) -> None:
    env = _write(
        tmp_path,
        "gpu.env",
        """\
        TF_GPU_ALLOCATOR=cuda_malloc_async
        TF_CPP_MIN_LOG_LEVEL=2
        XLA_FLAGS=--xla_gpu_enable_triton=false
        TF_GPU_HOST_MEM_LIMIT_IN_MB=2048
        TF_MEMORY_ALLOCATION=0.5
        XLA_PREALLOCATE=false
        JAX_MEM_FRACTION=0.5
        """,
    )
    found = _json(str(env))
    assert [(f["location"]["row"], f["code"]) for f in found] == [
        (5, "TFM504"),
        (6, "TFM504"),
        (7, "TFM504"),
    ]
    assert "use TF_FORCE_GPU_ALLOW_GROWTH=true" in found[0]["message"]
    assert "use XLA_PYTHON_CLIENT_PREALLOCATE=false" in found[1]["message"]
    assert "use XLA_PYTHON_CLIENT_MEM_FRACTION" in found[2]["message"]


# -- the run around them ---------------------------------------------------------------------------
def test_suppressions_selection_and_per_file_ignores(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM x\n# tfmemlint: ignore[TFM501]\nENV TF_FORCE_GPU_ALLOW_GROWTH=1\n"
        "ENV TF_GPU_MEMORY_FRACTION=0.3\n"
    )
    (tmp_path / "job.sh").write_text("export TF_FORCE_GPU_ALLOW_GROWTH=1  # noqa: TFM501\n")
    assert _codes(tmp_path / "Dockerfile") == [(4, "TFM504")]
    assert _codes(tmp_path / "job.sh") == []
    assert _json("--select", "TFM501", str(tmp_path)) == []
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tfmemlint]\nper-file-ignores = {"Dockerfile" = ["TFM504"]}\n'
    )
    done = run_cli("--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert json.loads(done.stdout) == []


def test_other_yaml_and_python_files_are_left_as_they_were(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: x\nnav: [a.md]\n")
    (tmp_path / "tool.py").write_text("print('TF_FORCE_GPU_ALLOW_GROWTH')\n")
    done = run_cli("--no-cache", "--isolated", "--verbose", str(tmp_path))
    assert done.returncode == 0, done.stdout
    assert "walked                                   2 files" in done.stderr


def test_findings_carry_their_path_and_line_in_every_output(tmp_path: Path) -> None:
    env = _write(tmp_path, "gpu.env", "# x\nTF_FORCE_GPU_ALLOW_GROWTH=1\n")
    github = run_cli("--no-cache", "--isolated", "--output-format", "github", str(env))
    assert f"file={env},line=2,col=1" in github.stdout
    sarif = json.loads(
        run_cli("--no-cache", "--isolated", "--output-format", "sarif", str(env)).stdout
    )
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "TFM501"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    junit = run_cli("--no-cache", "--isolated", "--output-format", "junit", str(env)).stdout
    assert f'name="TFM501 2:1" classname="{env}" file="{env}" line="2"' in junit


def test_stdin_and_the_editor_read_a_launch_file_by_its_name() -> None:
    done = run_cli(
        "--isolated",
        "--stdin-filename",
        "Dockerfile",
        "--fix",
        "-",
        stdin="FROM x\nENV TF_FORCE_GPU_ALLOW_GROWTH=1\n",
    )
    assert done.stdout == "FROM x\nENV TF_FORCE_GPU_ALLOW_GROWTH=true\n"


def test_a_script_named_on_the_command_line_is_known_by_its_shell_line(tmp_path: Path) -> None:
    job = _write(tmp_path, "job", "#!/usr/bin/env bash\nexport TF_FORCE_GPU_ALLOW_GROWTH=1\n")
    tool = _write(tmp_path, "tool", "#!/usr/bin/env python3\nimport os\n")
    assert _codes(job) == [(2, "TFM501")]
    assert _codes(tool) == []  # a Python script is read as Python


# -- model servers --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("docker run --gpus all tensorflow/serving:latest-gpu", [(1, "TFM511")]),
        (
            "docker run --gpus all -e TF_FORCE_GPU_ALLOW_GROWTH=true tensorflow/serving:latest-gpu",
            [],
        ),
        (
            "docker run --gpus all tensorflow/serving:latest-gpu --per_process_gpu_memory_fraction=0.4",
            [],
        ),
        ("docker run tensorflow/serving:latest", []),  # the CPU image
        ("docker run --env-file gpu.env tensorflow/serving:latest-gpu", []),  # set there, maybe
        ("docker run -e TF_FORCE_GPU_ALLOW_GROWTH=$G tensorflow/serving:latest-gpu", []),
        (
            "docker run tensorflow/serving:latest-gpu --per_process_gpu_memory_fraction=abc",
            [(1, "TFM512")],
        ),
        ("tensorflow_model_server --per_process_gpu_memory_fraction 40", [(1, "TFM512")]),
        ("tritonserver --backend-config tensorflow,gpu-memory-fraction=1", [(1, "TFM513")]),
        ("tritonserver --backend-config=tensorflow,gpu-memory-fraction=0.5", []),
        # how real scripts start it (found in held-out repositories)
        ("sudo docker run --runtime=nvidia tensorflow/serving:latest-gpu", [(1, "TFM511")]),
        ("docker rm -f s; docker run --gpus all tensorflow/serving:latest-gpu", [(1, "TFM511")]),
        ("CID=$(docker run -d --gpus all tensorflow/serving:latest-gpu)", [(1, "TFM511")]),
        (
            "docker run -v $(pwd)/m:/m -e TF_GPU_MEMORY_FRACTION=.3 tensorflow/serving:latest-gpu",
            [(1, "TFM504"), (1, "TFM511")],
        ),
        ("if true; then docker container run tensorflow/serving:latest-gpu; fi", [(1, "TFM511")]),
        ("time sudo -E -u me nvidia-docker run tensorflow/serving:latest-gpu", [(1, "TFM511")]),
        # a `-devel` image is a build environment, unless it is told to serve
        ("docker run --gpus all tensorflow/serving:2.6.3-devel-gpu bash", []),
        (
            "docker run --entrypoint tensorflow_model_server tensorflow/serving:2.6.3-devel-gpu",
            [(1, "TFM511")],
        ),
    ],
)
def test_tf_serving_and_triton_in_a_script(tmp_path: Path, text: str, found: list) -> None:
    assert _codes(_write(tmp_path, "serve.sh", text + "\n")) == found


def test_the_fraction_policy_passes_the_flag_to_docker_run(tmp_path: Path) -> None:
    script = _write(tmp_path, "serve.sh", "docker run --gpus all tensorflow/serving:latest-gpu\n")
    compose = _write(
        tmp_path, "compose.yaml", "services:\n  s:\n    image: tensorflow/serving:latest-gpu\n"
    )
    run_cli("--no-cache", "--isolated", "--policy", "fraction=0.4", "--fix", str(tmp_path))
    assert script.read_text() == (
        "docker run --gpus all tensorflow/serving:latest-gpu "
        "--per_process_gpu_memory_fraction=0.4\n"
    )
    assert "TF_FORCE" not in compose.read_text()  # no fix: reported as it was
    assert _codes(compose) == [(3, "TFM511")]


def test_an_environment_added_to_a_file_without_a_last_line_break(tmp_path: Path) -> None:
    compose = _write(
        tmp_path, "compose.yaml", "services:\n  s:\n    image: tensorflow/serving:latest-gpu"
    )
    run_cli("--no-cache", "--isolated", "--fix", str(compose))
    assert yaml.safe_load(compose.read_text())["services"]["s"]["environment"] == {
        "TF_FORCE_GPU_ALLOW_GROWTH": "true"
    }


def test_launch_files_are_read_in_the_main_process(tmp_path: Path) -> None:
    """Their readers cost less than a worker's start: a folder of them starts no pool."""
    for index in range(20):
        (tmp_path / f"job{index}.sh").write_text("export TF_FORCE_GPU_ALLOW_GROWTH=1\n")
    done = run_cli("--no-cache", "--isolated", "--verbose", "-j", "2", str(tmp_path))
    assert "parsed (in this process)                20 files" in done.stderr, done.stderr


# -- launch environments count for the programs they run --------------------------------------------
TRAIN = (
    "import tensorflow as tf\n\n\nif __name__ == '__main__':\n"
    "    tf.keras.Sequential([tf.keras.layers.Dense(1)]).predict(tf.ones((1, 2)))\n"
)
JAX_AND_TF = (
    "import jax\nimport tensorflow_datasets as tfds\n\n\nif __name__ == '__main__':\n"
    "    tfds.load('mnist')\n    print(jax.numpy.zeros(3))\n"
)


def _program_project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir()
    for name, text in {"src/train.py": TRAIN, "eval.py": TRAIN, **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _programs_found(root: Path, *args: str) -> list[tuple[str, str]]:
    done = run_cli(
        "--no-cache", "--output-format", "json", "--select", "TFM2", *args, ".", cwd=root
    )
    return sorted(
        (Path(f["filename"]).resolve().relative_to(root.resolve()).as_posix(), f["code"])
        for f in json.loads(done.stdout)
    )


def test_a_dockerfile_that_runs_a_program_with_growth_configures_it(tmp_path: Path) -> None:
    """Found through WORKDIR and COPY as the image lays the project out; `--show-launched`
    reports it all the same, naming the Dockerfile."""
    dockerfile = """\
        FROM tensorflow/tensorflow:2.21.0-gpu
        WORKDIR /app
        COPY src/ ./src/
        ENV TF_FORCE_GPU_ALLOW_GROWTH=true
        CMD ["python", "-u", "src/train.py"]
        """
    root = _program_project(tmp_path, {"Dockerfile": dockerfile})
    assert _programs_found(root) == [("eval.py", "TFM205")]
    shown = run_cli("--no-cache", "--show-launched", "--output-format", "json", ".", cwd=root)
    [train] = [f for f in json.loads(shown.stdout) if f["filename"].endswith("train.py")]
    assert train["message"].endswith(
        "(`Dockerfile` runs it with its GPU memory set up; this holds where it runs without "
        "that file)"
    )
    (root / "Dockerfile").write_text(textwrap.dedent(dockerfile).replace("=true", "=1"))
    assert _programs_found(root) == [("eval.py", "TFM205"), ("src/train.py", "TFM205")]


def test_a_slurm_script_in_the_scripts_folder_configures_what_it_runs(tmp_path: Path) -> None:
    job = "#!/bin/bash\n#SBATCH --gres=gpu:1\nexport TF_FORCE_GPU_ALLOW_GROWTH=true\nsrun python eval.py\n"
    root = _program_project(tmp_path, {"scripts/eval.sbatch": job})
    assert _programs_found(root) == [("src/train.py", "TFM205")]
    # another launcher that runs it without the setting: no longer configured everywhere
    (root / "run.sh").write_text("#!/bin/bash\npython eval.py\n")
    assert _programs_found(root) == [("eval.py", "TFM205"), ("src/train.py", "TFM205")]


def test_compose_configures_jax_for_the_program_its_service_runs(tmp_path: Path) -> None:
    compose = """\
        services:
          trainer:
            build: .
            volumes:
              - .:/workspace
            working_dir: /workspace
            environment:
              XLA_PYTHON_CLIENT_PREALLOCATE: "false"
            command: python jax_train.py
        """
    root = _program_project(tmp_path, {"jax_train.py": JAX_AND_TF, "compose.yaml": compose})
    found = _programs_found(root)
    assert ("jax_train.py", "TFM208") not in found
    assert ("jax_train.py", "TFM207") in found  # TensorFlow's side is not set up by it


def test_a_launch_environment_of_the_configuration_counts_for_every_program(
    tmp_path: Path,
) -> None:
    image = 'FROM jupyter/tensorflow-notebook\nENV TF_FORCE_GPU_ALLOW_GROWTH=true\nCMD ["start-notebook.sh"]\n'
    root = _program_project(
        tmp_path,
        {
            "docker/Dockerfile": image,
            "pyproject.toml": '[tool.tfmemlint]\nlaunch-environment = ["docker/Dockerfile"]\n',
        },
    )
    assert _programs_found(root) == []
    assert len(_programs_found(root, "--show-launched")) == 2


def test_a_launcher_added_later_is_seen_by_a_cached_run(tmp_path: Path) -> None:
    root = _program_project(tmp_path, {})
    cached = ["--output-format", "json", "--select", "TFM205", "."]
    assert len(json.loads(run_cli(*cached, cwd=root).stdout)) == 2
    (root / "notes.md").write_text("a file that launches nothing\n")
    again = run_cli("--verbose", *cached, cwd=root)
    assert "served from the cache                    2 files" in again.stderr, again.stderr
    (root / "run.sh").write_text("export TF_FORCE_GPU_ALLOW_GROWTH=true\npython eval.py\n")
    [left] = json.loads(run_cli(*cached, cwd=root).stdout)
    assert left["filename"].endswith("src/train.py")


def test_two_runs_on_one_line_are_two_containers(tmp_path: Path) -> None:
    line = (
        "docker run --gpus all tensorflow/serving:latest-gpu; "
        "docker run --gpus all tensorflow/serving:latest-gpu --per_process_gpu_memory_fraction=0.3\n"
    )
    script = _write(tmp_path, "serve.sh", line)
    [found] = _json(str(script))
    assert (found["code"], found["location"]["column"]) == ("TFM511", 23)
    assert "`tensorflow/serving:latest-gpu`" in found["message"]  # no `;` in the image's name


def test_growth_set_to_another_value_is_not_added_again(tmp_path: Path) -> None:
    script = _write(
        tmp_path,
        "serve.sh",
        "docker run -e TF_FORCE_GPU_ALLOW_GROWTH=false tensorflow/serving:latest-gpu\n",
    )
    found = {(f["code"], f["fix"] is None) for f in _json(str(script))}
    assert found == {("TFM502", True), ("TFM511", True)}  # reported, and no fix offered


def test_a_compose_service_built_from_a_dockerfile_runs_its_program_with_both(
    tmp_path: Path,
) -> None:
    """Compose's environment over the image's, the image's command or the service's own, laid
    out by the image's COPY and WORKDIR."""
    dockerfile = """\
        FROM tensorflow/tensorflow:2.21.0-gpu
        WORKDIR /srv
        COPY src/ ./src/
        CMD ["python", "src/train.py"]
        """
    compose = """\
        services:
          train:
            build: .
            environment:
              TF_FORCE_GPU_ALLOW_GROWTH: "true"
          evaluate:
            build:
              context: .
            command: python src/train.py --evaluate
            environment:
              - TF_FORCE_GPU_ALLOW_GROWTH=1
        """
    root = _program_project(tmp_path, {"Dockerfile": dockerfile, "compose.yaml": compose})
    # `evaluate` runs train.py too, with a value TensorFlow ignores: not set up everywhere
    assert ("src/train.py", "TFM205") in _programs_found(root)
    (root / "compose.yaml").write_text(textwrap.dedent(compose).replace("=1", "=true"))
    assert _programs_found(root) == [("eval.py", "TFM205")]


def test_a_comment_inside_a_commands_output_stays_on_its_own_row(tmp_path: Path) -> None:
    """The commands inside `$(...)` are read on their own: a comment there is on its own
    row, and leaves the suppression on another row alone."""
    script = _write(
        tmp_path,
        "job.sh",
        "#!/bin/bash\nexport TF_FORCE_GPU_ALLOW_GROWTH=1  # noqa: TFM501\n"
        "HOST=$(hostname\n# which machine\n)\n",
    )
    assert _codes(script) == []
