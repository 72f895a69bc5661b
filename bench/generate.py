"""Writes deterministic inputs for bench/run.py.

- A mixed tree that looks like a monorepo: ordinary modules, and about 5 % TF1-era modules that
  create sessions (some fixed, some not); `--session-share 1 --bare` makes every module a TF1
  script whose session needs a fix.
- With --python2, the TF1-era modules are written in Python 2 (print statements,
  `except E, e:`), as the same modules would be in a Python 2 codebase; with --tabs too, as an
  editor that mixed tabs and spaces saved them: each indented line by turns a tab or 8 spaces a
  level, which Python 2 reads and Python 3 refuses (TabError).
- With --table: one 1.6 MB module, a 50,000-row literal table and one bare session.
- `generate_notebooks`: TF1-era course notebooks, in nbformat 3 (IPython 2) or 4 (bench/run.py's
  `notebooks` case).
- `generate_launch_files`: Dockerfiles, Compose files, Kubernetes manifests, Slurm scripts and
  `.env` files that name the variables the launch-file rules read (bench/run.py's `launch`).

Usage: python bench/generate.py OUT_DIR [--files N] [--seed S] [--session-share F] [--bare]
                                        [--python2 [--tabs]]
       python bench/generate.py --table OUT.py
"""

from __future__ import annotations

import argparse
import json
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

# The same TF1 module as Python 2 wrote it: a print statement, `except E, e:`, a long literal.
TF1_PYTHON2 = '''"""Training script {index}, Python 2."""

import numpy as np
import tensorflow as tf

try:
    import cPickle as pickle
except ImportError, error:
    import pickle

FLAGS = {{"batch": 32, "steps": 100L}}


def build(size):
    print "building", size
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


def generate(
    out: Path,
    files: int,
    seed: int,
    session_share: float = 0.05,
    bare: bool = False,
    python2: bool = False,
    tabs: bool = False,
) -> None:
    chance = random.Random(seed)
    for index in range(files):
        package = out / f"pkg{index // 50:03d}"
        package.mkdir(parents=True, exist_ok=True)
        if chance.random() < session_share:
            session = SESSIONS[0] if bare else chance.choice(SESSIONS)
            text = (TF1_PYTHON2 if python2 else TF1).format(index=index, session=session)
            if tabs:
                text = _tabs_and_spaces(text)
        else:
            word = chance.choice(WORDS)
            text = LIBRARY.format(name=word, cls=word.title() + "Store", noun=word)
            text += "".join(
                f"\n\ndef helper_{n}(value):\n    return value * {n}\n"
                for n in range(chance.randint(5, 60))
            )
        (package / f"module{index:05d}.py").write_text(text)


def _tabs_and_spaces(text: str) -> str:
    """Each indented line of a template (4 spaces a level, no line inside brackets or a
    string) 8 columns a level: a tab a level on one line, 8 spaces a level on the next."""
    lines = text.split("\n")
    for row, line in enumerate(lines):
        level = (len(line) - len(line.lstrip(" "))) // 4
        if level and line.strip():
            indent = "\t" * level if row % 2 else " " * (8 * level)
            lines[row] = indent + line.lstrip(" ")
    return "\n".join(lines)


def generate_notebooks(out: Path, count: int, seed: int, nbformat: int = 4) -> None:
    """TF1-era course notebooks: a heading, prose, and the TF1 module's code in cells, one in
    five with a bare session. nbformat 3 is IPython 2's layout (worksheets, code in `input`,
    keys sorted, no final newline); 4 is today's, with the same cells."""
    chance = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        session = SESSIONS[0] if chance.random() < 0.2 else SESSIONS[2]
        code = TF1.format(index=index, session=session).split("\n\n\n")
        sources = [[f"{line}\n" for line in part.strip("\n").split("\n")] for part in code]
        for lines in sources:
            lines[-1] = lines[-1].rstrip("\n")
        prose = [f"Lesson {index}: a first graph\n", "Build it, then run it in a session."]
        if nbformat == 3:
            cells = [
                {"cell_type": "heading", "level": 1, "metadata": {}, "source": [f"Lesson {index}"]},
                {"cell_type": "markdown", "metadata": {}, "source": prose},
                *(
                    {
                        "cell_type": "code",
                        "collapsed": False,
                        "input": lines,
                        "language": "python",
                        "metadata": {},
                        "outputs": [],
                        "prompt_number": number,
                    }
                    for number, lines in enumerate(sources, 1)
                ),
            ]
            document = {
                "metadata": {"name": f"lesson{index}"},
                "nbformat": 3,
                "nbformat_minor": 0,
                "worksheets": [{"cells": cells, "metadata": {}}],
            }
            text = json.dumps(document, indent=1, sort_keys=True)
        else:
            cells = [
                {"cell_type": "markdown", "metadata": {}, "source": [f"# Lesson {index}"]},
                {"cell_type": "markdown", "metadata": {}, "source": prose},
                *(
                    {
                        "cell_type": "code",
                        "execution_count": number,
                        "metadata": {},
                        "outputs": [],
                        "source": lines,
                    }
                    for number, lines in enumerate(sources, 1)
                ),
            ]
            document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
            text = json.dumps(document, indent=1) + "\n"
        (out / f"lesson{index:04d}.ipynb").write_text(text)


_DOCKERFILE = """FROM tensorflow/tensorflow:2.21.0-gpu
ARG GROWTH={growth}
ENV TF_FORCE_GPU_ALLOW_GROWTH=$GROWTH \\
    PYTHONUNBUFFERED=1
COPY . /app
CMD ["python", "/app/train_{index}.py"]
"""
_COMPOSE = """services:
  serving:
    image: tensorflow/serving:latest-gpu
    ports:
      - "{port}:8501"
    environment:
      MODEL_NAME: model_{index}
  trainer:
    build: .
    environment:
      - XLA_PYTHON_CLIENT_PREALLOCATE={preallocate}
      - TF_FORCE_GPU_ALLOW_GROWTH=true
    command: python train_{index}.py
"""
_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: api-{index}
spec:
  template:
    spec:
      containers:
        - name: api
          image: registry.example.com/api:{index}
          env:
            - name: TF_FORCE_GPU_ALLOW_GROWTH
              value: {growth}
          resources:
            limits:
              nvidia.com/gpu: "1"
"""
_SBATCH = """#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --time=04:00:00
module load cuda
export XLA_PYTHON_CLIENT_PREALLOCATE={preallocate}
export TF_FORCE_GPU_ALLOW_GROWTH={growth}
srun python train_{index}.py --steps 1000
"""
_ENV = "TF_FORCE_GPU_ALLOW_GROWTH={growth}\nTF_CPP_MIN_LOG_LEVEL=2\n"


def generate_launch_files(out: Path, count: int, seed: int) -> None:
    """Launch files that name the variables the launch-file rules read, one kind in turn:
    Dockerfiles, Compose files, Kubernetes manifests, Slurm scripts and `.env` files, about a
    third of them with a value TensorFlow or JAX misreads."""
    chance = random.Random(seed)
    kinds = (
        ("Dockerfile.{index}", _DOCKERFILE),
        ("compose-{index}.yaml", _COMPOSE),
        ("deployment-{index}.yaml", _DEPLOYMENT),
        ("train-{index}.sbatch", _SBATCH),
        ("gpu-{index}.env", _ENV),
    )
    out.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        name, template = kinds[index % len(kinds)]
        wrong = chance.random() < 0.3
        values = {
            "index": index,
            "port": 8000 + index,
            "growth": "1" if wrong else '"true"' if "kind:" in template else "true",
            "preallocate": "no" if wrong else "false",
        }
        (out / name.format(index=index)).write_text(template.format(**values))


def generate_table(path: Path, rows: int = 50_000) -> None:
    """About 32 bytes a row: 50,000 rows make the issue's 1.6 MB file."""
    table = "".join(f'    ({i}, "r{i:05d}", {i * 0.25:.2f}),\n' for i in range(rows))
    path.write_text(
        '"""Generated lookup table."""\n\nimport tensorflow as tf\n\nTABLE = [\n'
        + table
        + "]\n\n\ndef lookup(key):\n    return TABLE[key]\n\n\nsess = tf.Session()\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--files", type=int, default=3600)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--session-share", type=float, default=0.05)
    parser.add_argument("--bare", action="store_true", help="every session needs a fix")
    parser.add_argument("--python2", action="store_true", help="TF1 modules in Python 2")
    parser.add_argument("--tabs", action="store_true", help="with --python2: tabs and spaces")
    parser.add_argument("--table", action="store_true", help="write the 1.6 MB table module")
    args = parser.parse_args()
    if args.table:
        generate_table(args.out)
    else:
        generate(
            args.out,
            args.files,
            args.seed,
            args.session_share,
            args.bare,
            args.python2,
            args.tabs and args.python2,
        )


if __name__ == "__main__":
    main()
