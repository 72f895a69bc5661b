"""The environment variables TensorFlow and JAX read about GPU memory, and how each reads its value:
judgements on a value's text, wherever it is written (Python's `os.environ`, a Dockerfile's
`ENV`, a Compose file). Shared by the Python families and the launch-file families; no libcst.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tfmemlint.rules.family import FORCE_GROWTH_WORD

FORCE_GROWTH = FORCE_GROWTH_WORD.decode()
JAX_PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"
JAX_MEM_FRACTION = "XLA_PYTHON_CLIENT_MEM_FRACTION"
JAX_CLIENT_MEM_FRACTION = "XLA_CLIENT_MEM_FRACTION"
JAX_ALLOCATOR = "XLA_PYTHON_CLIENT_ALLOCATOR"
JAX_VARIABLES = (JAX_PREALLOCATE, JAX_MEM_FRACTION, JAX_CLIENT_MEM_FRACTION, JAX_ALLOCATOR)
JAX_FRACTIONS = (JAX_MEM_FRACTION, JAX_CLIENT_MEM_FRACTION)

# How a value that plainly means yes or no is spelled, whatever the variable reads exactly.
MEANS_YES = frozenset({"true", "1", "yes", "y", "on"})
MEANS_NO = frozenset({"false", "0", "no", "n", "off"})
# What jaxlib reads (xla_client.py, `generate_pjrt_gpu_plugin_options`): preallocation is off
# for exactly these values; the allocators it accepts, after `.lower()`.
JAX_PREALLOCATION_OFF = frozenset({"false", "False", "0"})
JAX_ALLOCATORS = frozenset({"default", "platform", "bfc", "cuda_async", "vmm"})

# The variables about GPU memory, allocators and devices that TensorFlow 2.21 reads: every
# `TF_...` name in `libtensorflow_framework.so.2` and `libtensorflow_cc.so.2` (`strings`) that
# speaks of memory, GPUs or allocation, and the older `TF_CUDA_HOST_MEM_LIMIT_IN_MB`
# (gpu_process_state.cc before `TF_GPU_HOST_MEM_LIMIT_IN_MB`).
TENSORFLOW_READS = frozenset(
    {
        "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_SIMULATE_GPU",
        "TF_BFC_MEMORY_DUMP",
        "TF_CPU_ALLOCATOR_USE_BFC",
        "TF_CPU_BFC_MEM_LIMIT_IN_MB",
        "TF_CUBLAS_WORKSPACE_LIMIT_IN_MB",
        "TF_CUDA_HOST_MEM_LIMIT_IN_MB",
        "TF_CUDA_MALLOC_ASYNC_SUPPORTED_PREALLOC",
        "TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE",
        "TF_CUDNN_WORKSPACE_LIMIT_IN_MB",
        "TF_CUFFT_WORKSPACE_LIMIT_IN_MB",
        "TF_DETERMINISTIC_ALLOCATOR",
        "TF_DEVICE_MIN_SYS_MEMORY_IN_MB",
        "TF_ENABLE_GPU_GARBAGE_COLLECTION",
        FORCE_GROWTH,
        "TF_FORCE_UNIFIED_MEMORY",
        "TF_GPU_ALLOCATOR",
        "TF_GPU_CUPTI_ENABLE_ACTIVITY_HW_TRACING",
        "TF_GPU_CUPTI_FORCE_CONCURRENT_KERNEL",
        "TF_GPU_CUPTI_USE_STUB_INTERFACE",
        "TF_GPU_DEBUG_OPS_TO_LOG",
        "TF_GPU_HOST_MEM_LIMIT_IN_MB",
        "TF_GPU_THREAD_COUNT",
        "TF_GPU_THREAD_MODE",
        "TF_MIN_GPU_MULTIPROCESSOR_COUNT",
        "TF_MKL_ALLOC_MAX_BYTES",
        "TF_MKL_OPTIMIZE_PRIMITIVE_MEMUSE",
        "TF_ONEDNN_USE_SYSTEM_ALLOCATOR",
        "TF_PER_DEVICE_MEMORY_LIMIT_MB",
        "TF_RUN_HANDLER_EXP_DIST_EVEN_FRACTION",
    }
)
# Those that JAX 0.10 and jaxlib read (`XLA_...`/`JAX_...` strings in their Python sources)
# about memory, allocation or the GPU.
JAX_READS = frozenset(
    {
        *JAX_VARIABLES,
        "XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE",
        "XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB",
        "XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT",
        "JAX_PALLAS_USE_MOSAIC_GPU",
    }
)
# A name that says its author meant GPU memory: a framework's prefix, and a word of memory.
_FRAMEWORK_PREFIX = re.compile(r"(?:TF|TENSORFLOW|XLA|JAX)_")
_MEMORY_WORDS = re.compile(r"GROWTH|PREALLOC|FRACTION|MEMORY|(?:^|_)MEM(?:_|$)|ALLOCAT|VRAM")


def growth_value_problem(text: str) -> tuple[str, str | None] | None:
    """Why TensorFlow ignores `TF_FORCE_GPU_ALLOW_GROWTH=text`, and the value meant where the
    text plainly says yes or no; None where TensorFlow reads it."""
    if text in ("true", "false"):
        return None
    meant = text.strip().lower()
    wanted = "true" if meant in MEANS_YES else "false" if meant in MEANS_NO else None
    message = f'{FORCE_GROWTH}={text!r} is ignored: TensorFlow accepts exactly "true" or "false"'
    return message, wanted


def jax_value_problem(variable: str, text: str) -> tuple[str, str | None] | None:
    """Why JAX does not read `variable=text` as meant (an empty value is no value, but for the
    allocator), and the value meant where that is plain; None where it does."""
    if not text and variable != JAX_ALLOCATOR:
        return None
    if variable == JAX_PREALLOCATE:
        if text in JAX_PREALLOCATION_OFF or text.strip().lower() not in MEANS_NO:
            return None
        return (
            f"JAX reads {variable}={text!r} as true, and preallocates: it turns "
            'preallocation off only for exactly "false", "False" or "0"'
        ), "false"
    if variable in JAX_FRACTIONS:
        try:
            fraction = float(text)
        except ValueError:
            return (
                f"{variable}={text!r} is no number: jaxlib raises ValueError when its GPU "
                "backend starts"
            ), None
        if not 0 < fraction <= 1:
            return (
                f"{variable}={text!r} is outside (0, 1]: JAX would reserve "
                + ("no memory" if not fraction > 0 else "more memory than the GPU has")
            ), None
        return None
    if variable == JAX_ALLOCATOR and text.lower() not in JAX_ALLOCATORS:
        known = ", ".join(f'"{name}"' for name in sorted(JAX_ALLOCATORS))
        return (
            f"{variable}={text!r} is no allocator jaxlib knows ({known}): it raises "
            "ValueError when its GPU backend starts"
        ), None
    return None


def meant_instead(variable: str) -> str | None:
    """For a variable that neither TensorFlow nor JAX reads but whose name says GPU memory
    (`TF_GPU_MEMORY_FRACTION`), what does what it meant; None for any other variable."""
    if variable in TENSORFLOW_READS or variable in JAX_READS:
        return None
    if not _FRAMEWORK_PREFIX.match(variable) or not _MEMORY_WORDS.search(variable):
        return None
    if variable.startswith(("XLA_", "JAX_")):
        if "FRACTION" in variable or ("MEM" in variable and "PREALLOC" not in variable):
            return f"{JAX_MEM_FRACTION} (a fraction of each GPU)"
        return f"{JAX_PREALLOCATE}=false"
    if "FRACTION" in variable:
        return (
            f"{FORCE_GROWTH}=true (TensorFlow reads no memory fraction from the environment; "
            "TF Serving takes `--per_process_gpu_memory_fraction`)"
        )
    return f"{FORCE_GROWTH}=true"


def configured_frameworks(environment: Mapping[str, str | None]) -> frozenset[str]:
    """The frameworks whose GPU memory a process environment sets up, as each reads it:
    "tensorflow" where growth is on (exactly "true"), "jax" where preallocation is off, a
    fraction is one JAX reads or its allocator allocates on demand; both where every GPU is
    hidden (`CUDA_VISIBLE_DEVICES` of "" or "-1")."""
    if environment.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return frozenset({"tensorflow", "jax"})
    found = set()
    if environment.get(FORCE_GROWTH) == "true":
        found.add("tensorflow")
    jax = {variable: environment[variable] for variable in JAX_VARIABLES if variable in environment}
    if jax.get(JAX_PREALLOCATE) in JAX_PREALLOCATION_OFF or jax.get(JAX_ALLOCATOR) == "platform":
        found.add("jax")
    for variable in JAX_FRACTIONS:
        value = jax.get(variable)
        if value and jax_value_problem(variable, value) is None:
            found.add("jax")
    return frozenset(found)
