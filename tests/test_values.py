"""Value checks (issue 4): fractions and memory limits TensorFlow rejects or misreads."""

from __future__ import annotations

import pytest

from tests.conftest import lint_text
from tfmemlint.configuration.settings import Settings
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text


def codes(source: str) -> list[str]:
    return [
        f.code
        for f in lint_text(
            "t.py", "import tensorflow as tf\n" + source, Settings.default(ALL_RULES)
        )
    ]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("0.4", []),
        ("1e-1", []),
        ("-0.5", ["TFM301"]),
        ("40", ["TFM301"]),
        ("2", ["TFM301"]),
        ("2.5", ["TFM301"]),
        ("1.5", ["TFM302"]),
        ("1.0", ["TFM303"]),
        ("1", ["TFM303"]),
        ("fraction", []),
    ],
)
def test_fraction_everywhere_it_is_written(value: str, expected: list[str]) -> None:
    spellings = [
        f"o = tf.GPUOptions(per_process_gpu_memory_fraction={value})\n",
        f"c = tf.ConfigProto(gpu_options={{'per_process_gpu_memory_fraction': {value}}})\n",
        f"c = tf.ConfigProto()\nc.gpu_options.per_process_gpu_memory_fraction = {value}\n",
    ]
    for spelling in spellings:
        assert codes(spelling) == expected, spelling


@pytest.mark.parametrize(
    "source, expected",
    [
        ("tf.config.LogicalDeviceConfiguration(memory_limit=0)", ["TFM304"]),
        ("tf.config.LogicalDeviceConfiguration(-1024)", ["TFM304"]),
        ("tf.config.experimental.VirtualDeviceConfiguration(memory_limit=1024)", []),
        ("c.gpu_options.experimental.virtual_devices.add(memory_limit_mb=[1024, 0])", ["TFM304"]),
        ("other.LogicalDeviceConfiguration(memory_limit=0)", []),
    ],
)
def test_memory_limits(source: str, expected: list[str]) -> None:
    assert codes(f"{source}\n") == expected


def test_value_findings_point_at_the_value_and_are_never_fixed() -> None:
    source = "import tensorflow as tf\nc = tf.ConfigProto()\nc.gpu_options.per_process_gpu_memory_fraction = 40\n"
    [finding] = lint_text("t.py", source, Settings.default(ALL_RULES))
    assert (finding.location.row, finding.location.column) == (3, 49)
    assert finding.fix is None
    assert fix_text("t.py", source, Settings.default(ALL_RULES))[0] == source
