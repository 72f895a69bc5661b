"""TFM1xx: sessions created without a GPU memory option.

These pages are the one source for the README's rule table and for `tfmemlint rule`.
The logic lives beside them in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import (
    CONFIGURED,
    LOOKS_AT,
    RECOVERED_FIX,
    TENSORFLOW_MODULES,
    RuleFamily,
)

_RECOVERY = (
    "In a file or notebook cell that needed recovery (TFM904, TFM902), a session created "
    "inside a set-aside statement is not seen, and the TFM904 or TFM902 line names its line; "
    "a config built inside one is not known, as under TFM190. " + RECOVERED_FIX
)

_WHY = (
    "With no memory option, the first TensorFlow session in a process reserves nearly all of "
    "the GPU's free memory (the BFC allocator's default; tensorflow/core/common_runtime/gpu/"
    "gpu_device.cc). Every other job on that GPU then fails with out-of-memory, and the memory "
    "is not returned until the process exits."
)

_ON_A_SERVER = (
    "A session that runs on a server (`Session(server.target)`, `Session(target=...)`, "
    "`master=` for the monitored sessions, creators, `Supervisor` and `SessionManager`) is not "
    "reported for its own config: in distributed TensorFlow the server process owns the GPUs, "
    "and a session's config does not limit it (tensorflow/tensorflow#2471). The `train.Server` "
    "(or `distribute.Server`, the same class) or `Server.create_local_server()` it runs on is "
    "reported instead, where this module builds it; the target of a server built out of sight "
    "(an object named like one: `server`, `self._server`) is for TFM190, and a remote target "
    'spelled out (`"grpc://host:2222"`), or built from such an address (`"grpc://" + '
    'os.environ["COLAB_TPU_ADDR"]`), is that machine\'s to limit. A target of `""`, none, '
    'or any other (`FLAGS.master`, `args.target`, which may be `""`) is this process\'s own: '
    "checked as usual."
)

NO_CONFIG = Rule(
    code="TFM101",
    name="session-without-config",
    summary="Session created without a config, so it reserves nearly all GPU memory",
    doc=RuleDoc(
        what_it_does="Finds a session, or the server or runtime behind one (monitored sessions, "
        "estimators, slim's loops, `train.Server`, `enable_eager_execution`), created "
        "with no config: it reserves nearly all of every GPU.",
        details=(
            (
                LOOKS_AT,
                "Finds calls that create a session, or the server or runtime behind one, with no "
                "config (keyword or positional) or with `None`: `Session`, "
                "`train.MonitoredTrainingSession`, `train.SingularMonitoredSession`, "
                "`train.ChiefSessionCreator` / `WorkerSessionCreator`, `train.MonitoredSession` "
                "without a `session_creator`, `Supervisor(...).managed_session` / "
                "`prepare_or_wait_for_session`, `SessionManager(...).prepare_session` / "
                "`recover_session` / `wait_for_session`, `train.Server` and "
                "`Server.create_local_server`, `estimator.RunConfig` (`session_config`), an "
                "`estimator.Estimator` or canned estimator (`DNNClassifier`, `LinearRegressor`, "
                "...) made with no `config`, slim's `learning.train`, `evaluation.evaluate_once` "
                "and `evaluation_loop` (`session_config`), `enable_eager_execution`, and "
                "`contrib.learn.RunConfig`, whose own `gpu_memory_fraction` defaults to 1, the "
                "whole GPU. Sessions given to Keras's `set_session` are checked where they are "
                "created. A bare `InteractiveSession()` is not reported: TensorFlow gives it "
                "`allow_growth=True` itself (session.py, `InteractiveSession.__init__`). "
                "`contrib.tpu.RunConfig` (or `estimator.tpu.RunConfig`) and `TPUEstimator` are "
                "reported only where the module runs a TPUEstimator off the TPU by default "
                "(`use_tpu=False`, or a flag whose default is off, as BERT's `FLAGS.use_tpu`): it "
                "then trains on the GPUs, with no session config. On a TPU they hold no GPU "
                "memory; the fix's config keeps TPU's own `allow_soft_placement` and "
                "`isolate_session_state`. " + _ON_A_SERVER,
            ),
        ),
        why=_WHY,
        example="import tensorflow.compat.v1 as tf\n\nsess = tf.Session()",
        use_instead="import tensorflow.compat.v1 as tf\n\n"
        "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
        fix_safety="Safe. The fix adds the config argument spelled with the module's own prefix "
        "(`tf.`, `tf.compat.v1.`, ...), and imports `config_pb2` only when no TensorFlow alias "
        "is in reach; `tf.estimator.RunConfig`, which TF2 also has, gets `tf.compat.v1.` "
        "protos; an Estimator with no config gains `config=tf.estimator.RunConfig("
        "session_config=...)` in the namespace it is spelled from. "
        "`MonitoredSession` gains `session_creator=tf.train.ChiefSessionCreator("
        "config=...)`. `--policy fraction=F` sets `per_process_gpu_memory_fraction=F` instead. "
        "No fix for `Session(cfg)`, which passes the config as `target`.",
        recovery=_RECOVERY,
    ),
)

CONFIG_WITHOUT_MEMORY_OPTION = Rule(
    code="TFM102",
    name="config-without-memory-option",
    summary="Session config sets no GPU memory option",
    doc=RuleDoc(
        what_it_does="Finds a session whose `ConfigProto` sets no GPU memory option: neither "
        "`allow_growth`, a memory fraction, virtual-device limits nor "
        "`device_count={'GPU': 0}`.",
        details=(
            (
                CONFIGURED,
                "Finds sessions whose `ConfigProto` sets none of `gpu_options.allow_growth`, "
                "`per_process_gpu_memory_fraction`, `experimental.virtual_devices` or "
                "`device_count={'GPU': 0}`: an inline `ConfigProto(...)`, a `GPUOptions(...)` "
                "without a memory field, a config variable built in the same or an enclosing "
                "scope, or one that a function returns (one level deep), of the same module or of "
                "another module of the project; the message then says where that function builds "
                "it. A setting made only after the session is created has no effect and does not "
                "count. A session on a server's target is not reported: the server's config "
                "governs (see TFM101).",
            ),
        ),
        why=_WHY,
        example="config = tf.ConfigProto(allow_soft_placement=True)\n"
        "sess = tf.Session(config=config)",
        use_instead="config = tf.ConfigProto(allow_soft_placement=True)\n"
        "config.gpu_options.allow_growth = True\n"
        "sess = tf.Session(config=config)",
        fix_safety="Safe. An inline config gains `gpu_options=...GPUOptions(allow_growth=True)` "
        "(or `allow_growth=True` inside its existing `GPUOptions`); a config variable gains "
        "`<name>.gpu_options.allow_growth = True` on the line after it is built, at the same "
        "indentation. No fix when that line also holds other statements, nor inside a helper "
        "of another module, which other callers share: a config it returns gets its line in "
        "the caller when the caller holds it in a variable.",
        recovery=_RECOVERY,
    ),
)

MEMORY_OPTION_DISABLED = Rule(
    code="TFM103",
    name="memory-option-disabled",
    summary="Session config turns its GPU memory option off explicitly",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds configs that say `allow_growth=False` or "
        "`per_process_gpu_memory_fraction=0` and nothing else that limits memory. Both mean "
        "TensorFlow's default: reserve nearly all GPU memory.",
        why=_WHY + " An explicit value may be deliberate, so it is reported, not changed.",
        example="config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=False))",
        use_instead="config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))",
        fix_safety="No fix: tfmemlint never flips a value you wrote.",
        recovery=_RECOVERY,
    ),
)

UNRESOLVED_CONFIG = Rule(
    code="TFM190",
    name="unresolved-session-config",
    summary="Session config cannot be resolved statically",
    enabled_by_default=False,
    fixable=False,
    level="warning",  # a session that may reserve every GPU; nobody can tell which
    doc=RuleDoc(
        what_it_does="Reports the sessions whose config tfmemlint cannot follow (a parameter, an "
        "attribute, a helper out of reach), for an audit. Off by default.",
        details=(
            (
                LOOKS_AT,
                "Reports sessions whose config tfmemlint cannot follow: a function parameter, an "
                "attribute, a helper that is not the project's or has several `return`s, "
                "`**kwargs`, a config passed to code that may change it; a session on the "
                "`.target` of a server built out of sight; and `set_session(sess)` with a session "
                "created out of sight. Off by default; turn it on with `--select TFM190` or "
                "`--extend-select TFM190` to audit them.",
            ),
        ),
        why="These sessions may or may not limit GPU memory. The default output holds only "
        "problems tfmemlint can prove.",
        example="def make_session(config):\n    return tf.Session(config=config)",
        use_instead="Check the callers, or build the config next to the session.",
        fix_safety="No fix: the config is not known.",
        recovery=_RECOVERY,
    ),
)

FAMILY = RuleFamily(
    rules=(NO_CONFIG, CONFIG_WITHOUT_MEMORY_OPTION, MEMORY_OPTION_DISABLED, UNRESOLVED_CONFIG),
    # Every entry point needs one of these somewhere in the file (in the call, an import or an
    # alias): Session (and SessionCreator, SessionManager), set_session, Supervisor, Server,
    # RunConfig, the `estimator` namespace its Estimators come from, slim (tf_slim too),
    # enable_eager_execution.
    triggers=(
        b"Session",
        b"set_session",
        b"Supervisor",
        b"Server",
        b"RunConfig",
        b"estimator",
        b"slim",
        b"eager_execution",
    ),
    modules=TENSORFLOW_MODULES,
    # The entry points' own names and the receivers of the methods that are entry points;
    # test_prefilter holds them to check.py's tables.
    names=(
        "Session",
        "InteractiveSession",
        "MonitoredTrainingSession",
        "SingularMonitoredSession",
        "ChiefSessionCreator",
        "WorkerSessionCreator",
        "MonitoredSession",
        "Server",
        "create_local_server",
        "RunConfig",
        "learning.train",
        "evaluation.evaluate_once",
        "evaluation.evaluation_loop",
        "enable_eager_execution",
        "Supervisor",
        "SessionManager",
        "set_session",
        "Estimator",
        "TPUEstimator",
        "DNNClassifier",
        "DNNRegressor",
        "LinearClassifier",
        "LinearRegressor",
        "DNNLinearCombinedClassifier",
        "DNNLinearCombinedRegressor",
        "BaselineClassifier",
        "BaselineRegressor",
        "BoostedTreesClassifier",
        "BoostedTreesRegressor",
    ),
    checker="tfmemlint.rules.session_config.check:check",
    settled_by_fixes="tfmemlint.rules.session_sites:fixes_only_configure_sessions",
)
