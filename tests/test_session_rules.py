"""TFM101/102/103/190 on golden strings: the spellings and shapes that current TensorFlow cannot
run (TF1-only APIs), the traps that must never be findings, and the cases that must not be fixed."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tests.conftest import lint_text
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text

GROWTH = "ConfigProto(gpu_options={p}GPUOptions(allow_growth=True))"


def settings(*select: str, policy: str = "growth") -> Settings:
    return Settings(Policy.parse(policy), select_rules(ALL_RULES, extend_select=select))


def codes(source: str, *select: str) -> list[str]:
    return [f.code for f in lint_text("t.py", textwrap.dedent(source), settings(*select))]


def fixed(source: str, policy: str = "growth") -> str:
    text, _, _remaining = fix_text("t.py", textwrap.dedent(source), settings(policy=policy))
    return text


def dedent(source: str) -> str:
    return textwrap.dedent(source)


# -- spellings ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "backend",
    ["from keras import backend as K", "import keras.backend.tensorflow_backend as K"],
)
def test_keras2s_backend_hands_on_tensorflow(backend: str) -> None:
    """Keras 2's backend imported TensorFlow and hands it on: `K.tf.Session(...)`, the
    threads-only session of many a TF1-era helper."""
    source = (
        f"{backend}\n"
        "K.set_session(K.tf.Session(config=K.tf.ConfigProto(intra_op_parallelism_threads=2)))\n"
    )
    assert codes(source) == ["TFM102"]
    assert "gpu_options=config_pb2.GPUOptions(allow_growth=True)" in fixed(source)
    assert codes(fixed(source)) == []
    assert codes(f"{backend}\nsess = K.tf.Session()\n") == ["TFM101"]


def test_tf1_top_level_session() -> None:
    assert fixed("import tensorflow as tf\nsess = tf.Session()\n") == (
        "import tensorflow as tf\n"
        "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n"
    )


def test_from_tensorflow_import_session_alias_adds_config_pb2_import() -> None:
    source = "from tensorflow import Session as S\n\nsess = S()\n"
    assert fixed(source) == (
        "from tensorflow import Session as S\n"
        "from tensorflow.core.protobuf import config_pb2\n\n"
        "sess = S(config=config_pb2.ConfigProto(gpu_options=config_pb2.GPUOptions(allow_growth=True)))\n"
    )


def test_alias_in_reach_is_used_instead_of_an_import() -> None:
    source = "import tensorflow as tf\nfrom tensorflow import Session as S\nsess = S()\n"
    assert "S(config=tf.ConfigProto(gpu_options=tf.GPUOptions(" in fixed(source)
    source = "import tensorflow as tf\nfrom tensorflow.compat.v1 import Session as S\nsess = S()\n"
    assert "S(config=tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(" in fixed(source)


def test_imported_protos_are_used_bare() -> None:
    source = "from tensorflow import ConfigProto, GPUOptions, Session\nsess = Session()\n"
    assert "Session(config=ConfigProto(gpu_options=GPUOptions(allow_growth=True)))" in fixed(source)


def test_config_pb2_spelling() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        from tensorflow.core.protobuf import config_pb2
        sess = tf.Session(config=config_pb2.ConfigProto())
        """
    )
    assert "config_pb2.ConfigProto(gpu_options=config_pb2.GPUOptions(allow_growth=True))" in fixed(
        source
    )


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import tensorflow as tf", "tf.Session()"),
        ("import tensorflow", "tensorflow.Session()"),
        ("import tensorflow.compat.v1 as tf", "tf.Session()"),
        ("import tensorflow.compat.v1 as tf", "tf.compat.v1.Session()"),
        ("import tensorflow as tf", "tf.compat.v1.Session()"),
        ("from tensorflow.compat import v1 as tfv1", "tfv1.Session()"),
        ("from tensorflow import Session as S", "S()"),
        ("from tensorflow.python.client import session as tf_session", "tf_session.Session()"),
        (
            "from tensorflow.python.client.session import InteractiveSession",
            "InteractiveSession(config=c)",
        ),
        ("import tensorflow as tf\ntf = tf.compat.v1", "tf.Session()"),
        (
            "try:\n    import tensorflow.compat.v1 as tf\nexcept ImportError:\n    import tensorflow as tf",
            "tf.Session()",
        ),
        ("import tensorflow as tf\nMakeSession = tf.Session", "MakeSession()"),
        ("from tensorflow import *", "Session()"),
    ],
)
def test_every_spelling_resolves(imports: str, call: str) -> None:
    source = f"{imports}\nimport tensorflow as _tf\nc = _tf.ConfigProto()\nsess = {call}\n"
    assert codes(source) in (["TFM101"], ["TFM102"])


@pytest.mark.parametrize(
    "source",
    [
        "import requests\ns = requests.Session()\n",
        "from requests import Session\ns = Session()\n",
        "from sqlalchemy.orm import Session\nwith Session(engine) as session:\n    pass\n",
        "import tensorflow as tf\nref = tf.Session\n",
        "import tensorflow as tf\ntext = 'tf.Session()'\n# tf.Session()\n",
        "import tensorflow as tf\nclass Session:\n    pass\ns = Session()\n",
        "import tensorflow as tf\ndef f(Session):\n    return Session()\n",
        "import tensorflow as tf\ntf.Session.reset('grpc://x')\n",
        "import tensorflow as tf\nclass MySession(tf.Session):\n    pass\n",
        "import tensorflow as tf\nfrom other import Session\ns = Session()\n",
        "import tensorflow as tf\ns = tf.InteractiveSession()\n",
        "import tensorflow as tf\ns = tf.InteractiveSession(config=None)\n",
    ],
)
def test_traps_are_not_findings(source: str) -> None:
    assert codes(source, "TFM190") == []


# A star import reaches a name only where no local one hides it. Each of these binds `Session`
# locally, so the call raises UnboundLocalError or calls the local; it never makes a session.
@pytest.mark.parametrize(
    "body",
    [
        "def f():\n    Session: type\n    return Session()\n",
        "def f():\n    try:\n        pass\n    except* ValueError as Session:\n"
        "        return Session()\n",
        "def f(x):\n    match x:\n        case {**Session}:\n            return Session()\n",
        "def f[Session]():\n    return Session()\n",
        "class C[Session]:\n    def m(self):\n        return Session()\n",
        "type Alias[Session] = Session()\n",
    ],
)
def test_local_names_hide_a_star_import(body: str) -> None:
    assert codes(f"from tensorflow import *\n{body}", "TFM190") == []


@pytest.mark.parametrize(
    "source",
    [
        # In a module or a class, an annotation without a value binds nothing.
        "from tensorflow import *\nSession: type\nsess = Session()\n",
        "from tensorflow import *\nclass C:\n    Session: type\n    sess = Session()\n",
        # A declared name that is then assigned is resolved from its assignment.
        "import tensorflow as tf\ndef f():\n    make: type\n    make = tf.Session\n"
        "    return make()\n",
        # Type parameters hide nothing else.
        "import tensorflow as tf\nclass C[T]:\n    def m(self):\n        return tf.Session()\n",
    ],
)
def test_what_does_not_hide_a_star_import_or_a_binding(source: str) -> None:
    assert codes(source) == ["TFM101"]


def test_a_type_alias_in_a_class_sees_the_class_names() -> None:
    source = "from tensorflow import *\nclass C:\n    Session = object\n    type A = Session()\n"
    assert codes(source, "TFM190") == []


def test_nonlocal_reaches_past_a_bare_annotation() -> None:
    source = """\
        from tensorflow import *
        import tensorflow as tf
        def f():
            Session: type
            def g():
                nonlocal Session
                Session = tf.Session
            g()
            return Session()
        """
    assert codes(source) == ["TFM101"]


@pytest.mark.parametrize(
    "source, expected",
    [
        # The generic class, in a function, must not leave later code in the wrong scope.
        (
            """\
            import tensorflow as tf
            config = tf.ConfigProto()
            def make():
                class Box[T]:
                    pass
                config = None
                return config
            config.gpu_options.allow_growth = True
            sess = tf.Session(config=config)
            """,
            [],
        ),
        # Nor credit a class's own config settings to the module's config.
        (
            """\
            import tensorflow as tf
            config = tf.ConfigProto()
            class Outer:
                class Inner[T]:
                    pass
                config = tf.ConfigProto()
                config.gpu_options.allow_growth = True
            sess = tf.Session(config=config)
            """,
            ["TFM102"],
        ),
    ],
)
def test_generic_classes_keep_later_settings_in_their_scope(
    source: str, expected: list[str]
) -> None:
    assert codes(source) == expected


# -- memory-aware configs are never findings ---------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "c = tf.ConfigProto()\nc.gpu_options.allow_growth = True\ns = tf.Session(config=c)\n",
        "c = tf.ConfigProto()\nc.gpu_options.per_process_gpu_memory_fraction = 0.3\ns = tf.Session(config=c)\n",
        "s = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n",
        "o = tf.GPUOptions(per_process_gpu_memory_fraction=0.5)\ns = tf.Session(config=tf.ConfigProto(gpu_options=o))\n",
        "o = tf.GPUOptions()\no.allow_growth = True\ns = tf.Session(config=tf.ConfigProto(gpu_options=o))\n",
        "c = tf.ConfigProto()\nc.gpu_options.experimental.virtual_devices.add(memory_limit_mb=[512])\ns = tf.Session(config=c)\n",
        "s = tf.Session(config=tf.ConfigProto(device_count={'GPU': 0}))\n",
        "c = tf.ConfigProto()\nc.device_count['GPU'] = 0\ns = tf.Session(config=c)\n",
        "s = tf.Session(config=tf.ConfigProto(gpu_options={'allow_growth': True}))\n",
        "c = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=False, per_process_gpu_memory_fraction=0.4))\ns = tf.Session('', None, c)\n",
        "c = tf.ConfigProto()\ndef f():\n    return tf.Session(config=c)\nc.gpu_options.allow_growth = True\n",
    ],
)
def test_memory_aware_configs(source: str) -> None:
    assert codes("import tensorflow as tf\n" + source, "TFM190") == []


# -- findings without a fix --------------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "s = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=False)))\n",
        "c = tf.ConfigProto()\nc.gpu_options.allow_growth = False\ns = tf.Session(config=c)\n",
        "c = tf.ConfigProto()\nc.gpu_options.per_process_gpu_memory_fraction = 0\ns = tf.Session(config=c)\n",
    ],
)
def test_explicit_off_is_reported_and_never_flipped(source: str) -> None:
    source = "import tensorflow as tf\n" + source
    assert codes(source) == ["TFM103"]
    assert fixed(source) == source


def test_setting_on_the_same_line_is_not_fixable() -> None:
    source = "import tensorflow as tf\nc = tf.ConfigProto(); s = tf.Session(config=c)\n"
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM102" and finding.fix is None
    assert fixed(source) == source


# -- cannot be resolved: TFM190, off by default, never fixed ------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "def f(config):\n    return tf.Session(config=config)\n",
        "class A:\n    def f(self):\n        return tf.Session(config=self.config)\n",
        "from helpers import make_config\ns = tf.Session(config=make_config())\n",
        "def f(**kwargs):\n    return tf.Session(**kwargs)\n",
        "def f(*args):\n    return tf.Session(*args)\n",
        "c = tf.ConfigProto()\ntune(c)\ns = tf.Session(config=c)\n",
        "c = tf.ConfigProto()\ntune(config=c)\ns = tf.Session(config=c)\n",
        "c = tf.ConfigProto()\nc.gpu_options.CopyFrom(other)\ns = tf.Session(config=c)\n",
        "c = d = tf.ConfigProto()\ns = tf.Session(config=c)\n",
        "if x:\n    c = tf.ConfigProto()\n    c.gpu_options.allow_growth = True\nelse:\n    c = tf.ConfigProto()\ns = tf.Session(config=c)\n",
        "c = tf.ConfigProto()\nc.gpu_options.allow_growth = flag\ns = tf.Session(config=c)\n",
        "def g():\n    global c\n    c = None\nc = tf.ConfigProto()\ns = tf.Session(config=c)\n",
        "s = tf.Session(config=tf.ConfigProto(**options))\n",
        "s = tf.Session(config=c if x else None)\n",
    ],
)
def test_unresolvable_configs_are_off_by_default(source: str) -> None:
    source = "import tensorflow as tf\n" + source
    assert codes(source) == []
    assert codes(source, "TFM190") == ["TFM190"]
    assert fixed(source) == source


# -- fix shapes --------------------------------------------------------------------------------
def test_setting_after_the_session_is_too_late() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        c = tf.ConfigProto()
        s = tf.Session(config=c)
        c.gpu_options.allow_growth = True
        """
    )
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM102"
    assert "line 4 comes after the session" in finding.message


def test_gpu_options_variable_gets_the_setting() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        opts = tf.GPUOptions(visible_device_list="0")
        s = tf.Session(config=tf.ConfigProto(gpu_options=opts))
        """
    )
    assert fixed(source) == dedent(
        """\
        import tensorflow as tf
        opts = tf.GPUOptions(visible_device_list="0")
        opts.allow_growth = True
        s = tf.Session(config=tf.ConfigProto(gpu_options=opts))
        """
    )


def test_two_sessions_sharing_a_config_get_one_line() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        c = tf.ConfigProto()
        a = tf.Session(config=c)
        b = tf.Session(config=c)
        """
    )
    assert fixed(source).count("c.gpu_options.allow_growth = True") == 1


def test_several_sessions_in_one_with_statement() -> None:
    source = "import tensorflow as tf\nwith tf.Session() as a, tf.Session() as b:\n    pass\n"
    assert fixed(source).count("config=tf.ConfigProto(") == 2


@pytest.mark.parametrize(
    "call, expected",
    [
        ("tf.Session( )", "tf.Session(config=X )"),
        ("tf.Session(graph=g)", "tf.Session(graph=g, config=X)"),
        ("tf.Session(graph=g,)", "tf.Session(graph=g, config=X,)"),
        ("tf.Session(\n    graph=g,\n)", "tf.Session(\n    graph=g,\n    config=X,\n)"),
        ("tf.Session(\n    graph=g\n)", "tf.Session(\n    graph=g, config=X\n)"),
        ("tf.Session(config=None)", "tf.Session(config=X)"),
    ],
)
def test_keyword_placement(call: str, expected: str) -> None:
    growth = "tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"
    source = f"import tensorflow as tf\ns = {call}\n"
    assert fixed(source) == f"import tensorflow as tf\ns = {expected.replace('X', growth)}\n"


def test_fraction_policy_reproduces_the_article() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        config = tf.ConfigProto()
        session = tf.Session(config=config)
        """
    )
    # The article's second snippet, word for word.
    assert fixed(source, "fraction=0.4") == dedent(
        """\
        import tensorflow as tf
        config = tf.ConfigProto()
        config.gpu_options.per_process_gpu_memory_fraction = 0.4
        session = tf.Session(config=config)
        """
    )
    assert "GPUOptions(per_process_gpu_memory_fraction=0.4)" in fixed(
        "import tensorflow as tf\ns = tf.Session()\n", "fraction=0.4"
    )


# -- suppression -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, suppressed",
    [
        ("s = tf.Session()  # tfmemlint: ignore", True),
        ("s = tf.Session()  # tfmemlint: ignore[TFM101]", True),
        ("s = tf.Session()  # tfmemlint: ignore[TFM102, TFM101]", True),
        ("s = tf.Session()  # tfmemlint: ignore[TFM102]", False),
        ("s = tf.Session()  # noqa: TFM101", True),
        ("s = tf.Session()  # noqa:E501,TFM101", True),
        ("s = tf.Session()  # noqa", True),
        ("s = tf.Session()  # noqa: TFM102", False),
        ("s = tf.Session(\n)  # tfmemlint: ignore", True),
        ("s = tf.Session(graph=g('# tfmemlint: ignore'))", False),  # in a string: no directive
        ("# tfmemlint: ignore\ns = tf.Session()", False),
    ],
)
def test_suppression_comments(line: str, suppressed: bool) -> None:
    source = f"import tensorflow as tf\n{line}\n"
    assert codes(source) == ([] if suppressed else ["TFM101"])


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            "from tensorflow.python.client import session\nfrom tensorflow.python.framework import ops\ns = session.Session()\n",
            "from tensorflow.core.protobuf import config_pb2\nfrom tensorflow.python.client import session\n",
        ),
        (
            "import os\nfrom tensorflow.compat.v1 import Session\ns = Session()\n",
            "import os\nfrom tensorflow.compat.v1 import Session\nfrom tensorflow.core.protobuf import config_pb2\n",
        ),
        (
            "def f():\n    from tensorflow.python.client import session\n    return session.Session()\n",
            "def f():\n    from tensorflow.python.client import session\n    from tensorflow.core.protobuf import config_pb2\n",
        ),
    ],
)
def test_new_import_keeps_tensorflow_imports_in_order(source: str, expected: str) -> None:
    result = fixed(source)
    assert result.startswith(expected)
    assert result.count("import config_pb2") == 1
    assert (
        "(config=config_pb2.ConfigProto(gpu_options=config_pb2.GPUOptions(allow_growth=True)))"
        in result
    )


def test_no_fix_when_config_pb2_is_taken() -> None:
    source = "from tensorflow import Session\nconfig_pb2 = None\ns = Session()\n"
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM101" and finding.fix is None


# -- regressions found in review ----------------------------------------------------------------
AWARE_CONFIG = "config = tf.ConfigProto()\nconfig.gpu_options.allow_growth = True\nsess = tf.Session(config=config)\n"


@pytest.mark.parametrize(
    "tail",
    [
        "def build(config):\n    return config\n",
        "f = lambda config: config\n",
        "names = [config for config in range(3)]\n",
        "class Holder:\n    config = None\n",
    ],
)
def test_nested_scopes_binding_the_same_name(tail: str) -> None:
    source = f"import tensorflow as tf\n{AWARE_CONFIG}{tail}s2 = tf.Session()\n"
    # TFM401: s2 inherits the first session's allocator; the point is that nothing crashes.
    assert codes(source, "TFM190") == ["TFM101", "TFM401"]


def test_method_setting_the_module_config_counts_despite_a_class_attribute() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        config = tf.ConfigProto()
        class Setup:
            config = None
            def run(self):
                config.gpu_options.allow_growth = True
        Setup().run()
        def main():
            return tf.Session(config=config)
        """
    )
    assert codes(source) == []


def test_walrus_in_a_comprehension_binds_outside_it() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        _ = [(config := tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))) for _ in range(1)]
        sess = tf.Session(config=config)
        """
    )
    assert codes(source) == []


def test_fix_never_uses_names_imported_after_the_call() -> None:
    source = "from tensorflow import Session\nsess = Session()\nfrom tensorflow import ConfigProto, GPUOptions\n"
    result = fixed(source)
    assert "Session(config=config_pb2.ConfigProto(" in result
    assert result.index("import config_pb2") < result.index("sess = Session(")


@pytest.mark.parametrize(
    "source",
    [
        "from typing import TYPE_CHECKING\nfrom tensorflow import Session\nif TYPE_CHECKING:\n    from tensorflow import Graph\nsess = Session()\n",
        "from tensorflow import Session\ntry:\n    from tensorflow import estimator\nexcept ImportError:\n    pass\nsess = Session()\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tensorflow as tf\nfrom tensorflow.python.client import session\nsess = session.Session()\n",
    ],
)
def test_fix_never_relies_on_imports_that_may_not_run(source: str) -> None:
    result = fixed(source)
    tree = ast.parse(result)
    top_level = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "tensorflow.core.protobuf"
    ]
    assert len(top_level) == 1, result
    assert "tf.compat.v1.ConfigProto" not in result


def test_one_import_for_sessions_in_different_places() -> None:
    source = dedent(
        """\
        from tensorflow import Session
        s1 = Session()
        from tensorflow.python.framework import ops
        def f():
            return Session()
        """
    )
    result = fixed(source)
    assert result.count("import config_pb2") == 1
    assert result.count("config=config_pb2.ConfigProto(") == 2


def test_setting_later_in_the_same_loop_comes_in_time() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        config = tf.ConfigProto()
        for i in range(3):
            if i > 0:
                sess = tf.Session(config=config)
            config.gpu_options.allow_growth = True
        """
    )
    assert codes(source) == []


def test_prefix_spelling_drops_comments_and_line_breaks() -> None:
    source = "import tensorflow as tf\nsess = (tf.compat.  # why\n        v1.Session())\n"
    [finding] = lint_text("t.py", source, settings())
    assert finding.message.startswith("`tf.compat.v1.Session()`")
    assert (
        "v1.Session(config=tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions("
        in fixed(source)
    )
    assert fixed(source).count("# why") == 1


def test_config_passed_as_target_is_reported_without_a_fix() -> None:
    source = "import tensorflow as tf\ncfg = tf.ConfigProto()\nsess = tf.Session(cfg)\n"
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM101" and finding.fix is None
    assert "passed as `target`" in finding.message


def test_a_call_whose_only_argument_is_a_bare_generator_is_not_fixed() -> None:
    """`f(x for x in y, config=...)` would not parse: a generator without brackets must be
    the only argument. (With brackets of its own it takes the keyword.)"""
    source = "import tensorflow as tf\nsess = tf.Session(t for t in targets)\n"
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM101" and finding.fix is None
    assert fix_text("t.py", source, settings()) == (source, 0, [finding])
    bracketed = source.replace("(t for t in targets)", "((t for t in targets))")
    growth = "tf." + GROWTH.format(p="tf.")
    assert fixed(bracketed).endswith(f"tf.Session((t for t in targets), config={growth})\n")


def test_bare_session_chosen_in_a_branch_is_reported_but_not_fixed() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        def make(allow_growth):
            if allow_growth:
                config = tf.ConfigProto()
                config.gpu_options.allow_growth = True
                sess = tf.Session(config=config)
            else:
                sess = tf.Session()
            return sess
        """
    )
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM101" and finding.fix is None
    assert "other branch" in finding.message
    # Without a configured sibling, the usual fix.
    alone = "import tensorflow as tf\nif x:\n    s = tf.Session()\nelse:\n    s = None\n"
    [finding] = lint_text("t.py", alone, settings())
    assert finding.fix is not None


# -- helpers in the same module, one level deep ---------------------------------------------------
HELPER_AWARE = "def get_config():\n    c = tf.ConfigProto()\n    c.gpu_options.allow_growth = True\n    return c\n"
HELPER_BARE = "def get_config():\n    c = tf.ConfigProto(allow_soft_placement=True)\n    return c\n"


@pytest.mark.parametrize(
    "use",
    ["s = tf.Session(config=get_config())\n", "cfg = get_config()\ns = tf.Session(config=cfg)\n"],
)
def test_config_helpers_are_followed(use: str) -> None:
    assert codes(f"import tensorflow as tf\n{HELPER_AWARE}{use}") == []
    source = f"import tensorflow as tf\n{HELPER_BARE}{use}"
    assert codes(source) == ["TFM102"]
    result = fixed(source)
    assert codes(result) == []
    assert result.count("allow_growth = True") == 1


def test_helper_fix_lands_in_the_helper() -> None:
    source = f"import tensorflow as tf\n{HELPER_BARE}s = tf.Session(config=get_config())\n"
    assert fixed(source) == (
        "import tensorflow as tf\ndef get_config():\n"
        "    c = tf.ConfigProto(allow_soft_placement=True)\n"
        "    c.gpu_options.allow_growth = True\n    return c\n"
        "s = tf.Session(config=get_config())\n"
    )
    inline = "import tensorflow as tf\ndef get_config():\n    return tf.ConfigProto()\ns = tf.Session(config=get_config())\n"
    assert "return tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))" in fixed(inline)


@pytest.mark.parametrize(
    "helper",
    [
        "def get_config(c):\n    return c\n",
        "def get_config():\n    if x:\n        return tf.ConfigProto()\n    return None\n",
        "def get_config():\n    return other_helper()\ndef other_helper():\n    return tf.ConfigProto()\n",
    ],
)
def test_helpers_beyond_reach_stay_unresolved(helper: str) -> None:
    source = f"import tensorflow as tf\n{helper}s = tf.Session(config=get_config())\n"
    assert codes(source) == []
    assert codes(source, "TFM190") == ["TFM190"]


# -- sessions on a server ----------------------------------------------------------------------
SERVER = """\
import tensorflow.compat.v1 as tf
server = tf.train.Server(tf.train.ClusterSpec({"w": ["localhost:2222"]}), "w", 0, config=CFG)
"""
GOOD_CFG = "tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"


@pytest.mark.parametrize(
    "session",
    [
        "tf.Session(server.target)",
        "tf.Session(target=server.target, config=tf.ConfigProto())",
        "tf.train.MonitoredTrainingSession(master=server.target, is_chief=True)",
        "tf.train.MonitoredTrainingSession(server.target)",
        "tf.train.Supervisor(logdir='x').managed_session(server.target)",
        "tf.train.Supervisor(logdir='x').prepare_or_wait_for_session(server.target, config=c)",
        "tf.train.SessionManager().prepare_session(server.target, init_op=i)",
        "tf.train.SessionManager().wait_for_session(master=server.target)",
        "tf.train.SessionManager().recover_session(server.target)",
        "tf.train.ChiefSessionCreator(master=server.target)",
        'tf.Session("grpc://worker0:2222")',
        "tf.Session(target)",  # a name bound once to a remote target
        "tf.Session(remote_target)",
    ],
)
def test_a_session_on_a_server_is_not_reported_for_its_own_config(session: str) -> None:
    source = (
        SERVER.replace("CFG", GOOD_CFG)
        + "c = tf.ConfigProto()\ntarget = server.target\nremote_target = 'grpc://h:1'\n"
        + f"s = {session}\n"
    )
    assert codes(source, "TFM190") == []


def test_the_server_a_session_runs_on_is_reported_and_fixed_instead() -> None:
    source = SERVER.replace(", config=CFG", "") + "sess = tf.Session(server.target)\n"
    assert [(f.code, f.location.row) for f in lint_text("t.py", source, settings())] == [
        ("TFM101", 2)
    ]
    assert fixed(source) == source.replace('"w", 0)', f'"w", 0, config={GOOD_CFG})')


def test_a_server_built_out_of_sight_is_for_tfm190_only() -> None:
    source = dedent(
        """\
        import tensorflow.compat.v1 as tf
        def run(server):
            return tf.Session(server.target)
        """
    )
    assert codes(source) == []
    found = lint_text("t.py", source, settings("TFM190"))
    assert [f.code for f in found] == ["TFM190"]
    assert "a server built out of sight" in found[0].message


@pytest.mark.parametrize(
    "target",
    [
        '"grpc://" + os.environ["COLAB_TPU_ADDR"]',  # ALBERT's Colab notebook
        'f"grpc://{host}:8470"',
        '"grpc://" + host + ":8470"',
    ],
)
def test_a_remote_address_built_from_parts_is_that_machines(target: str) -> None:
    """A target built from a literal address (`"grpc://" + ...`) names another machine's
    server, which holds the memory: no finding, and a later session in this process is no
    TFM401 of it."""
    head = f"import os\nimport tensorflow.compat.v1 as tf\nTPU = {target}\n"
    assert codes(head + "sess = tf.Session(TPU)\n") == []
    later = head + "remote = tf.Session(TPU)\nlocal = tf.Session()\n"
    assert codes(later) == ["TFM101"]  # the local one only, and no TFM401 against the remote


@pytest.mark.parametrize("target", ["", '""', "''", "FLAGS.master", '"" + suffix'])
def test_an_in_process_target_is_checked_as_today(target: str) -> None:
    source = f"import tensorflow.compat.v1 as tf\nsess = tf.Session({target})\n"
    assert codes(source) == ["TFM101"]


def test_a_server_built_in_each_branch_governs_the_session() -> None:
    source = dedent(
        """\
        import tensorflow.compat.v1 as tf
        cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))
        if JOB == "ps":
            server = tf.train.Server(CLUSTER, job_name="ps", config=cfg)
            server.join()
        else:
            server = tf.train.Server(CLUSTER, job_name="worker", config=cfg)
        sess = tf.train.MonitoredTrainingSession(master=server.target)
        """
    )
    assert codes(source, "TFM190") == []


@pytest.mark.parametrize("target", ["args.target", "tf.flags.FLAGS.target", "opts.master"])
def test_a_flag_for_the_target_may_be_this_process(target: str) -> None:
    source = f"import tensorflow.compat.v1 as tf\nsess = tf.Session({target})\n"
    assert codes(source) == ["TFM101"]


def test_tf_distribute_server_is_a_server() -> None:
    source = dedent(
        """\
        import tensorflow as tf
        server = tf.distribute.Server(CLUSTER, job_name="worker", task_index=0)
        sess = tf.compat.v1.Session(server.target)
        """
    )
    found = lint_text("t.py", source, settings())
    assert [(f.code, f.location.row) for f in found] == [("TFM101", 2)]
    expected = "task_index=0, config=tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions("
    assert expected in fixed(source)


# -- Estimators made with no config --------------------------------------------------------
ESTIMATOR_CONFIG = (
    "config=tf.estimator.RunConfig(session_config=tf.compat.v1.ConfigProto("
    "gpu_options=tf.compat.v1.GPUOptions(allow_growth=True)))"
)


@pytest.mark.parametrize(
    ("call", "fixed_call"),
    [
        (
            "tf.estimator.Estimator(model_fn)",
            f"tf.estimator.Estimator(model_fn, {ESTIMATOR_CONFIG})",
        ),
        (
            "tf.estimator.DNNClassifier(hidden_units=[4], feature_columns=cols)",
            f"tf.estimator.DNNClassifier(hidden_units=[4], feature_columns=cols, {ESTIMATOR_CONFIG})",
        ),
        (
            "tf.compat.v1.estimator.LinearRegressor(cols)",
            "tf.compat.v1.estimator.LinearRegressor(cols, "
            + ESTIMATOR_CONFIG.replace("tf.estimator.", "tf.compat.v1.estimator.")
            + ")",
        ),
    ],
)
def test_an_estimator_made_with_no_config_gets_a_memory_aware_run_config(
    call: str, fixed_call: str
) -> None:
    """Its default RunConfig passes no session config: the session it makes reserves nearly
    all GPU memory."""
    source = f"import tensorflow as tf\nest = {call}\n"
    assert codes(source) == ["TFM101"]
    assert fixed(source) == f"import tensorflow as tf\nest = {fixed_call}\n"
    assert codes(fixed(source)) == []


@pytest.mark.parametrize(
    "call",
    [
        # a config given: its RunConfig is checked where it is made
        "tf.estimator.Estimator(model_fn, config=run_config)",
        "tf.estimator.Estimator(model_fn, 'dir', run_config)",
        # the canned estimators' configs sit further down: a third positional may be one
        "tf.estimator.DNNClassifier([4], cols, 'dir', cfg)",
        "tf.estimator.Estimator(model_fn, **options)",
    ],
)
def test_an_estimator_given_a_config_is_left_to_its_run_config(call: str) -> None:
    assert codes(f"import tensorflow as tf\nest = {call}\n") == []


# -- TPUEstimator off the TPU ----------------------------------------------------------------
TPU_PROGRAM = """\
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_bool("use_tpu", {default}, "Whether to use TPU or GPU/CPU.")

run_config = tf.contrib.tpu.RunConfig(master=FLAGS.master, model_dir="/tmp/m")
estimator = tf.contrib.tpu.TPUEstimator(use_tpu={use_tpu}, model_fn=model_fn, config=run_config)
"""
TPU_SESSION_CONFIG = (
    "session_config=tf.ConfigProto(allow_soft_placement=True, isolate_session_state=True, "
    "gpu_options=tf.GPUOptions(allow_growth=True))"
)


@pytest.mark.parametrize(
    ("default", "use_tpu", "found"),
    [
        ("False", "FLAGS.use_tpu", True),  # BERT's run_classifier.py: the GPU unless asked
        ("True", "False", True),
        ("True", "FLAGS.use_tpu", False),  # on the TPU unless told otherwise
        ("False", "True", False),
    ],
)
def test_a_tpu_estimator_off_the_tpu_runs_a_session_on_the_gpu(
    default: str, use_tpu: str, found: bool
) -> None:
    """With `use_tpu` off, TPUEstimator trains on this machine's GPUs, in a session whose config
    is its RunConfig's `session_config`: none, so it reserves nearly all GPU memory. The fix
    keeps what TPU's RunConfig would have put in a config of its own."""
    source = TPU_PROGRAM.format(default=default, use_tpu=use_tpu)
    assert codes(source) == (["TFM101"] if found else [])
    if found:
        assert fixed(source) == source.replace(
            'model_dir="/tmp/m")', f'model_dir="/tmp/m", {TPU_SESSION_CONFIG})'
        )


def test_a_tpu_estimator_with_no_use_tpu_is_on_the_tpu() -> None:
    source = TPU_PROGRAM.format(default="False", use_tpu="True").replace("use_tpu=True, ", "")
    assert codes(source) == []


def test_a_tpu_estimator_off_the_tpu_without_a_config_gets_one() -> None:
    source = (
        "import tensorflow as tf\n"
        "est = tf.compat.v1.estimator.tpu.TPUEstimator(model_fn, use_tpu=False)\n"
    )
    assert codes(source) == ["TFM101"]
    assert fixed(source) == source.replace(
        "use_tpu=False)",
        "use_tpu=False, config=tf.compat.v1.estimator.tpu.RunConfig(session_config="
        "tf.compat.v1.ConfigProto(allow_soft_placement=True, isolate_session_state=True, "
        "gpu_options=tf.compat.v1.GPUOptions(allow_growth=True))))",
    )
