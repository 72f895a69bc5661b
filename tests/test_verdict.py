"""The verdict rules that the README documents, including the GPU bounds this machine cannot
measure for real."""

from __future__ import annotations

from tfmemlint.verify.verdict import CONTEXT_ALLOWANCE_BYTES, MIB, decide, memory_awareness

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
