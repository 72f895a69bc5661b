"""The engine's shortcuts around libcst and Python must leave no trace: its quicker parse builds
the trees libcst's does (wherever libcst's own node check accepts them), the check is back after
every parse and stays on in other threads, and the paused cycle collector is back after every
file."""

from __future__ import annotations

import contextlib
import gc
import threading

import libcst as cst
import pytest

from tests.test_walk import SOURCES
from tfmemlint import engine
from tfmemlint.settings import Settings

SESSION = "import tensorflow as tf\nsess = tf.Session()\n"


def test_the_unchecked_parse_builds_the_same_trees_and_restores_the_check() -> None:
    for path in SOURCES[:60]:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert engine.parse(text).deep_equals(cst.parse_module(text)), path
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # nodes built after a parse are checked again
    with pytest.raises(cst.ParserSyntaxError):
        engine.parse("def (")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # also after a parse that failed


@pytest.mark.parametrize("text", [SESSION, "def ("])
def test_the_cycle_collector_is_back_after_each_file(text: str) -> None:
    default = Settings.default()
    for entry in (engine.lint_text, engine.fix_text):
        assert gc.isenabled()
        with contextlib.suppress(cst.ParserSyntaxError):
            entry("a.py", text, default)
        assert gc.isenabled()


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        engine.lint_text("a.py", SESSION, Settings.default())
        assert not gc.isenabled()
    finally:
        gc.enable()


# libcst's own node check rejects this valid line (LibCST#1061); the unchecked parse accepts it.
REJECTED_BY_THE_CHECK = "x = a if b else(lambda: c)\n"


def _libcst_rejects(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return True
    return False


def test_the_parse_is_the_same_beside_other_threads() -> None:
    """Results must not depend on a progress bar's thread: the line parses either way."""
    if not _libcst_rejects(REJECTED_BY_THE_CHECK):
        pytest.skip("this libcst's check accepts the line")
    engine.parse(REJECTED_BY_THE_CHECK)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        engine.parse(REJECTED_BY_THE_CHECK)
    finally:
        release.set()
        other.join()


def test_other_threads_keep_the_check_while_one_parses() -> None:
    errors: list[BaseException] = []

    def build() -> None:
        try:
            cst.Name("not a name")
        except cst.CSTValidationError as exc:
            errors.append(exc)

    engine._this_thread.parsing = True  # this thread, as inside engine.parse
    try:
        other = threading.Thread(target=build)
        other.start()
        other.join()
    finally:
        engine._this_thread.parsing = False
    assert len(errors) == 1


def test_parses_in_threads_leave_the_check_on() -> None:
    text = "x = [" + ", ".join(str(i) for i in range(3000)) + "]\n"
    threads = [threading.Thread(target=engine.parse, args=(text,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
