"""Builds the bench's trees that look like the code people check, from pinned wheels:

  stress     TensorFlow's own Python sources: the `tensorflow/` package of its wheel
  monorepo   a mixed monorepo: sympy and django as they ship, the bench's generated TF1-era
             tree (`generate.py`), and programs that start TensorFlow through Keras, JAX, tfds
             and the rest, each in a project folder of its own (the fixtures' `before` programs)
  projects   real projects whose programs run through their own modules: tensor2tensor (TF1)
             and trax (JAX and TensorFlow) as they ship, each in a folder of its own

The wheels are looked for in --wheels (default: ~/.cache/tfmemlint-bench/wheels) and fetched
there once with `pip download` when absent, so a second build needs no network. A tree that is
already built is left as it is; each holds a `BUILT` file naming what it was built from.

Usage: python bench/trees.py OUT [--wheels DIR]   (prints the trees' paths)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate

ROOT = Path(__file__).resolve().parent.parent
PINNED = {
    "tensorflow": "2.21.0",
    "sympy": "1.14.0",
    "django": "5.2.8",
    "tensor2tensor": "1.15.7",
    "trax": "1.4.1",
}
WHEELS = Path.home() / ".cache" / "tfmemlint-bench" / "wheels"
GENERATED_FILES = 1000  # the generated TF1-era tree, as `generate.py` writes it for the bench
PROGRAMS = ("before", "libraries/before", "notebooks/before")  # under fixtures/
# Projects whose programs import their own modules (160 and 77 of their modules hold a
# `__main__` guard), which TFM205's and TFM208's walks follow: what the monorepo's one-file
# programs and generated scripts never make the bench pay for.
PROJECTS = ("tensor2tensor", "trax")


def wheel(name: str, folder: Path) -> Path:
    """The pinned wheel of `name` in `folder`, downloaded there first if it is not."""
    pattern = f"{name.replace('-', '_')}-{PINNED[name]}-*.whl"
    found = sorted(folder.glob(pattern))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        pinned = f"{name}=={PINNED[name]}"
        subprocess.run([*pip, "--only-binary=:all:", "--dest", str(folder), pinned], check=True)
        found = sorted(folder.glob(pattern))
    if not found:
        raise SystemExit(f"no wheel matching {pattern} in {folder}")
    return found[0]  # any platform's: the Python sources are the same


def _unpack_python(wheel_path: Path, package: str, out: Path) -> None:
    """The `.py` files of `package` in a wheel, under `out`."""
    with zipfile.ZipFile(wheel_path) as archive:
        for member in archive.namelist():
            if member.startswith(f"{package}/") and member.endswith(".py"):
                archive.extract(member, out)


def _built(tree: Path, what: str) -> bool:
    stamp = tree / "BUILT"
    return stamp.is_file() and stamp.read_text() == what


def stress(out: Path, wheels: Path) -> Path:
    tree = out / "stress"
    what = f"tensorflow {PINNED['tensorflow']}\n"
    if not _built(tree, what):
        shutil.rmtree(tree, ignore_errors=True)
        _unpack_python(wheel("tensorflow", wheels), "tensorflow", tree)
        (tree / "BUILT").write_text(what)
    return tree


def monorepo(out: Path, wheels: Path, generated: int = GENERATED_FILES) -> Path:
    tree = out / "monorepo"
    what = (
        f"sympy {PINNED['sympy']}, django {PINNED['django']}, "
        f"generated {generated} seed 0, programs {', '.join(PROGRAMS)}\n"
    )
    if not _built(tree, what):
        shutil.rmtree(tree, ignore_errors=True)
        for name in ("sympy", "django"):
            _unpack_python(wheel(name, wheels), name, tree / "vendor")
        generate(tree / "services", generated, seed=0)
        for folder in PROGRAMS:
            for program in sorted((ROOT / "fixtures" / folder).iterdir()):
                # a folder of its own: a program's project modules stay its own
                place = tree / "programs" / folder.replace("/", "-") / program.stem
                if program.is_dir():
                    shutil.copytree(program, place / program.name)
                else:
                    place.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(program, place / program.name)
        (tree / "BUILT").write_text(what)
    return tree


def projects(out: Path, wheels: Path) -> Path:
    tree = out / "projects"
    what = ", ".join(f"{name} {PINNED[name]}" for name in PROJECTS) + "\n"
    if not _built(tree, what):
        shutil.rmtree(tree, ignore_errors=True)
        for name in PROJECTS:
            # a folder of its own: the project's root, above its package
            _unpack_python(wheel(name, wheels), name, tree / name)
        (tree / "BUILT").write_text(what)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--wheels", type=Path, default=WHEELS)
    args = parser.parse_args()
    built = (stress, monorepo, projects)
    for tree in (build(args.out, args.wheels) for build in built):
        print(tree)


if __name__ == "__main__":
    main()
