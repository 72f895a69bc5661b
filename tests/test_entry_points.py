"""The TF1 entry points beyond Session that take a session config (issue 4's first part), on
golden strings: the ones current TensorFlow no longer ships (estimator, contrib, slim) and the
argument positions that fixtures don't exercise."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import lint_text
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text

GROWTH = "ConfigProto(gpu_options={p}GPUOptions(allow_growth=True))"


def settings(*select: str) -> Settings:
    return Settings(Policy(), select_rules(ALL_RULES, extend_select=select))


def codes(source: str, *select: str) -> list[str]:
    return [f.code for f in lint_text("t.py", textwrap.dedent(source), settings(*select))]


def fixed(source: str) -> str:
    return fix_text("t.py", textwrap.dedent(source), settings())[0]


@pytest.mark.parametrize(
    "call",
    [
        "tf.train.MonitoredTrainingSession(checkpoint_dir='/tmp')",
        "tf.train.SingularMonitoredSession()",
        "tf.train.ChiefSessionCreator()",
        "tf.train.WorkerSessionCreator(master=FLAGS.master)",
        "tf.train.Server(cluster, job_name='ps', task_index=0)",
        "tf.train.Server.create_local_server()",
        "tf.compat.v1.enable_eager_execution()",
        "tf.contrib.slim.learning.train(train_op, '/tmp/logs')",
        "tf.contrib.slim.evaluation.evaluate_once('', ckpt, '/tmp/logs')",
        "tf.contrib.slim.evaluation.evaluation_loop('', ckpt_dir, '/tmp/logs')",
    ],
)
def test_entry_points_without_config(call: str) -> None:
    source = f"import tensorflow as tf\nx = {call}\n"
    assert codes(source) == ["TFM101"]
    result = fixed(source)
    assert "ConfigProto(gpu_options=" in result
    assert codes(result) == []


@pytest.mark.parametrize(
    "call",
    [
        # The config in its documented position.
        "tf.train.MonitoredTrainingSession('', True, None, None, None, None, 600, 100, None, cfg)",
        "tf.train.SingularMonitoredSession(None, None, '', cfg)",
        "tf.train.ChiefSessionCreator(None, '', cfg)",
        "tf.train.Server(cluster, 'ps', 0, 'grpc', cfg)",
        "tf.train.Server.create_local_server(cfg)",
        "tf.estimator.RunConfig('/tmp/m', None, 100, None, 600, cfg)",
    ],
)
def test_positional_configs_are_followed(call: str) -> None:
    source = f"import tensorflow as tf\ncfg = tf.ConfigProto()\nx = {call}\n"
    assert codes(source) == ["TFM102"]
    assert "cfg.gpu_options.allow_growth = True" in fixed(source)


def test_estimator_run_config_spells_the_protos_for_tf2_too() -> None:
    source = "import tensorflow as tf\nrc = tf.estimator.RunConfig(model_dir='/tmp/m')\n"
    assert fixed(source) == (
        "import tensorflow as tf\nrc = tf.estimator.RunConfig(model_dir='/tmp/m', "
        "session_config=tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(allow_growth=True)))\n"
    )


def test_run_config_replace() -> None:
    base = "import tensorflow as tf\nrc = tf.estimator.RunConfig(session_config=ok)\n"
    assert codes(base + "rc2 = rc.replace(save_summary_steps=5)\n") == []
    assert codes(base + "rc2 = rc.replace(session_config=tf.ConfigProto())\n") == ["TFM102"]


def test_tpu_run_config_is_never_a_finding() -> None:
    assert codes("import tensorflow as tf\nrc = tf.contrib.tpu.RunConfig()\n", "TFM190") == []


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import tensorflow as tf\nslim = tf.contrib.slim", "slim.learning.train(op, d)"),
        ("import tensorflow.contrib.slim as slim", "slim.learning.train(op, d)"),
        ("from tensorflow.contrib import slim", "slim.evaluation.evaluate_once(m, c, d)"),
        ("import tf_slim as slim", "slim.evaluation.evaluation_loop(m, c, d)"),
    ],
)
def test_slim_in_every_spelling(imports: str, call: str) -> None:
    assert codes(f"{imports}\n{call}\n") == ["TFM101"]
    assert codes(f"{imports}\n{call[:-1]}, session_config=None)\n") == ["TFM101"]


def test_slim_with_many_positional_arguments_is_unresolved() -> None:
    args = ", ".join(f"a{i}" for i in range(14))
    source = f"import tf_slim as slim\nslim.evaluation.evaluate_once({args})\n"
    assert codes(source) == []
    assert codes(source, "TFM190") == ["TFM190"]


def test_supervisor_and_session_manager_methods() -> None:
    source = textwrap.dedent(
        """\
        import tensorflow as tf
        sv = tf.train.Supervisor(logdir="/tmp/s")
        a = sv.managed_session("")
        b = sv.prepare_or_wait_for_session("", cfg)
        sm = tf.train.SessionManager()
        c = sm.prepare_session("", None, None, None, None, False, 7200, cfg)
        d = sm.recover_session("")
        e = sm.wait_for_session("", cfg)
        f = tf.train.Supervisor().managed_session()
        """
    )
    found = lint_text(
        "t.py",
        "import tensorflow as tf\ncfg = tf.ConfigProto()\n" + source.split("\n", 1)[1],
        settings(),
    )
    assert [(f.location.row, f.code) for f in found] == [
        (4, "TFM101"),
        (5, "TFM102"),
        (7, "TFM102"),
        (8, "TFM101"),
        (9, "TFM102"),
        (10, "TFM101"),
    ]


@pytest.mark.parametrize(
    "source",
    [
        "def f(sv):\n    return sv.managed_session()\n",  # a receiver from elsewhere
        "sv = make_supervisor()\ns = sv.managed_session()\n",
        "import requests\ns = requests.Session().managed_session()\n",
    ],
)
def test_methods_need_a_receiver_built_in_reach(source: str) -> None:
    assert codes("import tensorflow as tf\n" + source, "TFM190") == []


def test_monitored_session_without_a_creator() -> None:
    source = "import tensorflow as tf\nwith tf.train.MonitoredSession() as s:\n    pass\n"
    assert fixed(source) == (
        "import tensorflow as tf\nwith tf.train.MonitoredSession(session_creator="
        "tf.train.ChiefSessionCreator(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))) as s:\n"
        "    pass\n"
    )
    with_creator = (
        "import tensorflow as tf\ns = tf.train.MonitoredSession(session_creator=creator)\n"
    )
    assert codes(with_creator, "TFM190") == []


def test_entry_points_of_other_libraries_are_not_findings() -> None:
    source = textwrap.dedent(
        """\
        import tensorflow as tf
        from http.server import HTTPServer as Server
        import my_estimator as estimator
        s = Server(("", 8000), handler)
        rc = estimator.RunConfig()
        """
    )
    assert codes(source, "TFM190") == []


def test_contrib_learn_run_config_defaults_to_the_whole_gpu() -> None:
    source = "import tensorflow as tf\nrc = tf.contrib.learn.RunConfig(model_dir='/m')\n"
    [finding] = lint_text("t.py", source, settings())
    assert finding.code == "TFM101" and "gpu_memory_fraction=1" in finding.message
    assert "session_config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))" in fixed(
        source
    )
    capped = fix_text(
        "t.py", source, Settings(Policy.parse("fraction=0.3"), select_rules(ALL_RULES))
    )[0]
    assert "RunConfig(model_dir='/m', gpu_memory_fraction=0.3)" in capped
    assert (
        codes("import tensorflow as tf\nrc = tf.contrib.learn.RunConfig(gpu_memory_fraction=0.5)\n")
        == []
    )
    assert (
        codes("import tensorflow as tf\nrc = tf.contrib.learn.RunConfig(None, 0, False, 0.5)\n")
        == []
    )
    assert codes(
        "import tensorflow as tf\nrc = tf.contrib.learn.RunConfig(gpu_memory_fraction=1.0)\n"
    ) == ["TFM103"]


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from keras import backend as K\nK.set_session(tf.Session())\n", ["TFM101"]),
        ("sess = tf.Session()\ntf.keras.backend.set_session(sess)\n", ["TFM101"]),
        (
            "def get_session():\n    return tf.Session(config=cfg)\n"
            "cfg = tf.ConfigProto()\ncfg.gpu_options.allow_growth = True\n"
            "tf.compat.v1.keras.backend.set_session(get_session())\n",
            [],
        ),
        (
            "from helpers import make_session\ntf.keras.backend.set_session(make_session())\n",
            ["TFM190"],
        ),
        ("def f(sess):\n    tf.keras.backend.set_session(sess)\n", ["TFM190"]),
    ],
)
def test_keras_set_session_follows_the_session(source: str, expected: list[str]) -> None:
    assert codes("import tensorflow as tf\n" + source, "TFM190") == expected
