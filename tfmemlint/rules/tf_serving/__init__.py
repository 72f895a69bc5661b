"""TFM511-TFM514: model servers that run TensorFlow on a GPU with no process of the user's own:
TF Serving's GPU image, the fraction it is given, Triton's TensorFlow backend, and KServe's
TensorFlow predictor.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import LAUNCH_RECOVERY, RuleFamily

_SOURCE = (
    "TF Serving's `--per_process_gpu_memory_fraction` defaults to 0, \"let TensorFlow "
    'choose", which takes nearly all of the GPU (tensorflow_serving/model_servers/main.cc); '
    "its GPU image passes the arguments after the image name to `tensorflow_model_server`, "
    "and TensorFlow's allocator reads `TF_FORCE_GPU_ALLOW_GROWTH` from the container's "
    "environment (tensorflow/serving#249, #675, #1650, #1929, #2097)."
)

SERVING_UNCONFIGURED = Rule(
    code="TFM511",
    name="tf-serving-without-memory-setting",
    summary="TF Serving's GPU image runs with no memory setting and reserves the whole GPU",
    doc=RuleDoc(
        what_it_does="Finds a container that runs `tensorflow/serving` with a GPU tag "
        "(`latest-gpu`, `2.14.0-gpu`): a Dockerfile's image, a Compose service, a Kubernetes "
        "container or a `docker run`, with neither `TF_FORCE_GPU_ALLOW_GROWTH=true` in its "
        "environment nor `--per_process_gpu_memory_fraction` in its arguments. A value the "
        "file does not write out (`$GROWTH`, `valueFrom:`), or an `env_file:` or `--env-file` "
        "beside it, counts as a setting.",
        why=_SOURCE + " Every other job on that GPU then runs out of memory.",
        example="services:\n  serving:\n    image: tensorflow/serving:latest-gpu\n"
        '    ports: ["8501:8501"]',
        use_instead="services:\n  serving:\n    image: tensorflow/serving:latest-gpu\n"
        '    ports: ["8501:8501"]\n    environment:\n'
        '      TF_FORCE_GPU_ALLOW_GROWTH: "true"',
        fix_safety="Adds `TF_FORCE_GPU_ALLOW_GROWTH=true` where that file gives the container "
        "its environment: `ENV` after the Dockerfile's `FROM`, an entry of the service's "
        "`environment:` or the container's `env:` (written as the entries before it are, or "
        "a new key after its last line), `-e` before `docker run`'s image. Under `--policy "
        "fraction=F`, `docker run` gets `--per_process_gpu_memory_fraction=F` after the "
        "image instead, and the other kinds no fix. No fix for a flow-style (`[...]`, "
        "`{...}`) environment.",
        recovery=LAUNCH_RECOVERY,
        language="yaml",
    ),
)

SERVING_FRACTION = Rule(
    code="TFM512",
    name="tf-serving-memory-fraction-invalid",
    summary="TF Serving's --per_process_gpu_memory_fraction is no fraction, or the whole GPU",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds `--per_process_gpu_memory_fraction` given to `tensorflow_model_server` "
        "or TF Serving's image with a value that is no number, negative, above 1, or 1.",
        why="The server reads a float: text it cannot read stops it at start-up. Above 1 turns "
        "on unified memory, which spills into host memory, and 1 asks for the whole GPU, more "
        "than is ever free, as TFM301-TFM303 say of the same option in code. " + _SOURCE,
        example="docker run --gpus all tensorflow/serving:latest-gpu "
        "--per_process_gpu_memory_fraction=1",
        use_instead="docker run --gpus all tensorflow/serving:latest-gpu "
        "--per_process_gpu_memory_fraction=0.4",
        fix_safety="No fix: the fraction to give is the author's to choose.",
        recovery=LAUNCH_RECOVERY,
        language="bash",
    ),
)

TRITON_WHOLE_GPU = Rule(
    code="TFM513",
    name="triton-tensorflow-whole-gpu",
    summary="Triton's TensorFlow backend is given the whole GPU",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds `--backend-config=tensorflow,gpu-memory-fraction=F` with F of 1 or "
        "more in a command that a launch file runs.",
        why="Triton's TensorFlow backend grows on demand by default (a fraction of 0); 1.0 "
        "takes the whole GPU as the server starts (triton-inference-server/tensorflow_backend, "
        'README, "How does the TensorFlow backend manage GPU memory?").',
        example="tritonserver --model-repository=/models \\\n"
        "  --backend-config=tensorflow,gpu-memory-fraction=1.0",
        use_instead="tritonserver --model-repository=/models \\\n"
        "  --backend-config=tensorflow,gpu-memory-fraction=0.4",
        fix_safety="No fix: remove the option to grow on demand, or choose a fraction.",
        recovery=LAUNCH_RECOVERY,
        language="bash",
    ),
)

KSERVE_UNCONFIGURED = Rule(
    code="TFM514",
    name="kserve-tensorflow-predictor-without-memory-setting",
    summary="A KServe TensorFlow predictor on a GPU runs TF Serving with no memory setting",
    doc=RuleDoc(
        what_it_does="Finds a KServe `InferenceService` whose TensorFlow predictor "
        "(`predictor.tensorflow`, or `predictor.model` with `modelFormat: tensorflow`) asks "
        "for a GPU (`nvidia.com/gpu`) with neither `TF_FORCE_GPU_ALLOW_GROWTH=true` in its "
        "`env:` nor `--per_process_gpu_memory_fraction` in its `args:`.",
        why="KServe switches the predictor to TF Serving's `-gpu` image when the pod asks for "
        "a GPU, and adds no memory setting (kserve/kserve, `pkg/controller/v1beta1/"
        "inferenceservice/utils/utils.go`). " + _SOURCE,
        example="apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n"
        "  name: flowers\nspec:\n  predictor:\n    tensorflow:\n"
        "      storageUri: gs://models/flowers\n      resources:\n        limits:\n"
        '          nvidia.com/gpu: "1"',
        use_instead="apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
        "metadata:\n  name: flowers\nspec:\n  predictor:\n    tensorflow:\n"
        "      storageUri: gs://models/flowers\n      resources:\n        limits:\n"
        '          nvidia.com/gpu: "1"\n      env:\n        - name: TF_FORCE_GPU_ALLOW_GROWTH\n'
        '          value: "true"',
        fix_safety="Adds `TF_FORCE_GPU_ALLOW_GROWTH` to the predictor's `env:`, or a new "
        "`env:` after its last line, written as the entries beside it are. No fix under "
        "`--policy fraction=F`, nor for a flow-style predictor.",
        recovery=LAUNCH_RECOVERY,
        language="yaml",
    ),
)

FAMILY = RuleFamily(
    rules=(SERVING_UNCONFIGURED, SERVING_FRACTION, TRITON_WHOLE_GPU, KSERVE_UNCONFIGURED),
    triggers=(
        b"tensorflow/serving",
        b"tensorflow_model_server",
        b"tf_serving_entrypoint",
        b"gpu-memory-fraction",
        b"InferenceService",
    ),
    checker="tfmemlint.rules.tf_serving.check:check",
)
