#!/usr/bin/env python3
"""Run two REAL upstream programs before and after ``neuron-lint fix`` on CPU-only torch; compare.

    PYTHONPATH=DIR_WITH_NUMPY_AND_MATPLOTLIB python bench/real_programs.py --repos /work/repos \\
        [--steps 2] [--only tsp|timm-explicit|timm-default] [--keep DIR]

The done-when of issue #11 ("the rewritten example projects still run on CPU-only torch 2.13 with
the same results as before") on third-party code, next to tests/test_fix_runs_on_cpu.py, which
does the same on our own look-alike programs. Nothing of theirs is copied into this repository:
everything is copied into a temporary directory and run there.

Programs (``--repos DIR`` holds the checkouts ``examples/`` = pytorch/examples, ``timm/``):

* ``tsp``: pytorch/examples ``time_sequence_prediction``: ``generate_sine_wave.py`` writes
  traindata.pt, then ``train.py --steps N`` trains (LBFGS, float64); its printed losses are
  compared. It needs numpy and matplotlib. Its ``torch.load('traindata.pt')`` fails on torch >= 2.6
  (weights_only is the default and the file is a pickled numpy array) before any fix, so every run
  of it gets ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` (the file is the one the run just wrote).
* ``timm-explicit`` / ``timm-default``: timm's ``PrefetchLoader`` (timm/data/loader.py, with the
  random erasing it applies on the device). The copy of timm holds only what loader.py imports:
  loader.py, constants.py, random_erasing.py, mixup.py, distributed_sampler.py and
  scheduled_sampler.py as they are, and two stand-ins written here (dataset.py and
  transforms_factory.py, which import PIL/torchvision and which PrefetchLoader does not use), with
  empty package ``__init__``s. A driver of ours (written into the copy, in the usual CUDA style)
  builds a tiny uint8 image dataset, loads it with ``fast_collate`` and iterates
  ``PrefetchLoader(..., re_prob=0.5, re_mode='pixel')`` and prints every batch value for value.
  ``timm-explicit`` passes ``device=torch.device("cuda" if torch.cuda.is_available() else "cpu")``;
  ``timm-default`` leaves the loader's default ``device=torch.device('cuda')``.

For each program: the ORIGINAL copy runs under tests/data/cpu_runs/cuda_on_cpu.py (CUDA mapped to
the CPU, streams no-ops, so the CUDA branch runs; the run must make the CUDA calls listed below,
else it is reported as "no-cuda-path"), and two further copies are fixed in place with
``python -m neuron_lint fix --isolated --min-torch 2.13 [--unsafe-fixes] DIR`` and run WITHOUT the
shim. Cells: ``same`` (stdout identical), ``different`` (with the first differing line), ``crash``
(with the last line of stderr; when the original, run without the shim, crashes with the same
line, the detail says so: code the fix left alone, not a wrong rewrite). For a cell that is not ``same`` it prints ``neuron-lint fix
--diff`` of the fixed program's files (those the traceback names, else all that changed).
Exit code: 0 when every cell is ``same``, 1 otherwise. Stdlib + torch only (the programs
themselves need numpy and matplotlib: put them on PYTHONPATH); the programs run with
OMP_NUM_THREADS=1, MPLBACKEND=Agg, PYTHONWARNINGS=ignore.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIM = ROOT / "tests" / "data" / "cpu_runs" / "cuda_on_cpu.py"
MODES = {"safe": [], "unsafe": ["--unsafe-fixes"]}
TIMM_FILES = [
    "loader.py",
    "constants.py",
    "random_erasing.py",
    "mixup.py",
    "distributed_sampler.py",
    "scheduled_sampler.py",
]

TIMM_STANDINS = {
    "dataset.py": '''\
        """Stand-in (bench/real_programs.py): loader.py imports these names; PrefetchLoader uses none."""
        import torch.utils.data


        class ImageDataset(torch.utils.data.Dataset):
            pass


        class IterableImageDataset(torch.utils.data.IterableDataset):
            pass
        ''',
    "transforms_factory.py": '''\
        """Stand-in (bench/real_programs.py): create_loader's transforms; PrefetchLoader uses none."""


        def create_transform(*args, **kwargs):
            raise NotImplementedError("stand-in")
        ''',
}

#: our driver for timm's PrefetchLoader; {device_arg} is "" or ", device=device"
TIMM_DRIVER = '''\
    """Iterate timm's PrefetchLoader over a tiny uint8 image set and print every batch exactly."""
    import random

    import torch
    from torch.utils.data import DataLoader, Dataset

    from timm.data.loader import PrefetchLoader, fast_collate


    class TinyImages(Dataset):
        def __init__(self, n=10, size=6):
            gen = torch.Generator().manual_seed(3)
            self.images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=gen)

        def __len__(self):
            return len(self.images)

        def __getitem__(self, i):
            return self.images[i], i % 3


    def main():
        random.seed(0)
        torch.manual_seed(0)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loader = DataLoader(
            TinyImages(), batch_size=4, shuffle=True, collate_fn=fast_collate,
            pin_memory=torch.cuda.is_available(), generator=torch.Generator().manual_seed(1),
        )
        prefetcher = PrefetchLoader(loader, re_prob=0.5, re_mode="pixel"{device_arg})
        print(f"batches {{len(prefetcher)}}")  # the tensors say where they are; the device's name differs by design
        for i, (images, targets) in enumerate(prefetcher):
            print(f"batch {{i}} {{tuple(images.shape)}} {{images.dtype}} {{images.device.type}} targets {{targets.tolist()}}")
            print(f"images {{images.flatten().tolist()}}")


    if __name__ == "__main__":
        main()
    '''


def setup_tsp(repos: Path, dest: Path) -> None:
    src = repos / "examples" / "time_sequence_prediction"
    for name in ("generate_sine_wave.py", "train.py"):
        shutil.copy2(src / name, dest / name)


def setup_timm(repos: Path, dest: Path, device_arg: str) -> None:
    data = dest / "timm" / "data"
    data.mkdir(parents=True)
    (dest / "timm" / "__init__.py").write_text("")
    (data / "__init__.py").write_text("")
    for name in TIMM_FILES:
        shutil.copy2(repos / "timm" / "timm" / "data" / name, data / name)
    for name, text in TIMM_STANDINS.items():
        (data / name).write_text(textwrap.dedent(text))
    (dest / "prefetch_driver.py").write_text(
        textwrap.dedent(TIMM_DRIVER).format(device_arg=device_arg)
    )


#: name -> (set-up, [(script, args)...] run in order (the last one's stdout is compared),
#:          CUDA calls the original must make under the shim, extra environment)
def programs(steps: int) -> dict:
    timm_calls = {"Stream", "stream", "current_stream", "wait_stream"}
    return {
        "tsp": (
            setup_tsp,
            [("generate_sine_wave.py", []), ("train.py", ["--steps", str(steps)])],
            set(),
            {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"},
        ),
        "timm-explicit": (
            lambda r, d: setup_timm(r, d, ", device=device"),
            [("prefetch_driver.py", [])],
            timm_calls,
            {},
        ),
        "timm-default": (
            lambda r, d: setup_timm(r, d, ""),
            [("prefetch_driver.py", [])],
            timm_calls,
            {},
        ),
    }


def run(
    cmd: list[str], cwd: Path, extra_env: dict, timeout: int
) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "PYTHONWARNINGS": "ignore",
        **extra_env,
    }
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(
            cmd, 124, e.stdout or "", f"{e.stderr or ''}\ntimed out after {timeout}s"
        )


def run_program(folder: Path, steps: list, extra_env: dict, shim: bool, timeout: int):
    out = None
    for script, args in steps:
        cmd = [sys.executable, *([str(SHIM)] if shim else []), script, *args]
        # the shim runs the script with runpy, which does not put the script's folder on sys.path
        path = os.pathsep.join(
            filter(None, [str(folder), os.environ.get("PYTHONPATH")])
        )
        out = run(cmd, folder, {**extra_env, "PYTHONPATH": path}, timeout)
        if out.returncode != 0:
            return out
    return out


def shim_calls(stderr: str) -> set[str]:
    m = re.search(r"cuda-on-cpu calls: \{(.*)\}", stderr)
    return set(re.findall(r"'([\w.]+)': \d+", m.group(1))) if m else set()


def last_line(text: str) -> str:
    lines = [
        line
        for line in text.strip().splitlines()
        if line.strip() and not line.startswith("cuda-on-cpu calls")
    ]
    return lines[-1].strip()[:200] if lines else ""


def first_difference(want: str, got: str) -> str:
    a, b = want.splitlines(), got.splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"line {i + 1}: original {x[:90]!r} fixed {y[:90]!r}"
    i = min(len(a), len(b))
    return f"line {i + 1}: original {(a[i] if i < len(a) else '<end>')[:90]!r} fixed {(b[i] if i < len(b) else '<end>')[:90]!r}"


def changed_files(orig: Path, fixed: Path) -> list[str]:
    return sorted(
        str(p.relative_to(orig))
        for p in orig.rglob("*.py")
        if (fixed / p.relative_to(orig)).read_bytes() != p.read_bytes()
    )


def diff_of(orig: Path, fixed: Path, rel: str) -> str:
    a = (orig / rel).read_text().splitlines(keepends=True)
    b = (fixed / rel).read_text().splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"a/{rel}", f"b/{rel}"))


def blamed_files(stderr: str, fixed: Path, changed: list[str]) -> list[str]:
    named = []
    for m in re.finditer(r'File "([^"]+)"', stderr):
        p = Path(m.group(1))
        p = p if p.is_absolute() else fixed / p
        try:
            rel = str(p.resolve().relative_to(fixed.resolve()))
        except ValueError:
            continue
        if rel in changed and rel not in named:
            named.append(rel)
    return named or changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--repos", type=Path, required=True, help="folder holding examples/ and timm/"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=2,
        help="train.py --steps (each is ~45 s on one core)",
    )
    parser.add_argument(
        "--only", action="append", help="run only this program (repeatable)"
    )
    parser.add_argument("--keep", type=Path, help="keep the copies under this folder")
    parser.add_argument(
        "--timeout", type=int, default=900, help="seconds per program run"
    )
    opt = parser.parse_args(argv)

    work = (
        Path(tempfile.mkdtemp(prefix="real-programs-"))
        if opt.keep is None
        else opt.keep
    )
    work.mkdir(parents=True, exist_ok=True)
    rows, notes = [], []
    for name, (setup, steps, needed, extra_env) in programs(opt.steps).items():
        if opt.only and name not in opt.only:
            continue
        orig = work / name / "original"
        orig.mkdir(parents=True)
        setup(opt.repos, orig)
        ref = run_program(orig, steps, extra_env, shim=True, timeout=opt.timeout)
        calls = shim_calls(ref.stderr)
        if ref.returncode != 0:
            rows.append((name, "original", "crash", last_line(ref.stderr)))
            continue
        if not needed <= calls:
            rows.append(
                (
                    name,
                    "original",
                    "no-cuda-path",
                    f"shim saw {sorted(calls)}, wanted {sorted(needed)}",
                )
            )
            continue
        rows.append(
            (
                name,
                "original",
                "ran",
                f"{len(ref.stdout.splitlines())} lines; shim calls {sorted(calls)}",
            )
        )
        bare = None
        for mode, flags in MODES.items():
            fixed = work / name / mode
            shutil.copytree(
                orig,
                fixed,
                ignore=shutil.ignore_patterns("__pycache__", "*.pt", "*.pdf"),
            )
            fix = run(
                [
                    sys.executable,
                    "-m",
                    "neuron_lint",
                    "fix",
                    "--isolated",
                    "--min-torch",
                    "2.13",
                    *flags,
                    str(fixed),
                ],
                ROOT,
                {},
                opt.timeout,
            )
            if fix.returncode == 2:
                rows.append(
                    (
                        name,
                        mode,
                        "crash",
                        "neuron-lint fix: " + last_line(fix.stderr + fix.stdout),
                    )
                )
                continue
            changed = changed_files(orig, fixed)
            got = run_program(fixed, steps, extra_env, shim=False, timeout=opt.timeout)
            what = f"changed {', '.join(changed) or 'nothing'}"
            if got.returncode != 0:
                # the original on this CPU-only torch, without the shim
                if bare is None:
                    bare = run_program(
                        orig, steps, extra_env, shim=False, timeout=opt.timeout
                    )
                alike = bare.returncode != 0 and last_line(bare.stderr) == last_line(
                    got.stderr
                )
                also = (
                    "; the original crashes alike without the shim (left unfixed)"
                    if alike
                    else ""
                )
                rows.append(
                    (name, mode, "crash", f"{last_line(got.stderr)} [{what}{also}]")
                )
                blame = blamed_files(got.stderr, fixed, changed)
            elif got.stdout != ref.stdout:
                rows.append(
                    (
                        name,
                        mode,
                        "different",
                        f"{first_difference(ref.stdout, got.stdout)} [{what}]",
                    )
                )
                blame = changed
            else:
                rows.append(
                    (
                        name,
                        mode,
                        "same",
                        f"{len(got.stdout.splitlines())} lines [{what}]",
                    )
                )
                continue
            for rel in blame:
                notes.append(
                    f"### {name} {mode}: neuron-lint fix --diff of {rel}\n{diff_of(orig, fixed, rel)}"
                )
            if got.returncode != 0:
                notes.append(
                    f"### {name} {mode}: stderr (tail)\n"
                    + "\n".join(got.stderr.splitlines()[-12:])
                )

    width = max(len(r[0]) for r in rows) if rows else 8
    print(f"{'program':<{width}}  {'mode':<8}  {'result':<12}  detail")
    for prog, mode, result, detail in rows:
        print(f"{prog:<{width}}  {mode:<8}  {result:<12}  {detail}")
    for note in notes:
        print("\n" + note)
    if opt.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r[2] in ("same", "ran") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
