"""Jupyter notebooks (issue 5): code cells linted as one module, findings per cell, fixes that
touch only the changed cells' sources and keep every other byte of the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

CELLS = [
    {
        "cell_type": "markdown",
        "metadata": {},
        "source": ["# Training\n", "`tf.Session()` here is prose"],
    },
    {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": [],
        "source": [
            "%matplotlib inline\n",
            "import tensorflow.compat.v1 as tf\n",
            "!nvidia-smi\n",
            "tf.disable_v2_behavior()",
        ],
    },
    {
        "cell_type": "code",
        "execution_count": 2,
        "metadata": {"tags": ["train"]},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": ["6.0\n"]}],
        "source": [
            "config = tf.ConfigProto()\n",
            "sess = tf.Session(config=config)\n",
            "print(sess.run(tf.constant(2.0) * 3))",
        ],
    },
    {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": ["%%bash\n", "echo 'tf.Session()'"],
    },
    {
        "cell_type": "code",
        "execution_count": 3,
        "metadata": {},
        "outputs": [],
        "source": "# 显存\nother = tf.Session()",
    },
]


def write_notebook(path: Path) -> bytes:
    document = {
        "cells": CELLS,
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    raw = (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    path.write_bytes(raw)
    return raw


def test_findings_name_their_cell(tmp_path: Path) -> None:
    write_notebook(tmp_path / "train.ipynb")
    result = run_cli("--output-format", "json", ".", cwd=tmp_path)  # walks find notebooks too
    found = [
        (f["cell"], f["location"]["row"], f["location"]["column"], f["code"])
        for f in json.loads(result.stdout)
    ]
    assert found == [(3, 2, 8, "TFM102"), (5, 2, 9, "TFM101")]
    text = run_cli("--output-format", "concise", "train.ipynb", cwd=tmp_path)
    assert text.stdout.splitlines()[0].startswith("train.ipynb:cell 3:2:8: TFM102 [*]")


def test_fix_rewrites_only_the_changed_cells(tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    raw = write_notebook(path)
    result = run_cli("--fix", "train.ipynb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    fixed = json.loads(path.read_text(encoding="utf-8"))  # still a valid notebook
    original = json.loads(raw)
    assert fixed["metadata"] == original["metadata"] and fixed["nbformat_minor"] == 5
    assert [c.get("outputs") for c in fixed["cells"]] == [
        c.get("outputs") for c in original["cells"]
    ]
    assert fixed["cells"][2]["source"] == [
        "config = tf.ConfigProto()\n",
        "config.gpu_options.allow_growth = True\n",
        "sess = tf.Session(config=config)\n",
        "print(sess.run(tf.constant(2.0) * 3))",
    ]
    assert fixed["cells"][4]["source"] == (
        "# 显存\nother = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))"
    )
    for unchanged in (0, 1, 3):  # markdown, the magics' cell, the %%bash cell
        assert fixed["cells"][unchanged] == original["cells"][unchanged]
    # Byte for byte, the only differences are inside the two changed sources.
    new = path.read_bytes()
    assert new.endswith(b"}\n") and raw.count(b"\n ") <= new.count(b"\n ")
    assert (
        new.replace(
            b'"config = tf.ConfigProto()\\n",\n    "config.gpu_options.allow_growth = True\\n",',
            b'"config = tf.ConfigProto()\\n",',
        ).replace(
            b"tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
            b"tf.Session()",
        )
        == raw
    )
    assert run_cli("--fix", "train.ipynb", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == new  # idempotent


def test_a_broken_notebook_is_reported_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text('{"cells": [ {"cell_type": "code", "source": "import tensorflow; tf.Session()"')
    result = run_cli("--output-format", "json", "--fix", "broken.ipynb", cwd=tmp_path)
    [finding] = json.loads(result.stdout)
    assert finding["code"] == "TFM901" and "notebook" in finding["message"]
    assert path.read_text().endswith('"import tensorflow; tf.Session()"')


def _nbformat3_code(source: str | list[str], language: str = "python") -> dict:
    return {
        "cell_type": "code",
        "collapsed": False,
        "input": source,
        "language": language,
        "metadata": {},
        "outputs": [],
        "prompt_number": 1,
    }


def test_an_nbformat3_notebook_is_read_across_its_worksheets_and_fixed_as_nbformat3(
    tmp_path: Path,
) -> None:
    """IPython 2's notebooks: cells in worksheets, code in `input`. Cells are numbered as
    nbformat 4 would number them once converted, all worksheets' in a row; a cell in another
    language is not Python's to check."""
    document = {
        "metadata": {"name": "course"},
        "nbformat": 3,
        "nbformat_minor": 0,
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 1, "metadata": {}, "source": "Week 1"},
                    _nbformat3_code(["import tensorflow as tf\n", "s = tf.Session()"]),
                ],
                "metadata": {},
            },
            {
                "cells": [
                    _nbformat3_code("s = tf.Session()", language="julia"),
                    _nbformat3_code(["sess = tf.InteractiveSession(\n", "    config=None)"]),
                    _nbformat3_code("t = tf.Session()"),
                ],
                "metadata": {},
            },
        ],
    }
    path = tmp_path / "course.ipynb"
    raw = json.dumps(document, indent=1, sort_keys=True)  # IPython 2's style: no final newline
    path.write_text(raw)
    result = run_cli("--output-format", "json", "course.ipynb", cwd=tmp_path)
    found = [(f["cell"], f["location"]["row"], f["code"]) for f in json.loads(result.stdout)]
    # Cell 4 (InteractiveSession turns growth on itself) comes after an unconfigured session.
    assert found == [(2, 2, "TFM101"), (4, 1, "TFM401"), (5, 1, "TFM101")]

    assert run_cli("--fix", "course.ipynb", cwd=tmp_path).returncode == 0
    fixed_text = path.read_text()
    fixed = json.loads(fixed_text)
    growth = "config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"
    assert "cells" not in fixed and fixed["nbformat"] == 3
    assert fixed["worksheets"][0]["cells"][1]["input"] == [
        "import tensorflow as tf\n",
        f"s = tf.Session({growth})",
    ]
    assert fixed["worksheets"][1]["cells"][2]["input"] == f"t = tf.Session({growth})"
    assert fixed_text.replace(growth, "") == raw  # every other byte, the missing newline too


def _code(source: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def _write_cells(path: Path, *sources: str) -> str:
    document = {
        "cells": [_code(s) for s in sources],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(document, indent=1) + "\n"
    path.write_text(text)
    return text


def test_cells_are_read_as_ipython_cleans_them_up(tmp_path: Path) -> None:
    """An indented cell, and pasted `>>>` and `In [n]:` prompts, run in Jupyter: they are
    checked as IPython compiles them, reported at the cell's own columns, and fixed with their
    indentation and prompts kept, on a line the fix adds too."""
    path = tmp_path / "pasted.ipynb"
    _write_cells(
        path,
        "import tensorflow as tf",
        "\n  cfg = tf.ConfigProto()\n\n  s = tf.Session(config=cfg)",
        ">>> with tf.Session() as s:\n...     pass",
        "In [7]: t = tf.Session()",
    )
    result = run_cli("--output-format", "json", "pasted.ipynb", cwd=tmp_path)
    found = [
        (f["cell"], f["location"]["row"], f["location"]["column"], f["code"])
        for f in json.loads(result.stdout)
    ]
    assert found == [(2, 4, 7, "TFM102"), (3, 1, 10, "TFM101"), (4, 1, 13, "TFM101")]

    assert run_cli("--fix", "pasted.ipynb", cwd=tmp_path).returncode == 0
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    growth = "tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"
    assert cells[1:] == [
        "\n  cfg = tf.ConfigProto()\n  cfg.gpu_options.allow_growth = True\n\n"
        "  s = tf.Session(config=cfg)",
        f">>> with tf.Session(config={growth}) as s:\n...     pass",
        f"In [7]: t = tf.Session(config={growth})",
    ]


def test_a_cell_ipython_versions_read_differently_is_left_as_it_was(tmp_path: Path) -> None:
    """A first line indented more than a later one: IPython 8 strips the first line's
    indentation where a line has it, IPython 9 the common one. Neither is assumed."""
    path = tmp_path / "mixed.ipynb"
    text = _write_cells(path, "import tensorflow as tf", "    a = 1\n  s = tf.Session()")
    result = run_cli("--output-format", "json", "--fix", "mixed.ipynb", cwd=tmp_path)
    assert [f["code"] for f in json.loads(result.stdout)] == ["TFM902"]
    assert path.read_text() == text


def test_a_fixed_cell_that_ipython_would_read_otherwise_is_refused() -> None:
    from tfmemlint.reading.notebook import CellView, NotebookError

    view = CellView.of(">>> import tensorflow as tf\n>>> s = tf.Session()")
    assert view.lines == ["import tensorflow as tf", "s = tf.Session()"]
    assert view.restored("import tensorflow as tf\nx = 1\ns = tf.Session()") == (
        ">>> import tensorflow as tf\n>>> x = 1\n>>> s = tf.Session()"
    )
    indented = CellView.of("    x = 1")
    with pytest.raises(NotebookError):  # the prefix put back makes a `>>>` line IPython strips
        indented.restored(">>> x = 1")


def test_cleanup_edge_cases_read_as_ipython_reads_them() -> None:
    from tfmemlint.reading.notebook import CellView

    # IPython's vi-mode marker before a prompt.
    assert CellView.of("[ins] In [2]: s = 1\n[ins] In [3]: t = 2").lines == ["s = 1", "t = 2"]
    # A blank line a fix adds to an indented `>>>` cell keeps the indentation, then `...`.
    view = CellView.of("    >>> import tensorflow as tf\n    >>> model = tf.keras.Sequential()")
    assert view.restored("import tensorflow as tf\n\nmodel = tf.keras.Sequential()") == (
        "    >>> import tensorflow as tf\n    ...\n    >>> model = tf.keras.Sequential()"
    )
    # A line added above a line the fix also changes: each keeps its own prompt.
    view = CellView.of("In [1]: from tensorflow.compat.v1 import Session\nIn [2]: s = Session()")
    fixed = "from tensorflow.compat.v1 import Session\nfrom x import y\ns = Session(config=y)"
    assert view.restored(fixed) == (
        "In [1]: from tensorflow.compat.v1 import Session\n   ...: from x import y\n"
        "In [2]: s = Session(config=y)"
    )


def test_a_cell_magic_after_a_blank_line_and_a_language_key_in_nbformat4(tmp_path: Path) -> None:
    """IPython finds `%%bash` after leading blank lines; `language` means nothing in
    nbformat 4, where a code cell is in the notebook's language."""
    path = tmp_path / "cells.ipynb"
    cells = [
        _code("\n%%bash\nif [ -x foo ]; then echo hi; fi"),
        {**_code("import tensorflow as tf\ns = tf.Session()"), "language": "python3"},
    ]
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(document, indent=1) + "\n")
    result = run_cli("--output-format", "json", "cells.ipynb", cwd=tmp_path)
    assert [(f["cell"], f["code"]) for f in json.loads(result.stdout)] == [(2, "TFM101")]


def test_a_fix_in_an_indented_cell_is_reported_as_the_edit_fix_makes(tmp_path: Path) -> None:
    """JSON's fix edits of a cell apply to the cell's own source, its indentation kept on
    the lines a fix adds."""
    path = tmp_path / "pasted.ipynb"
    source = "    import tensorflow as tf\n    config = tf.ConfigProto()\n    s = tf.Session(config=config)"
    _write_cells(path, source)
    [finding] = json.loads(run_cli("--output-format", "json", "pasted.ipynb", cwd=tmp_path).stdout)
    [edit] = finding["fix"]["edits"]
    lines = source.split("\n")

    def offset(where: dict) -> int:
        return sum(len(line) + 1 for line in lines[: where["row"] - 1]) + where["column"] - 1

    start, end = offset(edit["location"]), offset(edit["end_location"])
    fixed = source[:start] + edit["content"] + source[end:]
    assert fixed == source.replace(
        "ConfigProto()\n", "ConfigProto()\n    config.gpu_options.allow_growth = True\n"
    )
    run_cli("--fix", "pasted.ipynb", cwd=tmp_path)
    assert "".join(json.loads(path.read_text())["cells"][0]["source"]) == fixed


def test_a_notebook_that_cannot_take_its_fixes_still_reports_its_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tfmemlint.configuration.settings import Settings
    from tfmemlint.reading.notebook import Notebook, NotebookError
    from tfmemlint.rules import ALL_RULES
    from tfmemlint.running import file_check

    path = tmp_path / "train.ipynb"
    text = _write_cells(path, "import tensorflow as tf\ns = tf.Session()")

    def refuses(self: Notebook, fixed: str) -> str:
        raise NotebookError("a fix crossed a cell boundary")

    monkeypatch.setattr(Notebook, "with_module", refuses)
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "fix")
    assert [(f.code, f.cell, f.fix) for f in result.findings] == [
        ("TFM101", 1, None),
        ("TFM903", None, None),
    ]
    assert path.read_text() == text
