#!/usr/bin/env python3
"""Run real upstream programs before and after ``neuron-lint fix`` on a CUDA GPU; compare.

A safe fix must change nothing on CUDA. bench/real_programs.py checks the rewritten programs on a
CPU-only host (the CUDA branch of the original taken through a shim); this script checks them on a
real GPU, where no shim is needed and the fixed program must take the same CUDA path as before.
It has two steps, because the GPU machine has torch but not neuron-lint's dependencies:

    python bench/cuda_programs.py prepare --repos /work/repos --out DIR   # here: copy, fix
    python bench/cuda_programs.py run DIR [--json FILE]                   # on the GPU machine

``prepare`` copies each program into DIR/NAME/original, makes DIR/NAME/safe and DIR/NAME/unsafe
with ``python -m neuron_lint fix --isolated --min-torch 2.13 [--unsafe-fixes]`` and writes
DIR/manifest.json (the steps to run, what to ignore in their output, the files each fix changed).
``run`` needs only the standard library and torch: it runs the original twice (to tell a
nondeterministic program from a changed one) and each fixed copy, with the same environment, and
compares their standard output, with run times and throughput figures blanked out. Cells: ``same``,
``different`` (first differing line), ``crash`` (last line of stderr), ``nondeterministic`` (the
original differs from itself, or a fixed copy differs while another copy with byte-identical code
matched; then nothing is concluded). Exit 0 when every fixed cell is ``same``.

Programs (``--repos DIR`` holds ``nanoGPT/``, ``examples/`` = pytorch/examples and ``timm/``):

* ``nanogpt``: ``train.py`` (config/train_shakespeare_char.py, shrunk to a 2-layer model and 20
  iterations, ``--compile=False``) on a character data set made here from nanoGPT's own sources,
  then ``sample.py`` from its checkpoint, then ``bench.py`` on random data. The device is left to
  the program's default, ``'cuda'`` in the original, the fix's device definition after it.
* ``ddp-spawn``: pytorch/examples ``distributed/ddp-tutorial-series/multigpu.py`` (NCCL, one
  process per GPU through ``mp.spawn``); ``ddp-torchrun``: ``multigpu_torchrun.py`` under
  ``torch.distributed.run --standalone``. Both print their epochs and save checkpoints.
* ``mnist-hogwild``: pytorch/examples ``mnist_hogwild/main.py --cuda`` with one training process
  (more would race by design), on MNIST-shaped random data written here.
* ``timm-explicit`` / ``timm-default``: timm's ``PrefetchLoader`` (CUDA streams, random erasing on
  the device) through the driver of bench/real_programs.py, printing every batch value for value.
"""

from __future__ import annotations

import argparse
import array
import concurrent.futures
import hashlib
import json
import os
import pickle
import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = {"safe": [], "unsafe": ["--unsafe-fixes"]}
#: run times and throughput, which differ from run to run on any machine
BLANKED = [
    (r"time [\d.]+ms, mfu -?[\d.]+%", "<timing>"),
    (r"time per iteration: [\d.]+ms, MFU: -?[\d.]+%", "<timing>"),
    (r"(?m)^\d+(?=\tTrain Epoch)", "<pid>"),  # mnist_hogwild prints its worker's process id
]
NANOGPT_TRAIN = [
    "config/train_shakespeare_char.py",
    "--compile=False",
    "--max_iters=20",
    "--lr_decay_iters=20",
    "--warmup_iters=2",
    "--eval_interval=10",
    "--eval_iters=2",
    "--log_interval=1",
    "--n_layer=2",
    "--n_head=2",
    "--n_embd=64",
    "--block_size=64",
    "--batch_size=8",
    "--always_save_checkpoint=True",
    "--out_dir=out",
]


# ------------------------------------------------------------------------------------- prepare
def setup_nanogpt(repos: Path, dest: Path) -> None:
    src = repos / "nanoGPT"
    for name in ("model.py", "train.py", "sample.py", "bench.py", "configurator.py"):
        shutil.copy2(src / name, dest / name)
    (dest / "config").mkdir()
    shutil.copy2(src / "config" / "train_shakespeare_char.py", dest / "config")
    # a character data set in the layout of data/shakespeare_char/prepare.py: its text is
    # nanoGPT's own sources (the real one is downloaded, and the GPU machine reaches nothing)
    text = "".join((src / n).read_text() for n in ("model.py", "train.py", "sample.py"))
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = dest / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    cut = int(len(text) * 0.9)
    for name, part in (("train.bin", text[:cut]), ("val.bin", text[cut:])):
        with open(data / name, "wb") as fh:
            array.array("H", (stoi[c] for c in part)).tofile(fh)
    meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}
    (data / "meta.pkl").write_bytes(pickle.dumps(meta))


def setup_ddp(repos: Path, dest: Path, script: str) -> None:
    src = repos / "examples" / "distributed" / "ddp-tutorial-series"
    for name in (script, "datautils.py"):
        shutil.copy2(src / name, dest / name)


def setup_hogwild(repos: Path, dest: Path) -> None:
    for name in ("main.py", "train.py"):
        shutil.copy2(repos / "examples" / "mnist_hogwild" / name, dest / name)
    # MNIST in torchvision's raw layout at '../data' (where main.py looks), random pixels: the
    # real files are downloaded, and the GPU machine reaches nothing
    raw = dest.parent / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    for prefix, count in (("train", 1200), ("t10k", 400)):
        pixels = bytes(rng.randrange(256) for _ in range(count * 28 * 28))
        labels = bytes(rng.randrange(10) for _ in range(count))
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(
            struct.pack(">iiii", 2051, count, 28, 28) + pixels
        )
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">ii", 2049, count) + labels)


def setup_timm(repos: Path, dest: Path, device_arg: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from real_programs import setup_timm as copy_timm

    copy_timm(repos, dest, device_arg)


def programs() -> dict:
    """name -> {setup, steps: [[script-or-module-args...]], serial (its copies may not run side by
    side)}."""
    torchrun = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1"]
    return {
        "nanogpt": {
            "setup": setup_nanogpt,
            "steps": [
                ["train.py", *NANOGPT_TRAIN],
                ["sample.py", "--out_dir=out", "--num_samples=2", "--max_new_tokens=60"],
                ["bench.py", "--real_data=False", "--compile=False", "--batch_size=2",
                 "--block_size=64"],
            ],
        },
        "mnist-hogwild": {
            "setup": setup_hogwild,
            "steps": [["main.py", "--cuda", "--epochs", "1", "--num-processes", "1",
                       "--log-interval", "4"]],
        },
        # multigpu.py fixes its rendezvous port in the code: one run at a time
        "ddp-spawn": {
            "setup": lambda r, d: setup_ddp(r, d, "multigpu.py"),
            "steps": [["multigpu.py", "2", "1", "--batch_size", "32"]],
            "serial": True,
        },
        "ddp-torchrun": {
            "setup": lambda r, d: setup_ddp(r, d, "multigpu_torchrun.py"),
            "steps": [[*torchrun, "multigpu_torchrun.py", "2", "1", "--batch_size", "32"]],
            "serial": True,
        },
        "timm-explicit": {
            "setup": lambda r, d: setup_timm(r, d, ", device=device"),
            "steps": [["prefetch_driver.py"]],
        },
        "timm-default": {
            "setup": lambda r, d: setup_timm(r, d, ""),
            "steps": [["prefetch_driver.py"]],
        },
    }


def changed_files(orig: Path, fixed: Path) -> list[str]:
    return sorted(
        str(p.relative_to(orig))
        for p in orig.rglob("*.py")
        if (fixed / p.relative_to(orig)).read_bytes() != p.read_bytes()
    )


def prepare(repos: Path, out: Path, only: list[str] | None) -> int:
    if out.exists():
        shutil.rmtree(out)
    manifest = {}
    for name, spec in programs().items():
        if only and name not in only:
            continue
        orig = out / name / "original"
        orig.mkdir(parents=True)
        spec.pop("setup")(repos, orig)
        changed = {}
        for mode, flags in MODES.items():
            fixed = out / name / mode
            shutil.copytree(orig, fixed)
            cmd = [sys.executable, "-m", "neuron_lint", "fix", "--isolated", "--min-torch",
                   "2.13", *flags, str(fixed)]
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
            if done.returncode == 2:
                print(f"{name} {mode}: neuron-lint fix failed:\n{done.stderr}", file=sys.stderr)
                return 2
            changed[mode] = changed_files(orig, fixed)
            print(f"{name} {mode}: changed {', '.join(changed[mode]) or 'nothing'}")
        manifest[name] = {**spec, "changed": changed}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


# ----------------------------------------------------------------------------------------- run
#: a rehearsal on a host without CUDA (``run --shim``): CUDA mapped to the CPU, as real_programs.py does
SHIM = ROOT / "tests" / "data" / "cpu_runs" / "cuda_on_cpu.py"


def run_steps(folder: Path, spec: dict, timeout: int, shim: bool = False) -> dict:
    steps = spec["steps"]
    env = {
        **os.environ,
        "PYTHONWARNINGS": "ignore",
        "PYTHONHASHSEED": "0",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(folder.resolve()), os.environ.get("PYTHONPATH")])
        ),
    }
    out = []
    for step in steps:
        try:
            lead = [str(SHIM)] if shim and step[0] != "-m" else []
            done = subprocess.run([sys.executable, *lead, *step], cwd=folder, env=env,
                                  capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"rc": 124, "stdout": "\n".join(out), "stderr": f"timed out after {timeout}s"}
        text = done.stdout
        for pattern, blank in BLANKED:
            text = re.sub(pattern, blank, text)
        out.append(f"$ {' '.join(step)}\n{text}")
        if done.returncode != 0:
            return {"rc": done.returncode, "stdout": "\n".join(out), "stderr": done.stderr}
    return {"rc": 0, "stdout": "\n".join(out), "stderr": ""}


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:200] if lines else ""


def first_difference(want: str, got: str) -> str:
    a, b = want.splitlines(), got.splitlines()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "<end>"
        y = b[i] if i < len(b) else "<end>"
        if x != y:
            return f"line {i + 1}: original {x[:90]!r} fixed {y[:90]!r}"
    return ""


def source_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def judge(name: str, spec: dict, got: dict, code: dict, rows: list) -> None:
    """The rows of one program from its runs (``got``: variant -> rc/stdout/stderr) and the digests
    of each variant's code."""
    variants = list(got)
    ref = got["original"]
    if ref["rc"] != 0:
        rows.append((name, "original", "crash", last_line(ref["stderr"])))
        return
    lines = len(ref["stdout"].splitlines())
    if got["original-again"]["stdout"] != ref["stdout"]:
        rows.append((name, "original", "nondeterministic",
                     first_difference(ref["stdout"], got["original-again"]["stdout"])))
        return
    rows.append((name, "original", "ran", f"{lines} lines, twice alike"))
    for mode in MODES:
        what = f"changed {', '.join(spec['changed'][mode]) or 'nothing'}"
        cell = got[mode]
        # the same code as a copy whose output matched: what differs is the program's own noise
        twin = [v for v in variants if v != mode and code[v] == code[mode]
                and got[v]["rc"] == 0 and got[v]["stdout"] == ref["stdout"]]
        if cell["rc"] != 0:
            rows.append((name, mode, "crash", f"{last_line(cell['stderr'])} [{what}]"))
        elif cell["stdout"] != ref["stdout"] and twin:
            rows.append((name, mode, "nondeterministic",
                         (f"{first_difference(ref['stdout'], cell['stdout'])}; the {twin[0]} "
                         f"copy has the same code and matched [{what}]")))
        elif cell["stdout"] != ref["stdout"]:
            rows.append((name, mode, "different",
                         f"{first_difference(ref['stdout'], cell['stdout'])} [{what}]"))
        else:
            rows.append((name, mode, "same", f"{lines} lines [{what}]"))


class Rows(list):
    """The result rows, each printed as it comes (a run cut short still says what it saw)."""

    def append(self, row: tuple) -> None:
        super().append(row)
        print(f"{row[0]:<14}  {row[1]:<8}  {row[2]:<16}  {row[3]}", flush=True)


def run(folder: Path, json_out: Path | None, timeout: int, only: list[str] | None,
        shim: bool = False) -> int:
    import torch  # here, so that the step that prepares (and imports no torch) runs anywhere

    manifest = json.loads((folder / "manifest.json").read_text())
    where = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    print(f"torch {torch.__version__} on {where}")
    print(f"{'program':<14}  {'mode':<8}  {'result':<16}  detail")
    rows, results = Rows(), {}
    # the programs that run their copies side by side first, the slower serial ones last
    for name, spec in sorted(manifest.items(), key=lambda item: item[1].get("serial", False)):
        if only and name not in only:
            continue
        again = folder / name / "original-again"
        if again.exists():
            shutil.rmtree(again)
        shutil.copytree(folder / name / "original", again)
        variants = ["original", "original-again", *MODES]
        workers = 1 if spec.get("serial") else len(variants)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = {v: pool.submit(run_steps, folder / name / v, spec, timeout,
                                      shim and v.startswith("original"))
                       for v in variants}
            got = {v: f.result() for v, f in futures.items()}
        results[name] = got
        judge(name, spec, got, {v: source_digest(folder / name / v) for v in variants}, rows)

    if json_out:
        json_out.write_text(json.dumps({"torch": torch.__version__, "device": where,
                                        "rows": rows, "runs": results}, indent=1))
    fixed = [r for r in rows if r[1] in MODES]
    ok = fixed and all(r[2] == "same" for r in fixed) and len(fixed) == 2 * len(results)
    return 0 if ok else 1


def replay(folder: Path, saved: Path) -> int:
    """The rows of a saved run, judged again with the code under ``folder`` (the copies that ran:
    the same ``prepare`` makes them again, byte for byte)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    data = json.loads(saved.read_text())
    print(f"torch {data['torch']} on {data['device']} (replayed from {saved})")
    rows = Rows()
    for name, got in data["runs"].items():
        code = {v: source_digest(folder / name / v.replace("-again", "")) for v in got}
        judge(name, manifest[name], got, code, rows)
    fixed = [r for r in rows if r[1] in MODES]
    return 0 if fixed and all(r[2] == "same" for r in fixed) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("prepare", help="copy the programs and fix the copies (here)")
    p.add_argument("--repos", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", action="append")
    r = sub.add_parser("run", help="run and compare them (on the GPU machine)")
    r.add_argument("folder", type=Path)
    r.add_argument("--json", type=Path)
    r.add_argument("--timeout", type=int, default=300, help="seconds per step")
    r.add_argument("--only", action="append")
    r.add_argument("--replay", type=Path, metavar="JSON",
                   help="judge the runs saved by an earlier --json again, running nothing")
    r.add_argument("--shim", action="store_true",
                   help="rehearse on a host without CUDA: the originals run with CUDA mapped to the CPU")
    opt = parser.parse_args(argv)
    if opt.verb == "prepare":
        return prepare(opt.repos, opt.out, opt.only)
    if opt.replay:
        return replay(opt.folder, opt.replay)
    return run(opt.folder, opt.json, opt.timeout, opt.only, opt.shim)


if __name__ == "__main__":
    sys.exit(main())
