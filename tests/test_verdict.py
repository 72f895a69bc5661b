"""The verdict rules that the README documents, including the GPU bounds this machine cannot
measure for real."""

from __future__ import annotations

from tfmemlint.verify.verdict import (
    CONTEXT_ALLOWANCE_BYTES,
    MIB,
    decide,
    gpu_bound,
    memory_awareness,
    tensorflow_part,
)

GIB = 1024**3
TOTAL = 140 * GIB


def report(
    *settings: dict, env: dict | None = None, eager: bool = False, tf_peak: int | None = None
) -> dict:
    return {
        "tensorflow_imported": True,
        "eager_runtime_started": eager,
        "environment": {
            "TF_FORCE_GPU_ALLOW_GROWTH": None,
            "CUDA_VISIBLE_DEVICES": None,
            **(env or {}),
        },
        "memory_settings": list(settings),
        "tf_peak_bytes": tf_peak,
    }


def session(**values) -> dict:
    return {"api": "Session", "source": "ConfigProto", **values}


def test_first_session_wins() -> None:
    aware, _, _ = memory_awareness(report(session(allow_growth=True), session()))
    assert aware
    aware, why, _ = memory_awareness(report(session(), session(allow_growth=True)))
    assert not aware and why == "first session preallocates"


def server(target: str = "grpc://localhost:4000", **values) -> dict:
    return {"api": "train.Server", "source": "train.Server", "target": target, **values}


def test_a_session_on_an_in_process_server_is_governed_by_the_server() -> None:
    on_it = session(target="grpc://localhost:4000")  # its own config sets nothing
    aware, why, decider = memory_awareness(report(server(allow_growth=True), on_it))
    assert aware and why == "first server limits GPU memory" and decider["api"] == "train.Server"
    aware, why, _ = memory_awareness(
        report(server(), session(target=on_it["target"], allow_growth=True))
    )
    assert not aware and why == "first server preallocates"


def test_a_session_on_a_remote_target_takes_nothing_here() -> None:
    remote = session(target="grpc://worker0:2222")
    assert memory_awareness(report(remote, session(allow_growth=True)))[:2] == (
        True,
        "first session limits GPU memory",
    )
    assert memory_awareness(report(remote)) == (True, "starts no TensorFlow runtime", None)


def test_environment_and_hidden_gpus() -> None:
    assert memory_awareness(report(session(), env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"}))[0]
    assert not memory_awareness(report(session(), env={"TF_FORCE_GPU_ALLOW_GROWTH": "True"}))[0]
    assert not memory_awareness(
        report(session(allow_growth=True), env={"TF_FORCE_GPU_ALLOW_GROWTH": "false"})
    )[0]
    assert memory_awareness(report(session(), env={"CUDA_VISIBLE_DEVICES": "-1"}))[0]
    assert memory_awareness(report(session(gpu_count=0)))[0]


def test_eager_runtime() -> None:
    growth = {"api": "set_memory_growth", "source": "set_memory_growth", "allow_growth": True}
    assert memory_awareness(report(growth, eager=True))[0]
    assert not memory_awareness(report(eager=True))[0]
    assert memory_awareness(report(eager=False))[0]  # no runtime started: nothing reserved


def test_growth_bound() -> None:
    settled = report(session(allow_growth=True), tf_peak=1 * GIB)
    bound = 2 * GIB + CONTEXT_ALLOWANCE_BYTES
    assert decide(0, False, settled, bound, TOTAL)[0] == "pass"
    verdict, reason, aware = decide(0, False, settled, bound + MIB, TOTAL)
    assert verdict == "fail" and aware and "MiB >" in reason


def test_fraction_and_limit_bounds() -> None:
    capped = report(session(per_process_gpu_memory_fraction=0.25))
    assert decide(0, False, capped, int(0.25 * TOTAL), TOTAL)[0] == "pass"
    assert (
        decide(0, False, capped, int(0.25 * TOTAL) + CONTEXT_ALLOWANCE_BYTES + MIB, TOTAL)[0]
        == "fail"
    )
    limited = report(
        {"api": "set_logical_device_configuration", "source": "x", "memory_limit_mb": 1024},
        eager=True,
    )
    assert decide(0, False, limited, 2 * GIB, TOTAL)[0] == "pass"
    assert decide(0, False, limited, 3 * GIB, TOTAL)[0] == "fail"


def test_preallocation_fails_and_crashes_are_errors() -> None:
    assert decide(0, False, report(session()), 137 * GIB, TOTAL)[:2] == (
        "fail",
        "first session preallocates",
    )
    assert decide(1, False, report(session(allow_growth=True)), None, None)[0] == "error"
    assert decide(None, True, None, None, None)[:2] == ("error", "timed out")
    assert decide(-9, False, None, None, None)[0] == "error"
    assert decide(0, False, report(session(allow_growth=True)), None, None)[0] == "pass"


def growth(device: str) -> dict:
    return {
        "api": "set_memory_growth",
        "source": "set_memory_growth",
        "allow_growth": True,
        "device": device,
    }


def test_growth_must_reach_every_gpu_the_runtime_sees() -> None:
    """TFM205's loop, observed: growth on each GPU TensorFlow lists, or the verdict says which."""
    gpus = ["/physical_device:GPU:0", "/physical_device:GPU:1"]
    every = report(growth(gpus[0]), growth(gpus[1]), eager=True)
    aware, why, _ = memory_awareness({**every, "gpus_seen": gpus})
    assert aware and why == "eager runtime configured before use: growth on every GPU (2)"
    one = report(growth(gpus[0]), eager=True)
    aware, why, _ = memory_awareness({**one, "gpus_seen": gpus})
    assert not aware and why == "memory growth on 1 of 2 GPUs"
    visible = {
        "api": "set_visible_devices",
        "source": "set_visible_devices",
        "gpu_count": 1,
        "devices": gpus[:1],
    }
    aware, why, _ = memory_awareness(
        {**report(visible, growth(gpus[0]), eager=True), "gpus_seen": gpus}
    )
    assert aware and why.endswith("growth on every GPU (1)")
    # Without a GPU the loop never runs: nothing observed, and the script fails (see README).
    aware, why, _ = memory_awareness({**report(eager=True), "gpus_seen": []})
    assert not aware and "default options" in why


HIDE = {
    "api": "set_visible_devices",
    "source": "set_visible_devices",
    "gpu_count": 0,
    "devices": [],
    "runtime_started_before": False,
}
PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"


def with_jax(base: dict, backend: str | None = "cuda", **variables: str) -> dict:
    """`base` with JAX started on `backend` under these XLA_* variables."""
    names = (PREALLOCATE, "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION")
    environment = {name: None for name in (*names, "XLA_PYTHON_CLIENT_ALLOCATOR")}
    return {**base, "jax_backend": backend, "jax_environment": {**environment, **variables}}


def test_tensorflow_that_sees_no_gpu() -> None:
    # A machine with GPUs, all hidden by the script: the list it leaves says so on its own.
    hidden = {**report(eager=True), "gpus_seen": ["/physical_device:GPU:0"], "tf_visible_gpus": []}
    assert memory_awareness(hidden) == (True, "TF sees no GPU", None)
    # Without a GPU the list is always empty: the call that hid them, in time, decides.
    assert memory_awareness({**report(HIDE, eager=True), "tf_visible_gpus": []})[:2] == (
        True,
        "TF sees no GPU",
    )
    late = {**HIDE, "runtime_started_before": True}
    aware, why, _ = memory_awareness({**report(late, eager=True), "tf_visible_gpus": []})
    assert not aware and why == "eager runtime started with default options: it preallocates"
    # The last call stands: GPUs shown again are no longer hidden.
    shown = {**HIDE, "gpu_count": 1, "devices": ["/physical_device:GPU:1"]}
    again = {**report(HIDE, shown, eager=True), "tf_visible_gpus": shown["devices"]}
    assert not memory_awareness({**again, "gpus_seen": []})[0]
    # A session with a config of its own runs on every GPU: the first one still decides.
    assert memory_awareness({**report(HIDE, session()), "tf_visible_gpus": []})[:2] == (
        False,
        "first session preallocates",
    )


def test_jax_on_a_gpu_is_judged_by_the_variables_it_started_with() -> None:
    plain = {**report(), "tensorflow_imported": False}
    on = "JAX preallocation on: it reserves 75% of the GPU as it starts"
    assert memory_awareness(with_jax(plain)) == (False, on, None)
    # jaxlib reads exactly these as off; "FALSE" and "no" leave preallocation on.
    for value in ("false", "False", "0"):
        assert memory_awareness(with_jax(plain, **{PREALLOCATE: value}))[:2] == (
            True,
            "does not import TensorFlow, JAX preallocation off",
        )
    for value in ("FALSE", "no", "", "true"):
        assert memory_awareness(with_jax(plain, **{PREALLOCATE: value}))[:2] == (False, on)
    fraction = with_jax(plain, XLA_PYTHON_CLIENT_MEM_FRACTION=".5")
    assert memory_awareness(fraction)[1].endswith("JAX memory fraction 0.5")
    assert memory_awareness(with_jax(plain, XLA_CLIENT_MEM_FRACTION="0.3"))[0]
    whole = memory_awareness(with_jax(plain, XLA_CLIENT_MEM_FRACTION="1"))
    assert whole[:2] == (False, "JAX preallocation on: it reserves 100% of the GPU as it starts")
    platform = with_jax(plain, XLA_PYTHON_CLIENT_ALLOCATOR="Platform")  # jaxlib lowers it
    assert memory_awareness(platform)[1].endswith("JAX allocator platform")
    both = with_jax(plain, XLA_PYTHON_CLIENT_MEM_FRACTION=".5", **{PREALLOCATE: "false"})
    assert memory_awareness(both)[1].endswith("JAX preallocation off, memory fraction 0.5")


def test_jax_on_the_cpu_has_nothing_to_judge() -> None:
    cpu = with_jax({**report(HIDE, eager=True), "tf_visible_gpus": []}, backend="cpu")
    aware, why, _ = memory_awareness(cpu)
    assert aware and why == "TF sees no GPU, JAX runs on cpu: no GPU memory to judge"
    assert tensorflow_part(why + "; no NVIDIA GPU visible") == "TF sees no GPU"
    # TensorFlow's failure stands alone; JAX that never started says nothing.
    aware, why, _ = memory_awareness(with_jax(report(eager=True), backend="cpu"))
    assert not aware and why == "eager runtime started with default options: it preallocates"
    never = with_jax(report(eager=True), backend=None, **{PREALLOCATE: "false"})
    assert memory_awareness(never) == memory_awareness(report(eager=True))


def test_a_guest_and_its_host_are_judged_together() -> None:
    guest = {**report(HIDE, eager=True), "tf_visible_gpus": []}
    fixed = with_jax(guest, **{PREALLOCATE: "false"})
    assert memory_awareness(fixed)[:2] == (True, "TF sees no GPU, JAX preallocation off")
    aware, why, _ = memory_awareness(with_jax(guest))
    assert not aware and why.startswith("JAX preallocation on")
    aware, why, _ = memory_awareness(with_jax(report(eager=True)))
    assert not aware
    assert why == (
        "eager runtime started with default options: it preallocates"
        " and JAX preallocation on: it reserves 75% of the GPU as it starts"
    )


def test_jax_adds_its_share_to_the_bound() -> None:
    guest = with_jax(
        {**report(HIDE, eager=True), "tf_visible_gpus": []}, XLA_CLIENT_MEM_FRACTION=".5"
    )
    bound = CONTEXT_ALLOWANCE_BYTES + int(0.5 * TOTAL)
    assert gpu_bound(None, guest, TOTAL) == bound
    assert decide(0, False, guest, bound, TOTAL)[0] == "pass"
    verdict, reason, aware = decide(0, False, guest, bound + MIB, TOTAL)
    assert verdict == "fail" and aware and "MiB >" in reason
    growing = with_jax(guest, **{PREALLOCATE: "0"})
    assert gpu_bound(None, growing, TOTAL) == CONTEXT_ALLOWANCE_BYTES + int(0.75 * TOTAL)
    on_cpu = with_jax(guest, backend="cpu")
    assert gpu_bound(None, on_cpu, TOTAL) == CONTEXT_ALLOWANCE_BYTES
