"""Writes a deterministic mixed tree that looks like a monorepo: ordinary modules, and about 5 %
TF1-era modules that create sessions (some fixed, some not).

Usage: python bench/generate.py OUT_DIR [--files N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

LIBRARY = '''"""Utilities for {name}."""

import os
import re
from collections import defaultdict


class {cls}:
    """Keeps {noun} by key."""

    def __init__(self, root):
        self.root = root
        self.items = defaultdict(list)

    def add(self, key, value):
        if not re.match(r"^[a-z_]+$", key):
            raise ValueError(key)
        self.items[key].append(value)
        return len(self.items[key])

    def paths(self):
        for key, values in sorted(self.items.items()):
            for index, value in enumerate(values):
                yield os.path.join(self.root, key, f"{{index}}-{{value}}")


def summarize(store):
    return {{key: len(values) for key, values in store.items.items()}}
'''

TF1 = '''"""Training script {index}."""

import numpy as np
import tensorflow as tf

FLAGS = {{"batch": 32, "steps": 100}}


def build(size):
    x = tf.placeholder(tf.float32, [None, size])
    w = tf.Variable(tf.zeros([size, 1]))
    return x, tf.matmul(x, w)


def train(size=16):
    x, y = build(size)
    {session}
    sess.run(tf.global_variables_initializer())
    return sess.run(y, feed_dict={{x: np.zeros((FLAGS["batch"], size))}})
'''

SESSIONS = [
    "sess = tf.Session()",
    "config = tf.ConfigProto(allow_soft_placement=True)\n    sess = tf.Session(config=config)",
    "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
]
WORDS = ["cache", "index", "ledger", "graph", "queue", "bucket", "record", "batch", "shard"]


def generate(out: Path, files: int, seed: int) -> None:
    chance = random.Random(seed)
    for index in range(files):
        package = out / f"pkg{index // 50:03d}"
        package.mkdir(parents=True, exist_ok=True)
        if chance.random() < 0.05:
            text = TF1.format(index=index, session=chance.choice(SESSIONS))
        else:
            word = chance.choice(WORDS)
            text = LIBRARY.format(name=word, cls=word.title() + "Store", noun=word)
            text += "".join(
                f"\n\ndef helper_{n}(value):\n    return value * {n}\n"
                for n in range(chance.randint(5, 60))
            )
        (package / f"module{index:05d}.py").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--files", type=int, default=3600)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    generate(args.out, args.files, args.seed)


if __name__ == "__main__":
    main()
