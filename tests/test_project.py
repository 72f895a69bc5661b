"""Whole-project resolution (issue 15): names imported from the project's own modules resolve to
what those modules bind them to, through re-exports and star imports; the cache and the workers
follow."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tfmemlint.checking.prefilter import first_stage
from tfmemlint.configuration.settings import select_rules
from tfmemlint.project import index as index_module
from tfmemlint.project.index import FileResolver
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.file_check import new_project_index

BARE = "tf.Session()"
FIXED = "tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))"


def project(root: Path, files: dict[str, str]) -> Path:
    """A repository holding `files`."""
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def findings(root: Path, *args: str, cwd: Path | None = None) -> list[dict[str, object]]:
    result = run_cli("--isolated", "--output-format", "json", *args, str(root), cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def where(found: list[dict[str, object]]) -> list[tuple[str, int, str]]:
    return sorted(
        (
            os.path.basename(str(f["filename"])),
            f["location"]["row"],  # type: ignore[index]
            str(f["code"]),
        )
        for f in found
    )


COMPAT = {
    "mypkg/__init__.py": "",
    "mypkg/compat.py": "import tensorflow as _tf\ntfv1 = _tf.compat.v1\n",
    "mypkg/backend.py": (
        "try:\n    import tensorflow.compat.v1 as tf\nexcept ImportError:\n"
        "    import tensorflow as tf\n"
    ),
}


def test_a_compat_module_imported_relatively_and_absolutely(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            **COMPAT,
            "mypkg/train/__init__.py": "",
            "mypkg/train/loop.py": "from ..compat import tfv1\n\nsess = tfv1.Session()\n",
            "scripts/run.py": "from mypkg.compat import tfv1 as tf\n\nsess = tf.Session()\n",
            "scripts/other.py": "from mypkg.backend import tf\n\nsess = tf.Session()\n",
        },
    )
    found = findings(root)
    assert where(found) == [
        ("loop.py", 3, "TFM101"),
        ("other.py", 3, "TFM101"),
        ("run.py", 3, "TFM101"),
    ]
    messages = {os.path.basename(str(f["filename"])): str(f["message"]) for f in found}
    assert "(tf is `tensorflow.compat.v1`, through `mypkg/compat.py`)" in messages["run.py"]
    assert "(tfv1 is `tensorflow.compat.v1`, through `mypkg/compat.py`)" in messages["loop.py"]
    assert "through `mypkg/backend.py`" in messages["other.py"]

    result = run_cli("--isolated", "--fix", str(root))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        root / "scripts/run.py"
    ).read_text() == f"from mypkg.compat import tfv1 as tf\n\nsess = {FIXED}\n"
    assert (
        "tfv1.ConfigProto(gpu_options=tfv1.GPUOptions(allow_growth=True))"
        in (root / "mypkg/train/loop.py").read_text()
    )
    assert (root / "mypkg/compat.py").read_text() == COMPAT["mypkg/compat.py"]


def test_re_exports_through_init_and_star_imports_are_followed(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            **COMPAT,
            "mypkg/__init__.py": "from .backend import tf\n",
            "mypkg/everything.py": "from .backend import *\n",
            "mypkg/hidden.py": "__all__ = ['other']\nfrom .backend import tf\nother = 1\n",
            "a.py": f"from mypkg import tf\n{BARE}\n",
            "b.py": f"import mypkg.backend as B\nB.{BARE}\n",
            "c.py": f"from mypkg.everything import *\n{BARE}\n",
            "d.py": f"from mypkg.hidden import *\n{BARE}\n",  # __all__ leaves tf out
        },
    )
    assert where(findings(root)) == [
        ("a.py", 2, "TFM101"),
        ("b.py", 2, "TFM101"),
        ("c.py", 2, "TFM101"),
    ]


@pytest.mark.parametrize(
    "files",
    [
        {"tf.py": "class Session:\n    pass\n", "use.py": f"import tf\n{BARE}\n"},
        {
            "compat.py": "import tensorflow\nclass StandIn:\n    Session = object\ntf = StandIn()\n",
            "use.py": f"from compat import tf\n{BARE}\n",
        },
        {  # bound twice, once to something else: nothing certain
            "compat.py": "import tensorflow as tf\nif FAKE:\n    tf = StandIn()\n",
            "use.py": f"from compat import tf\n{BARE}\n",
        },
        {  # an import cycle
            "a.py": "from b import tf\n",
            "b.py": "from a import tf\n",
            "use.py": f"from a import tf\nimport tensorflow\n{BARE}\n",
        },
        {  # a module Python 3 cannot read
            "compat.py": 'import tensorflow as tf\nprint "py2"\n',
            "use.py": f"from compat import tf\n{BARE}\n",
        },
    ],
    ids=["look-alike-tf-py", "stand-in-object", "rebound", "cycle", "unparsable"],
)
def test_what_is_not_tensorflow_is_never_a_finding(tmp_path: Path, files: dict[str, str]) -> None:
    root = project(tmp_path / "repo", files)
    assert [f for f in findings(root) if str(f["code"]).startswith("TFM1")] == []


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py", "setup.cfg"])
def test_a_project_without_git_is_rooted_at_its_packaging_file(tmp_path: Path, marker: str) -> None:
    """As unpacked from an sdist or copied without `.git`: the nearest folder holding a
    packaging file is the root, so a script in a plain folder still reaches the project's
    package. Without one, the script's own folder is all there is."""
    root = tmp_path / "unpacked"
    files = {
        **COMPAT,
        "mypkg/net.py": "import tensorflow as tf\ndef build():\n    return tf.ones([1])\n",
        "scripts/run.py": f"from mypkg.compat import tfv1 as tf\n\n{BARE}\n",
        # names no TensorFlow: reaches it through the project (the pre-filter's "program")
        "scripts/train.py": 'from mypkg.net import build\nif __name__ == "__main__":\n    build()\n',
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert not any((folder / ".git").exists() for folder in (root, *root.parents))
    assert findings(root / "scripts") == []  # cached: the packaging file's absence is recorded
    (root / marker).write_text("")
    found = findings(root / "scripts")
    assert where(found) == [("run.py", 3, "TFM101"), ("train.py", 1, "TFM205")]
    assert "through `mypkg/compat.py`" in str(found[0]["message"])


def test_imports_are_looked_for_up_to_the_repository_root_only(tmp_path: Path) -> None:
    (tmp_path / "compat.py").write_text("import tensorflow as tf\n")  # outside the repository
    root = project(tmp_path / "repo", {"scripts/use.py": f"from compat import tf\n{BARE}\n"})
    assert findings(root) == []
    (root / "compat.py").write_text("import tensorflow as tf\n")
    assert where(findings(root)) == [("use.py", 2, "TFM101")]


def test_a_name_from_a_module_that_is_not_tensorflow_lets_the_file_through_no_further(
    tmp_path: Path,
) -> None:
    """A file with a trigger word but no TensorFlow module word passes the pre-filter only when
    one of its imports reaches TensorFlow through the project."""
    root = project(
        tmp_path / "repo",
        {
            "db.py": "from sqlalchemy.orm import sessionmaker\nSession = sessionmaker()\n",
            "use.py": "from db import Session\ns = Session()\n",
        },
    )
    result = run_cli("--isolated", "-v", str(root))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"pre-filtered out\s+2 files", result.stderr), result.stderr
    assert re.search(r"parsed \(in this process\)\s+0 files", result.stderr), result.stderr


def test_the_index_reads_only_what_it_needs(tmp_path: Path) -> None:
    root = project(tmp_path / "repo", {**COMPAT, "use.py": "from mypkg.compat import tfv1\n"})
    index = new_project_index(None)
    resolver = index.resolver(str(root / "use.py"))
    assert resolver.resolve({"mypkg.compat.tfv1.Session"}) == {"tensorflow.compat.v1.Session"}
    assert resolver.resolve({"numpy.zeros"}) == {"numpy.zeros"}
    assert [os.path.basename(d.path) for d in resolver.dependencies()] == ["compat.py"]
    assert resolver.reaches_tensorflow((root / "use.py").read_bytes())


@pytest.mark.parametrize("tensorflow_in", [None, "m005.py", "m250.py"])
def test_a_programs_walk_reads_no_imports_it_has_no_room_for(
    tmp_path: Path, tensorflow_in: str | None
) -> None:
    """The walk from a program through the project stops adding modules at PROGRAM_MODULES:
    the imports of the modules it then still looks at are never read, and its answer (and the
    cached result) depends on them no more."""
    files = {
        "run.py": "import pkg.hub\n\nif __name__ == '__main__':\n    pkg.hub.main()\n",
        "pkg/__init__.py": "",
        "pkg/hub.py": "from . import early_gone\n"
        + "".join(f"from . import m{i:03}\n" for i in range(260)),
        **{f"pkg/m{i:03}.py": "from . import late_gone\n" for i in range(260)},
    }
    if tensorflow_in is not None:
        files[f"pkg/{tensorflow_in}"] = "import tensorflow as tf\n"
    root = project(tmp_path / "repo", files)
    assert index_module.PROGRAM_MODULES < 260
    resolver = new_project_index(None).resolver(str(root / "run.py"))
    found = resolver.imports_words((root / "run.py").read_bytes(), (b"tensorflow",))
    assert found == (str(root / "pkg" / "m005.py") if tensorflow_in == "m005.py" else None)
    read = {os.path.basename(d.path) for d in resolver.dependencies()}
    assert "early_gone.py" in read  # the hub's own imports had room
    assert "late_gone.py" not in read
    # Each module the walk looks at stays a dependency, also where the answer is only which
    # modules it reaches: were one gone, a module after it would have its room.
    walker = new_project_index(None).resolver(str(root / "run.py"))
    assert not walker.leads_to(str(root / "pkg" / "hub.py"), {str(root / "pkg" / "m250.py")})
    walked = {os.path.basename(p) for p in walker.program_modules(str(root / "pkg" / "hub.py"))}
    assert len(walked) == index_module.PROGRAM_MODULES
    assert walked <= {os.path.basename(d.path) for d in walker.dependencies()}


def test_a_question_of_a_modules_tree_is_answered_once_per_run(tmp_path: Path) -> None:
    """Every program a run walks asks the same of each module it enters (is it TF1 code?): the
    index answers each question of each module once, and every file that asks still depends on
    the module."""
    root = project(
        tmp_path / "repo",
        {
            "models.py": "import tensorflow as tf\nx = tf.placeholder(tf.float32)\n",
            "broken.py": "def (:\n",
            "a.py": "import models\n",
            "b.py": "import models\n",
        },
    )
    index = new_project_index(None)
    asked: list[str] = []

    def names_a(tree: ast.Module, name: str) -> bool:
        asked.append(name)
        return any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(tree))

    models, broken = str(root / "models.py"), str(root / "broken.py")
    first, second = (index.resolver(str(root / f"{name}.py")) for name in ("a", "b"))
    assert first.tree_answer(models, names_a, "x") is True
    assert second.tree_answer(models, names_a, "x") is True
    assert second.tree_answer(models, names_a, "y") is False
    assert asked == ["x", "y"]  # once for each question, whichever file asks
    assert first.tree_answer(broken, names_a, "x") is None  # CPython cannot parse it
    assert asked == ["x", "y"]
    for resolver in (first, second):
        assert "models.py" in {os.path.basename(d.path) for d in resolver.dependencies()}
    assert "broken.py" in {os.path.basename(d.path) for d in first.dependencies()}


@pytest.mark.parametrize(
    ("body", "asks"),
    [
        ("class Guard(SessionMiddleware):\n    pass\n", False),  # a word inside a name
        ("sess = tfv1.Session()\n", True),
        ("x = {'per_process_gpu_memory_fraction': 2.0}\n", True),  # a word that may be a string
        # A whole word, but in a string: the second stage, asked first, finds no name to walk for.
        ('NAME = "Session"\n', False),
    ],
)
def test_the_index_is_asked_only_for_a_file_that_spells_an_api_name(
    tmp_path: Path, body: str, asks: bool
) -> None:
    """A file without TensorFlow's module words goes to the project index only when its bytes
    could make the second stage find an API name, and that stage finds one in its code: the
    words alone do not decide."""
    use = f"from mypkg.compat import tfv1\n{body}"
    root = project(tmp_path / "repo", {**COMPAT, "use.py": use})
    asked: list[FileResolver] = []

    def resolver() -> FileResolver:
        asked.append(new_project_index(None).resolver(str(root / "use.py")))
        return asked[-1]

    verdict = first_stage(use.encode(), select_rules(ALL_RULES, extend_select=["TFM"]), resolver)
    assert verdict == ("project" if asks else "")
    read = [os.path.basename(d.path) for r in asked for d in r.dependencies()]
    assert read == (["compat.py"] if asks else [])


def cached_run(root: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("--isolated", "--cache-dir", str(cache), "--output-format", "json", str(root))


@pytest.mark.parametrize("in_cache_first", ["finding", "clean"])
def test_editing_only_the_alias_module_changes_the_cached_result(
    tmp_path: Path, in_cache_first: str
) -> None:
    alias = "import tensorflow as tf\n"
    not_alias = "tf = None\n"
    root = project(
        tmp_path / "repo",
        {
            "compat.py": alias if in_cache_first == "finding" else not_alias,
            "use.py": f"from compat import tf\n{BARE}\n",
        },
    )
    cache = tmp_path / "cache"
    first = cached_run(root, cache)
    assert (first.returncode == 1) == (in_cache_first == "finding")
    time.sleep(0.01)
    (root / "compat.py").write_text(not_alias if in_cache_first == "finding" else alias)
    second = cached_run(root, cache)
    assert (second.returncode == 1) == (in_cache_first == "clean"), second.stdout
    third = cached_run(root, cache)
    assert third.returncode == second.returncode and third.stdout == second.stdout


def test_workers_see_the_same_index(tmp_path: Path) -> None:
    files = {**COMPAT}
    for index in range(24):
        spelled = ["from mypkg.compat import tfv1 as tf", "from mypkg.backend import tf"][index % 2]
        files[f"scripts/s{index:02d}.py"] = f"{spelled}\n{BARE}\n"
    root = project(tmp_path / "repo", files)
    one = findings(root, "-j", "1")
    many = findings(root, "-j", "4")
    assert len(one) == 24 and many == one


def test_fallbacks_and_conditional_aliases(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            "fallback.py": "try:\n    import tensorflow as tf\nexcept ImportError:\n    tf = None\n",
            "placeholder.py": "try:\n    import tensorflow\n    tf = tensorflow\nexcept Exception:\n"
            "    tf = object()\n",
            "either.py": "import tensorflow as _tf\ntf = _tf if OLD else _tf.compat.v1\n",
            "a.py": f"from fallback import tf\n{BARE}\n",
            "b.py": f"from placeholder import tf\n{BARE}\n",
            "c.py": f"from either import tf\n{BARE}\n",
        },
    )
    assert where(findings(root)) == [
        ("a.py", 2, "TFM101"),
        ("b.py", 2, "TFM101"),
        ("c.py", 2, "TFM101"),
    ]


def test_a_src_layout_and_a_tests_package_that_mirrors_it(tmp_path: Path) -> None:
    """`tests/mypkg/` (a package of tests) does not hide `src/mypkg/` from the tests in it."""
    root = project(
        tmp_path / "repo",
        {
            "src/mypkg/__init__.py": "",
            "src/mypkg/compat.py": "import tensorflow.compat.v1 as tf\n",
            "tests/__init__.py": "",
            "tests/mypkg/__init__.py": "",
            "tests/mypkg/compat/__init__.py": "",
            "tests/mypkg/compat/test_it.py": f"from mypkg.compat import tf\n{BARE}\n",
            "examples/run.py": f"from mypkg.compat import tf\n{BARE}\n",
        },
    )
    assert where(findings(root)) == [("run.py", 2, "TFM101"), ("test_it.py", 2, "TFM101")]


def test_an_installed_package_is_read_not_imported(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "framework").mkdir(parents=True)
    # Importing it would fail loudly: only its source is read.
    (site / "framework" / "__init__.py").write_text(
        "raise SystemExit('imported!')\nfrom framework.backend import tf\n"
    )
    (site / "framework" / "backend.py").write_text("import tensorflow.compat.v1 as tf\n")
    root = project(tmp_path / "repo", {"train.py": f"from framework import tf\n{BARE}\n"})
    result = run_cli(
        "--isolated", "--output-format", "json", str(root), env={"PYTHONPATH": str(site)}
    )
    found = json.loads(result.stdout)
    assert where(found) == [("train.py", 2, "TFM101")], result.stderr
    assert "framework/__init__.py" in str(found[0]["message"])


HELPERS = {
    "utils/__init__.py": "from .config import session_config\n",
    "utils/config.py": (
        "import tensorflow as tf\n\n\n"
        "def session_config():\n"
        "    config = tf.ConfigProto(allow_soft_placement=True)\n"
        "    return config\n\n\n"
        "def good_config():\n"
        "    config = tf.ConfigProto()\n"
        "    config.gpu_options.allow_growth = True\n"
        "    return config\n\n\n"
        "def passed_through(config):\n"
        "    return config\n"
    ),
}


def test_a_config_helper_in_another_module_is_followed(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            **HELPERS,
            "good.py": "import tensorflow as tf\nfrom utils.config import good_config\n"
            "tf.Session(config=good_config())\n",
            "inline.py": "import tensorflow as tf\nimport utils\n"
            "tf.Session(config=utils.session_config())\n",
            "held.py": "import tensorflow as tf\nfrom utils.config import session_config\n"
            "cfg = session_config()\ntf.Session(config=cfg)\n",
            "unknown.py": "import tensorflow as tf\nfrom utils.config import passed_through\n"
            "tf.Session(config=passed_through(c))\n",
        },
    )
    found = findings(root, "--extend-select", "TFM190")
    assert where(found) == [
        ("held.py", 4, "TFM102"),
        ("inline.py", 3, "TFM102"),
        ("unknown.py", 3, "TFM190"),
    ]
    by_file = {os.path.basename(str(f["filename"])): f for f in found}
    # Where the config was built; no fix in the helper, which other callers share.
    assert by_file["inline.py"]["message"].endswith(
        "`utils.session_config()` builds it in `utils/config.py`, line 6"
    )
    assert by_file["inline.py"]["fix"] is None
    # Held in a variable, the config is fixed here, in the caller.
    assert "`session_config()` builds it in `utils/config.py`" in str(by_file["held.py"]["message"])
    result = run_cli("--isolated", "--fix", str(root))
    assert (
        "cfg = session_config()\ncfg.gpu_options.allow_growth = True\n"
        in (root / "held.py").read_text()
    )
    assert (root / "utils/config.py").read_text() == HELPERS["utils/config.py"]
    assert result.returncode == 1  # inline.py stays: nothing to fix it with here


def test_editing_only_the_helper_module_changes_the_cached_result(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            **HELPERS,
            "use.py": "import tensorflow as tf\nimport utils\ntf.Session(config=utils.session_config())\n",
        },
    )
    cache = tmp_path / "cache"
    assert cached_run(root, cache).returncode == 1
    time.sleep(0.01)
    config = root / "utils/config.py"
    config.write_text(
        config.read_text().replace(
            "(allow_soft_placement=True)\n",
            "(allow_soft_placement=True)\n    config.gpu_options.allow_growth = True\n",
            1,
        )
    )
    assert cached_run(root, cache).returncode == 0


@pytest.mark.parametrize(
    ("importer", "spelled", "init"),
    [
        ("pkg/train.py", "from .compat import tf", "pkg/__init__.py"),
        ("train.py", "from pkg.compat import tf", "pkg/__init__.py"),
        ("train.py", "from pkg.compat import tf", "pkg/other.py"),  # a namespace package
    ],
)
def test_a_module_that_appears_later_is_seen_on_a_cached_run(
    tmp_path: Path, importer: str, spelled: str, init: str
) -> None:
    root = project(tmp_path / "repo", {init: "", importer: f"{spelled}\n{BARE}\n"})
    cache = tmp_path / "cache"
    assert cached_run(root, cache).returncode == 0
    (root / "pkg/compat.py").write_text("import tensorflow.compat.v1 as tf\n")
    assert cached_run(root, cache).returncode == 1


def test_an_import_cycle_gives_the_same_answer_whatever_the_order(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            "a.py": "from tensorflow.compat.v1 import *\nfrom b import *\n",
            "b.py": "from a import *\n",
            "u1.py": "from a import Session\nsess = Session()\n",
            "u2.py": "from b import Session\nsess = Session()\n",
        },
    )
    alone = where(findings(root / "u2.py"))
    together = where(findings(root))
    assert alone == [("u2.py", 2, "TFM101")]
    assert ("u2.py", 2, "TFM101") in together


def test_notebooks_and_python2_files_reach_tensorflow_through_the_project(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {
        "cells": [{**cell, "source": ["from mypkg.compat import tfv1\n", "sess = tfv1.Session()"]}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    root = project(
        tmp_path / "repo",
        {
            **COMPAT,
            "nb.ipynb": json.dumps(notebook),
            "py2.py": 'from mypkg.compat import tfv1\nprint "started"\nsess = tfv1.Session()\n',
        },
    )
    assert where(findings(root)) == [
        ("nb.ipynb", 2, "TFM101"),
        ("py2.py", 2, "TFM904"),
        ("py2.py", 3, "TFM101"),
    ]


def test_long_chains_and_deep_aliases_end_without_a_crash(tmp_path: Path) -> None:
    files = {"m0.py": "import tensorflow as tf\n"}
    for index in range(1, 250):
        files[f"m{index}.py"] = f"from m{index - 1} import tf\n"
    files["deep.py"] = "import tensorflow as tf\nx = tf" + ".a" * 990 + "\n"
    files["near.py"] = f"from m20 import tf\nimport deep\n{BARE}\n"
    files["far.py"] = f"from m249 import tf\n{BARE}\n"
    root = project(tmp_path / "repo", files)
    result = run_cli("--isolated", "--output-format", "json", str(root))
    assert result.returncode == 1, result.stderr
    assert where(json.loads(result.stdout)) == [("near.py", 3, "TFM101")]  # far: too deep to tell


def test_an_alias_that_rebinds_its_own_name(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            "compat.py": "import tensorflow as tf\ntf = tf.compat.v1\n",
            "use.py": f"from compat import tf\n{BARE}\n",
        },
    )
    assert where(findings(root)) == [("use.py", 2, "TFM101")]


@pytest.mark.parametrize(
    "files",
    [
        {  # a relative import of a module that is not there fails in Python
            "lib/__init__.py": "",
            "lib/a.py": "from .missing import tf\n",
            "app/__init__.py": "",
            "app/missing.py": "import tensorflow as tf\n",
            "app/compat.py": "from lib.a import tf\n",
            "app/train.py": f"from app.compat import tf\n{BARE}\n",
        },
        {  # `from . import *` in a folder that is no package imports nothing here
            "pkg/__init__.py": "from tensorflow.compat.v1 import Session\n",
            "pkg/sub/helpers.py": "from . import *\n",
            "use.py": "from pkg.sub.helpers import Session\nsess = Session()\n",
        },
    ],
    ids=["missing-relative-module", "star-of-a-namespace-folder"],
)
def test_imports_that_fail_in_python_are_never_findings(
    tmp_path: Path, files: dict[str, str]
) -> None:
    assert findings(project(tmp_path / "repo", files)) == []


def test_reading_project_modules_prints_no_warnings(tmp_path: Path) -> None:
    root = project(
        tmp_path / "repo",
        {
            "compat.py": 'import tensorflow as tf\npattern = "\\d+"\n',
            "use.py": f"from compat import tf\n{BARE}\n",
        },
    )
    result = run_cli("--isolated", "--no-cache", str(root), env={"PYTHONWARNINGS": "default"})
    assert result.returncode == 1 and "Warning" not in result.stderr, result.stderr


def test_without_an_index_a_relative_star_import_is_not_counted() -> None:
    """The flake8 extension reads one file: a relative star import cannot be followed, and
    must not hide the one from TensorFlow."""
    from tfmemlint.checking.engine import lint_text
    from tfmemlint.configuration.settings import Settings

    source = "from tensorflow.compat.v1 import *\nfrom .helpers import *\n\nsess = Session()\n"
    found = lint_text("pkg/x.py", source, Settings.default(ALL_RULES))
    assert [f.code for f in found] == ["TFM101"]


def test_a_helper_module_nested_too_deeply_for_python_is_not_parsed(tmp_path: Path) -> None:
    """libcst's parser would overflow the stack on it and end the run."""
    deep = "x = " + "(" * 300 + "1" + ")" * 300 + "\n"
    root = project(
        tmp_path / "repo",
        {
            "utils.py": f"import tensorflow as tf\n{deep}\n\ndef make():\n    return tf.ConfigProto()\n",
            "train.py": "import tensorflow as tf\nfrom utils import make\ntf.Session(config=make())\n",
        },
    )
    found = findings(root, "--extend-select", "TFM190")
    assert ("train.py", 3, "TFM190") in where(found)


def test_a_module_a_rule_parsed_as_another_is_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config helper's module, parsed to follow the call into it, is checked with that parse
    when its own turn comes in the same process; what it finds is what a parse of its own finds."""
    from tfmemlint.checking import engine
    from tfmemlint.configuration.settings import Settings
    from tfmemlint.running.file_check import check_file

    root = project(
        tmp_path / "repo",
        {
            "utils.py": "import tensorflow as tf\n\n\ndef session_config():\n"
            "    return tf.ConfigProto()\n\n\nsess = tf.Session(config=session_config())\n",
            "train.py": "import tensorflow as tf\nfrom utils import session_config\n"
            "tf.Session(config=session_config())\n",
        },
    )
    settings = Settings.default(ALL_RULES)
    utils, train = str(root / "utils.py"), str(root / "train.py")
    alone = check_file(utils, settings, "check", index=new_project_index(None)).findings
    parses: list[str] = []
    counted = engine.parse

    def parse(text: str) -> object:
        parses.append(text)
        return counted(text)

    monkeypatch.setattr(engine, "parse", parse)
    index = new_project_index(None)
    assert [f.code for f in check_file(train, settings, "check", index=index).findings] == [
        "TFM102"
    ]
    assert len(parses) == 2  # train.py's own, and utils.py's, to follow the helper
    assert check_file(utils, settings, "check", index=index).findings == alone
    assert len(parses) == 2  # before: utils.py parsed a second time
    assert [f.code for f in alone] == ["TFM102"]
