"""The pre-filter, in two stages, so that libcst parses only files that may hold a finding.

1. Bytes: a file that holds none of the selected rules' trigger words (or, for families that
   resolve names, no TensorFlow module name) cannot hold a finding, so it is never decoded,
   parsed, or even allowed to import libcst.
2. Code: for Python source that passed, CPython compiles it (a tenth of libcst's parse) and the
   names its code uses must include a family's API names. A word in a docstring, a comment or
   another name (`SessionRunHook`) lets a file through the first stage, not this one.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from types import CodeType
from typing import TYPE_CHECKING, Literal

from tfmemlint.reading.source import (
    SourceError,
    SourceText,
    ascii_as_bytes,
    compile_python,
    lines_holding,
    parse_python,
    text_as_parsed,
)
from tfmemlint.rules import FAMILIES, LAUNCH_FAMILIES
from tfmemlint.rules.family import (
    TENSORFLOW_MODULES,
    RuleFamily,
    holds_a_trigger,
    holds_any,
    load,
)
from tfmemlint.rules.jax_allocator import SHARED_GPU_PREALLOCATION
from tfmemlint.rules.programs import JAX_WORDS
from tfmemlint.rules.unconfigured_program import FAMILY as UNCONFIGURED_PROGRAM_FAMILY
from tfmemlint.rules.unconfigured_program import THROUGH_PROJECT_WORDS

if TYPE_CHECKING:
    from tfmemlint.project.index import FileResolver

# (trigger words, the text in which they prove nothing, if any).
Triggers = tuple[tuple[bytes, ...], re.Pattern[bytes] | None]
# (module words, trigger words): a file passes when, where module words are given, it holds
# one of them, and it holds a trigger word of one group outside that group's inert text.
Condition = tuple[tuple[bytes, ...], tuple[Triggers, ...]]


def _selected_families(selected: frozenset[str]) -> Iterator[RuleFamily]:
    """Each family with a selected rule and a trigger word."""
    for family in FAMILIES:
        if family.triggers and any(rule.code in selected for rule in family.rules):
            yield family


@lru_cache(maxsize=8)
def _conditions(selected: frozenset[str]) -> tuple[Condition, ...]:
    """One condition per set of module words, holding the trigger words of every selected
    family that needs those modules: the module words, rarer, are searched once per file, and
    first."""
    grouped: dict[tuple[bytes, ...], dict[re.Pattern[bytes] | None, set[bytes]]] = {}
    for family in _selected_families(selected):
        grouped.setdefault(family.modules, {}).setdefault(family.inert, set()).update(
            family.triggers
        )
    conditions = []
    for modules, by_inert in grouped.items():
        # The plain words first: most files that pass, pass on them.
        groups = sorted(by_inert.items(), key=lambda group: group[0] is not None)
        triggers = tuple((tuple(sorted(words)), inert) for inert, words in groups)
        conditions.append((modules, triggers))
    return tuple(conditions)


def launch_file_may_have_findings(raw: bytes, selected: frozenset[str]) -> bool:
    """The pre-filter of a launch file (a Dockerfile, a Compose file, a script): it holds one of
    the words of a selected launch family, or it is never decoded or read."""
    return any(
        holds_a_trigger(raw, family.triggers, family.inert)
        for family in LAUNCH_FAMILIES
        if any(rule.code in selected for rule in family.rules)
    )


def may_have_findings(raw: bytes, selected: frozenset[str]) -> bool:
    """The first stage, for any file (a notebook's JSON too)."""
    # `in` on bytes is a C-speed substring search: several times faster than one regex of
    # alternatives, which Python's engine tries at every byte.
    return any(_holds(raw, condition) for condition in _conditions(selected))


def needs_project(raw: bytes, selected: frozenset[str]) -> bool:
    """Whether a file that failed the first stage holds a trigger word of a family that needs
    TensorFlow's module words: it may still reach TensorFlow through a module of the project's
    own (`from mypkg.compat import tfv1`), which the project index can tell."""
    return holds_any(raw, _module_family_triggers(selected))


def names_a_project_api(raw: bytes, selected: frozenset[str]) -> bool:
    """Whether Python source that `needs_project` also spells, as a whole word, an API name
    of a family that can reach TensorFlow through the project, as the second stage would find
    it among the names the code uses (`SessionMiddleware` holds the word `Session`, not the
    name); or holds the words of such a family whose words may sit in a string. Asked before
    the project index, which costs far more. A file it sets aside can hold no rule's finding;
    like any file the first stage sets aside, it is not compiled either, so a syntax error in
    it goes unreported. Not for a notebook's JSON, whose escapes (`\\nSession`) hide where a
    word begins."""
    in_text, api_names = _project_api_names(selected)
    return holds_any(raw, in_text) or (api_names is not None and api_names.search(raw) is not None)


@lru_cache(maxsize=8)
def _module_family_triggers(selected: frozenset[str]) -> tuple[bytes, ...]:
    return tuple(
        sorted(
            {
                trigger
                for family in _selected_families(selected)
                if family.modules and family.through_project
                for trigger in family.triggers
            }
        )
    )


@lru_cache(maxsize=8)
def _project_api_names(
    selected: frozenset[str],
) -> tuple[tuple[bytes, ...], re.Pattern[bytes] | None]:
    """(the trigger words of the families that reach TensorFlow through the project and have no
    API names, the last component of every API name of those that have them, as a whole
    word). A non-ASCII neighbour counts as a word's edge: more files pass, never fewer."""
    in_text: set[bytes] = set()
    last: set[str] = set()
    for family in _selected_families(selected):
        if not (family.modules and family.through_project):
            continue
        if family.names:
            last.update(name.rpartition(".")[2] for name in family.names)
        else:
            in_text.update(family.triggers)
    if not last:
        return tuple(sorted(in_text)), None
    words = b"|".join(re.escape(word.encode()) for word in sorted(last))
    return tuple(sorted(in_text)), re.compile(rb"(?<!\w)(?:" + words + rb")(?!\w)")


# (module words, each name's components) of a family whose every finding needs its names used
# in code; a file passes when its code uses one module word and all components of one name.
CodeCondition = tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]


# A byte condition and the family's screen of the syntax tree, if it has one.
ScreenedCondition = tuple[Condition, str | None]


class ScreenedFile:
    """What a family's screen sees of a file beside its syntax tree."""

    __slots__ = ("_decoded", "_parsed", "_text", "_tree", "notebook", "project", "raw")

    def __init__(
        self,
        raw: bytes,
        notebook: bool = False,
        project: Callable[[], FileResolver | None] = lambda: None,
    ) -> None:
        self.raw = raw
        # The bytes are the code of a notebook's cells.
        self.notebook = notebook
        # The file's view of the project index, as the rules will have it; asked for only
        # when a screen needs it.
        self.project = project
        self._text: str | None = None
        self._decoded = False
        self._tree: ast.Module | None = None
        self._parsed = False

    @property
    def text(self) -> str | None:
        """The text the rules read, where the syntax tree spells it (`text_as_parsed`); None
        where it may not, or none can be read. Decoded once, for every screen that asks."""
        if not self._decoded:
            self._text, self._decoded = text_as_parsed(self.raw), True
        return self._text

    @property
    def parsed(self) -> bool:
        """Whether `tree` was asked for already."""
        return self._parsed

    @property
    def tree(self) -> ast.Module | None:
        """CPython's syntax tree of the bytes, parsed once for every screen that asks; None
        where CPython cannot parse them."""
        if not self._parsed:
            with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
                self._tree = parse_python(self.raw)
            self._parsed = True
        return self._tree


@lru_cache(maxsize=8)
def _code_conditions(
    selected: frozenset[str],
) -> tuple[tuple[ScreenedCondition, ...], tuple[tuple[Condition, CodeCondition], ...]]:
    """(byte conditions of the families whose words may sit in strings, code conditions of the
    rest)."""
    in_text: list[ScreenedCondition] = []
    in_code: list[tuple[Condition, CodeCondition]] = []
    for family in _selected_families(selected):
        condition = (family.modules, ((tuple(sorted(family.triggers)), family.inert),))
        if family.names:
            modules = tuple(module.decode() for module in family.modules)
            names = tuple(tuple(name.split(".")) for name in family.names)
            in_code.append((condition, (modules, names)))
        else:
            in_text.append((condition, family.screen))
    return tuple(in_text), tuple(in_code)


def code_may_have_findings(
    raw: bytes,
    selected: frozenset[str],
    through_project: bool = False,
    file: ScreenedFile | None = None,
) -> bool:
    """The second stage, for Python source that passed the first (not a notebook's JSON, whose
    code sits in strings). It compiles: workers run it, beside the parse. `through_project`:
    the file reaches TensorFlow through a project module, so it needs no module word. `file`:
    what the screens see of it besides (by default, a module checked outside any project).

    Sound because the rules resolve a call only through names the code spells: an import, an
    alias (`S = tf.Session`) or an attribute. CPython keeps every such name, dead code's
    included, except in annotations it never evaluates (under `from __future__ import
    annotations`, and on local variables): a session created inside one is not found. Source
    CPython cannot compile goes on, for libcst to report what is wrong with it. A family's
    screen sees CPython's syntax tree where the family passed on its words alone.
    """
    in_text, in_code = _code_conditions(selected)
    if through_project:
        in_text = tuple((((), groups), screen) for (_, groups), screen in in_text)
        in_code = tuple((((), groups), ((), n)) for (_, groups), (_, n) in in_code)
    screens = []
    for condition, screen in in_text:
        if _holds(raw, condition):
            if screen is None:
                return True
            screens.append(screen)
    file = file or ScreenedFile(raw)
    # Only a family whose words the bytes hold can use its names in code: no compile for a
    # file that came this far on a screened family's words alone.
    named = tuple(names for words, names in in_code if _holds(raw, words))
    if named and _names_match(file, named):
        return True
    return bool(screens) and _screened_in(file, screens)


def _names_match(file: ScreenedFile, in_code: tuple[CodeCondition, ...]) -> bool:
    used = _names_in_code(file)
    if used is None:
        return True
    spelled = "\n".join(used)  # module words are matched as in bytes: `tensorflow_estimator`
    components = {part for name in used for part in name.split(".")}
    return any(
        (not modules or any(module in spelled for module in modules))
        and any(all(part in components for part in name) for name in names)
        for modules, names in in_code
    )


def _screened_in(file: ScreenedFile, screens: list[str]) -> bool:
    """Whether a family's screen lets the file through (or CPython cannot parse it)."""
    tree = file.tree
    return tree is None or any(load(screen)(tree, file) for screen in screens)


def _imports_tensorflow_itself(file: ScreenedFile) -> bool:
    """Whether a line of the bytes starts with an import of TensorFlow or Keras by name
    (`import tensorflow as tf`, `from keras import layers`; not `# import tensorflow`, nor
    `tensorflow_tts`), and the line is code. Where the import is real, the names its code uses
    hold their module words, so a project stand-in adds nothing to what the second stage saw,
    and TFM205's screen anchors on it, so it judged the program, the project's modules
    included; JAX reached through the project (TFM208) is still looked for.

    The line is code where CPython's tree, parsed for a screen, holds such an import, or else
    where the names of its compile (the second stage's) hold TensorFlow's or Keras's: a line
    in a string leaves neither. Where neither may spell the text the rules read, it is not."""
    if _TENSORFLOW_IMPORT.search(lines_holding(file.raw, [b"tensorflow", b"keras"])) is None:
        return False
    if file.text is None:
        return False
    imported: Iterable[str]
    if file.parsed:
        # Here, not at the top: a run whose files pass no stage never imports the summaries.
        from tfmemlint.project.module_summary import imports_in_tree

        tree = file.tree
        imported = imports_in_tree(tree) if tree is not None else ()
    else:
        # A dotted name there is an import's; a plain `tensorflow` may be a variable's too,
        # which makes a line in a string pass for code (rare: a miss only with a project
        # stand-in beside it).
        imported = _names_in_code(file) or ()
    return any(name.partition(".")[0] in ("tensorflow", "keras") for name in imported)


_TENSORFLOW_IMPORT = re.compile(
    rb"^[ \t]*(?:from|import)[ \t]+(?:tensorflow|keras)(?!\w)", re.MULTILINE
)


def _holds(raw: bytes, condition: Condition) -> bool:
    modules, groups = condition
    if modules and not holds_any(raw, modules):
        return False
    return any(holds_a_trigger(raw, triggers, inert) for triggers, inert in groups)


def too_deep_for_python(raw: bytes) -> tuple[str, int, int] | None:
    """(CPython's message, row, column) when it refuses `raw` as nested too deeply; else None.

    Such a file must never reach libcst: its native parser has no depth limit, and a little
    deeper than the limits of CPython's parser it overflows the stack, which kills the process
    (unary minus: 8,000 deep against CPython's 7,000; `lambda:` 3,500 against 3,000; brackets
    1,200 against 200). Python cannot run the file either: a syntax error to report. (The limit
    of CPython's compiler, a RecursionError, differs between versions and stays libcst's to
    judge.)
    """
    outcome = _compiled(raw)
    if isinstance(outcome, MemoryError):  # the parser's stack: a bare MemoryError before 3.12
        return str(outcome) or "the code is nested too deeply for Python's parser", 1, 1
    if isinstance(outcome, SyntaxError) and outcome.msg == "too many nested parentheses":
        return outcome.msg, outcome.lineno or 1, outcome.offset or 1
    return None


def python2_for_python(raw: bytes) -> bool:
    """Whether CPython refuses `raw` with one of its messages for Python 2 code: then recovery
    goes first, since libcst reads some of it (`except E, e:`) as newer Python."""
    from tfmemlint.reading.recovery import PYTHON2_MESSAGES

    outcome = _compiled(raw)
    return isinstance(outcome, SyntaxError) and any(
        marker in (outcome.msg or "") for marker in PYTHON2_MESSAGES
    )


@lru_cache(maxsize=1)
def _compiled(raw: bytes) -> CodeType | Exception:
    """CPython's compile of `raw`, or what it raised: the second stage and the depth check ask
    about the same file in a row."""
    try:
        return compile_python(raw)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return exc.with_traceback(None)


def _names_in_code(file: ScreenedFile) -> set[str] | None:
    """Every name the compiled code uses (globals, attributes, imported modules and names), or
    None when CPython cannot compile it."""
    code = _code_as_read(file)
    if code is None:
        return None
    used: set[str] = set()
    pending = [code]
    while pending:
        code = pending.pop()
        used.update(code.co_names)
        pending.extend(const for const in code.co_consts if isinstance(const, CodeType))
    return used


def _code_as_read(file: ScreenedFile) -> CodeType | None:
    """CPython's compile of the text the rules read: of the bytes, where CPython surely decodes
    them alike (`text_as_parsed`), else of the text as the rules decode it (a lone CR may hide
    or show a line of a stateful codec's text); None where it cannot compile, or the bytes
    cannot be decoded."""
    if file.text is not None:
        code = _compiled(file.raw)
        return code if isinstance(code, CodeType) else None
    try:
        return compile_python(SourceText.decode(file.raw).text)
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


@lru_cache(maxsize=1)
def any_trigger() -> re.Pattern[str]:
    """Any rule's trigger word, in text: what a region must not hold to be set aside unparsed."""
    words = {t for family in FAMILIES for t in (*family.triggers, *family.modules)}
    return re.compile("|".join(re.escape(t.decode()) for t in sorted(words)))


def first_stage(
    raw: bytes,
    selected: frozenset[str],
    resolver: Callable[[], FileResolver | None],
    notebook_code: bool = False,
) -> Literal["words", "entry", "program", "project", ""]:
    """The pre-filter's first stage: "words" when the file holds the words a finding needs;
    "entry" when it is an entry point TFM205 cannot tell by its words (a TensorFlow module that
    a script entry of pyproject.toml runs); "program" when it holds an entry point's words and
    imports project modules that reach TensorFlow's (the program may start it through them);
    "project" when it lacks only TensorFlow's module words but imports a project module that
    stands for TensorFlow; "" when it cannot hold a finding. `resolver` gives the file's view
    of the project index, asked for only when the words alone do not decide. `notebook_code`:
    the bytes are a notebook's cells as one module, not its JSON."""
    if not ascii_as_bytes(raw):
        return "words"  # the bytes may spell the words otherwise: no search can tell
    return _first_stage(raw, selected, resolver, notebook_code)


def _first_stage(
    raw: bytes,
    selected: frozenset[str],
    resolver: Callable[[], FileResolver | None],
    notebook_code: bool = False,
) -> Literal["words", "entry", "program", "project", ""]:
    """`first_stage`, of bytes that spell every ASCII word as the text does."""
    if may_have_findings(raw, selected):
        return "words"
    if _script_entry(raw, selected, resolver):
        return "entry"
    if holds_any(raw, TENSORFLOW_MODULES):
        # It names TensorFlow, and holds none of the words of the families that need its
        # names: neither TensorFlow through the project nor a project stand-in can hold one;
        # JAX through the project can (TFM208).
        if _entry_words_looked_for(selected) and not _notebook(raw, notebook_code):
            # `may_have_findings` just looked for every word of TFM205's family, whose modules
            # this file names, and found none: nor its entry words, which are some of them.
            return ""
        return _jax_through_project(raw, selected, resolver, notebook_code)
    return _through_the_project(raw, selected, resolver, notebook_code)


def _jax_through_project(
    raw: bytes,
    selected: frozenset[str],
    resolver: Callable[[], FileResolver | None],
    notebook_code: bool = False,
) -> Literal["program", ""]:
    """For TFM208: "program" when the file holds an entry point's words and imports project
    modules that reach JAX's."""
    jax_words = JAX_WORDS if SHARED_GPU_PREALLOCATION.code in selected else ()
    return "program" if _program_through_project(raw, jax_words, resolver, notebook_code) else ""


def _through_the_project(
    raw: bytes,
    selected: frozenset[str],
    resolver: Callable[[], FileResolver | None],
    notebook_code: bool = False,
    file: ScreenedFile | None = None,
) -> Literal["program", "project", ""]:
    """The first stage's ways through the project's modules: "program" when the file holds an
    entry point's words and imports project modules that reach TensorFlow's or JAX's; "project"
    when it imports a project module that stands for TensorFlow, and its code may hold a
    finding once it does; "" when neither. `file`: what the second stage saw of it, if it
    looked."""
    if _program_through_project(raw, _program_words(selected), resolver, notebook_code):
        return "program"
    if not needs_project(raw, selected):
        return ""
    project = resolver()
    if project is None:
        return ""
    if project.filename.endswith(".ipynb"):
        return "project"  # its code sits in JSON strings: the cells are asked, once read
    if not names_a_project_api(raw, selected):
        return ""
    # What the second stage says of the file once through the project, first: where its code
    # holds no finding even then, whether a project module stands for TensorFlow changes
    # nothing, and that answer may cost a walk through many of the project's modules (a
    # Django app whose `Session` sits in strings).
    file = file or ScreenedFile(raw, notebook_code, resolver)
    if not code_may_have_findings(raw, selected, True, file):
        return ""
    return "project" if project.reaches_tensorflow(raw) else ""


def prefilter_verdict(
    raw: bytes,
    selected: frozenset[str],
    resolver: Callable[[], FileResolver | None],
    notebook: bool = False,
) -> Literal["parse", "screened", ""]:
    """Both stages of the pre-filter, as every caller applies them to a file's bytes (with
    `notebook`, a notebook's cells as one module): "parse" when the engine must see the file,
    "screened" when its code rules a finding out, "" when its bytes do."""
    if not ascii_as_bytes(raw):
        return "parse"  # the words may sit in other bytes: neither stage can tell
    if notebook and _tensorflow_for_tfm205(raw, selected):
        return "parse"  # every notebook is an entry point, whatever else its words hold
    passes = _first_stage(raw, selected, resolver, notebook)
    if not passes:
        return ""
    screened = ScreenedFile(raw, notebook, resolver)
    if passes in ("entry", "program") or code_may_have_findings(
        raw, selected, passes == "project", screened
    ):
        return "parse"
    if passes == "words":
        # The families whose words it holds find nothing in its code. Those words may sit in a
        # comment (`# tensorflow`) or a package's name (`tensorflow_tts`), and the file may
        # still reach TensorFlow or JAX through the project, as a file without them would.
        if notebook or not _imports_tensorflow_itself(screened):
            route = _through_the_project(raw, selected, resolver, notebook, screened)
        else:  # only JAX through the project can add to what it was judged with
            route = _jax_through_project(raw, selected, resolver, notebook)
        if route == "program" or (
            route == "project" and code_may_have_findings(raw, selected, True, screened)
        ):
            return "parse"
    # A script entry holds TFM205's finding whatever the names its code uses.
    return "parse" if _script_entry(raw, selected, resolver) else "screened"


@lru_cache(maxsize=8)
def _program_words(selected: frozenset[str]) -> tuple[bytes, ...]:
    """The module words a program may reach through the project for a selected rule to find
    it there: TensorFlow's (TFM205's family), JAX's (TFM208)."""
    words: tuple[bytes, ...] = ()
    if any(rule.code in selected for rule in UNCONFIGURED_PROGRAM_FAMILY.rules):
        words += UNCONFIGURED_PROGRAM_FAMILY.modules
    if SHARED_GPU_PREALLOCATION.code in selected:
        words += JAX_WORDS
    return words


def _notebook(raw: bytes, notebook_code: bool) -> bool:
    return notebook_code or b'"nbformat"' in raw


@lru_cache(maxsize=8)
def _entry_words_looked_for(selected: frozenset[str]) -> bool:
    """Whether the first stage's conditions hold TFM205's family, with its inert text, and so
    its entry words (THROUGH_PROJECT_WORDS, a part of its words) for a file that names one of
    its modules."""
    return UNCONFIGURED_PROGRAM_FAMILY in _selected_families(selected)


def _program_through_project(
    raw: bytes,
    words: tuple[bytes, ...],
    resolver: Callable[[], FileResolver | None],
    notebook_code: bool = False,
) -> bool:
    """An entry point by its words (TFM205's), or a notebook, which always is one, whose code
    imports project modules that hold one of `words` (module words its own bytes lack): it may
    start that framework through them."""
    family = UNCONFIGURED_PROGRAM_FAMILY
    if not words or b"import" not in raw:
        return False
    notebook = _notebook(raw, notebook_code)
    if not notebook and not holds_a_trigger(raw, THROUGH_PROJECT_WORDS, family.inert):
        return False
    project = resolver()
    if project is None:
        return False
    if project.filename.endswith(".ipynb") and not notebook_code:
        return True  # its code sits in JSON strings: the cells are asked, once read
    return project.imports_words(raw, words) is not None


def _script_entry(
    raw: bytes, selected: frozenset[str], resolver: Callable[[], FileResolver | None]
) -> bool:
    """A TensorFlow module that a script entry of pyproject.toml runs (TFM205): an entry point
    whatever its words."""
    if not _tensorflow_for_tfm205(raw, selected):
        return False
    project = resolver()
    return project is not None and bool(project.script_functions())


def _tensorflow_for_tfm205(raw: bytes, selected: frozenset[str]) -> bool:
    """Whether the bytes may reach TensorFlow as TFM205 and TFM207 see it (TensorFlow itself,
    Keras, a library that starts it), and one of the two is selected."""
    family = UNCONFIGURED_PROGRAM_FAMILY
    return holds_any(raw, family.modules) and any(rule.code in selected for rule in family.rules)
