"""What a rule family is, and what every family's page shares. The families import this module,
never the registry (`tfmemlint.rules`), which imports every family."""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from tfmemlint.model import DOCS_URL, Rule
from tfmemlint.reading.source import lines_holding

# The roots of every module whose names the rules resolve to TensorFlow APIs (tensorflow_estimator
# included). Names are resolved only from a file's own imports, so a family that resolves names
# finds nothing in a file that never mentions one of these.
TENSORFLOW_MODULES = (b"tensorflow", b"keras", b"tf_slim")
# The words of a module that sets TensorFlow's GPU memory up: TF2's device configuration calls
# (the eager family's triggers) and the process-wide growth variable (TFM201's).
DEVICE_CONFIGURATION_WORDS = (
    b"set_memory_growth",
    b"set_logical_device_configuration",
    b"set_virtual_device_configuration",
    b"set_visible_devices",
)
FORCE_GROWTH_WORD = b"TF_FORCE_GPU_ALLOW_GROWTH"


# The headings under which the long rule pages put their detail, the same on every page.
LOOKS_AT = "Which code it looks at"
CONFIGURED = "What counts as configured"
PROGRAM = "Where the program starts"
NOT_REPORTED = "What is not reported"
# Where the site says, once for every rule, what tfmemlint understands.
UNDERSTANDS = f"{DOCS_URL}understands/"
SEE_PROGRAMS = (
    f"See [TF2 programs]({UNDERSTANDS}#tf2-programs) and [when something else starts "
    f"TensorFlow]({UNDERSTANDS}#when-something-else-starts-tensorflow)."
)

# On the page of every rule: what recovery means for its fix. (Recovery sets aside the
# statements that do not parse, Python 2 or a broken notebook cell: TFM904, TFM902.)
RECOVERED_FIX = (
    "A fix never changes a byte of a set-aside statement, edits the statement just before or "
    "after one only where the safety net proves that the set-aside statements come back as "
    "they were, and never writes Python 3-only syntax there."
)


# On the page of every launch-file rule: what happens to a file its reader cannot read.
LAUNCH_RECOVERY = (
    "A launch file its reader cannot read (YAML that does not parse) gets one TFM902 finding "
    "that says where, and no other; nothing in it is fixed."
)


class RuleFamily(NamedTuple):
    rules: tuple[Rule, ...]
    # Byte strings of which a file must contain at least one before this family can find anything.
    triggers: tuple[bytes, ...] = ()
    # ...and, when given, one of these as well (see TENSORFLOW_MODULES).
    modules: tuple[bytes, ...] = ()
    # Names, or dotted tails of names (`learning.train`), of which the code itself must use
    # one, as a name, an attribute or in an import, for this family to find anything: the
    # last component of every API it starts from. Empty where its trigger words may sit in a
    # string (`os.environ["..."]`, a dict key) or a keyword, which no compiled name shows.
    names: tuple[str, ...] = ()
    # "module:function" run on every parsed file; None for families the engine reports itself.
    checker: str | None = None
    # Whether a project module that stands for TensorFlow (`from mypkg.compat import tf`) can
    # take the place of the module words: not for a family that needs `import tensorflow` in
    # the file itself.
    through_project: bool = True
    # "module:function" given CPython's syntax tree of a Python file that passed on the
    # family's words, and the rest the pre-filter knows of it (`prefilter.ScreenedFile`), in
    # its second stage: False when the family can find nothing there (its words prove little,
    # and libcst's parse costs ten times more).
    screen: str | None = None
    # Text in which the family's trigger words prove nothing (a test module's `__main__`
    # guard): the first stage looks for them with its matches cut out. The rule must agree
    # that such text makes nothing it could report.
    inert: re.Pattern[bytes] | None = None
    # "module:function" given the context of the engine's look at a file and that look's
    # findings, every one of whose fixes was applied: True only when the family is sure to find
    # nothing in the fixed text. The engine looks at a fixed text again unless every family
    # with a selected rule is sure; None: never.
    settled_by_fixes: str | None = None


@functools.cache
def load(reference: str) -> Callable[..., Any]:
    """The function a family names as "module:function", imported on first use."""
    module, _, function = reference.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found


# Inert patterns whose matches never hold a line break and never start right after a word
# character: cutting them out can neither join words across lines nor make a word of word
# characters from the text on either side of a cut, so for such triggers (`jax`, `XLA_`), only
# the lines that hold one need cutting (a large module's cut costs milliseconds).
_WITHIN_LINES: set[re.Pattern[bytes]] = set()
_WORD = re.compile(rb"\w+")


def within_lines(pattern: re.Pattern[bytes]) -> re.Pattern[bytes]:
    """`pattern`, marked as inert text of the kind `_WITHIN_LINES` describes."""
    _WITHIN_LINES.add(pattern)
    return pattern


# The bytes last searched, and what each word searched in them gave: the pre-filter asks about
# the same words of one file many times (the module words of every family, once per stage).
_searched: tuple[bytes, dict[bytes, bool]] = (b"", {})
# For a word that holds a shorter one the families also look for, that one (`tensorflow` of
# `tensorflow_hub`, `keras` of `tf_keras`): bytes without it are without the word too, and most
# files are, so the longer word's search is spared (see `share_words`).
_SHORTER: dict[bytes, bytes] = {}


def share_words(words: Iterable[bytes]) -> None:
    """Tell `holds` every word the families look for, so that it can find which hold which.
    (At every start, a pre-commit call's too: only a word found inside the others is compared
    with each.)"""
    every = sorted(set(words), key=lambda word: (len(word), word))
    joined = b"\n".join(every)
    for index, shorter in enumerate(every):
        if joined.count(shorter) > 1:
            for word in every[index + 1 :]:
                if shorter in word:  # longer: the words are distinct
                    _SHORTER[word] = shorter  # the longest last: the rarest


def holds(raw: bytes, word: bytes) -> bool:
    """`word in raw`, remembered for the last bytes searched."""
    global _searched
    searched = _searched
    if searched[0] is not raw:
        searched = _searched = (raw, {})
    found = searched[1].get(word)
    if found is None:
        shorter = _SHORTER.get(word)
        if shorter is not None and not holds(raw, shorter):
            found = searched[1][word] = False
        else:
            found = searched[1][word] = word in raw
    return found


def words_searched(raw: bytes) -> dict[bytes, bool]:
    """What `holds` has found of each word in `raw` so far; empty where it last searched other
    bytes."""
    searched = _searched
    return dict(searched[1]) if searched[0] is raw else {}


def searched_already(raw: bytes, found: dict[bytes, bool]) -> None:
    """Let `holds` take `found` (`words_searched` of the same bytes, in another process or
    before other bytes were searched) as what `raw` holds."""
    global _searched
    _searched = (raw, dict(found))


def holds_any(raw: bytes, words: Iterable[bytes]) -> bool:
    """Whether `raw` holds one of the words (see `holds`)."""
    return any(holds(raw, word) for word in words)


def holds_a_trigger(
    raw: bytes, triggers: tuple[bytes, ...], inert: re.Pattern[bytes] | None
) -> bool:
    """Whether `raw` holds one of the words outside the inert text: the first stage's test,
    which a rule that looks for its own words again must share."""
    if inert is None:
        return holds_any(raw, triggers)
    held = [trigger for trigger in triggers if holds(raw, trigger)]
    if not held:
        return False
    # Rare: only a file that holds the words is searched for the text that makes them inert.
    if inert in _WITHIN_LINES and all(_WORD.fullmatch(trigger) for trigger in held):
        raw = lines_holding(raw, held)
    cut = inert.sub(b"", raw)
    return any(trigger in cut for trigger in held)
