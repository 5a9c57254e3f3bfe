#!/usr/bin/env python3
"""neuron-lint speed benchmark: one command, a real corpus, every tool on the same files.

    python bench/run.py                 # build the corpus and tools (first time), measure, print, write JSON

What it does:

1. Builds the corpus reproducibly: the ``.py`` files of pinned wheels that pip downloads
   (diffusers, accelerate) and of the ``torch`` installed next to neuron-lint (its version is
   recorded). Everything lives in ``--workdir`` (default ``~/.cache/neuron-lint-bench``), outside
   the repository, so no ``.gitignore`` hides it from any tool.
2. Installs TorchFix and ruff (pinned) into their own virtual environment in the workdir.
3. Runs, interleaved, ``--reps`` rounds of: neuron-lint cold (fresh cache), cold without cache,
   warm (nothing changed), one file (as pre-commit runs it); a bare serial LibCST parse and
   ``ast.parse`` of the same files; ``ruff check --select ALL --no-cache``;
   ``python -c "import libcst"``; and TorchFix (on the ``--torchfix-subset`` package only by
   default: on 2 cores it checks about 600 lines a second, i.e. most of an hour for the whole
   corpus; neuron-lint is timed on the same subset for that ratio).
4. Records wall time (median of the rounds) and peak memory of each command's whole process tree
   (sum of proportional set sizes, so pages shared by forked workers are counted once).
5. Prints a table and the target ratios, and writes ``bench/results.json``.

``--repos DIR...`` measures real projects instead (for each, interleaved in every round):
``check --no-cache`` (cold, no cache), ``check`` warm (cache filled first), ``ruff check --select ALL
--no-cache`` and the parallel ``ast.parse`` floor (the same files read and parsed in one worker
process per CPU, nothing else), with the load average before each round; it prints one table per
repository with the ratios cold / ruff (target <= 1) and cold / floor (target <= 2) and writes
``bench/results-repos.json``. ``--before REV`` (a git revision, or a folder holding a
``neuron_lint`` package) adds that revision's ``check --no-cache`` to each round, and this one's
the same way (``python -m``), the two in turn first (their order alternates from round to round).

It is a benchmark, not a test: nothing here runs under pytest.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WHEELS = {"diffusers": "0.42.1", "accelerate": "1.15.0"}
TOOLS = {"torchfix": "0.7.0", "ruff": "0.17.6"}
ONE_FILE = "accelerate-1.15.0/accelerate/accelerator.py"

TARGETS = [
    # (name, numerator, denominator, limit, text)
    ("cold vs TorchFix", "torchfix_subset", "nl_cold_subset", 20.0, "TorchFix / neuron-lint cold >= 20 (same files)"),
    ("cold vs LibCST parse", "nl_cold", "libcst_parse", 0.3, "neuron-lint cold / bare serial LibCST parse <= 0.3"),
    ("warm vs ruff", "nl_warm", "ruff_all", 1.0, "neuron-lint warm / ruff --select ALL --no-cache <= 1"),
    ("one file vs import libcst", "nl_one_file", "import_libcst", 1.5, "neuron-lint one file / python -c 'import libcst' <= 1.5"),
    ("check vs before", "nl_check_now", "nl_check_before", 1.1, "neuron-lint check cold now / the --before revision <= 1.1 (same files, --no-cache)"),
    ("fix vs LibCST parse", "nl_fix_subset", "libcst_parse_subset", 0.5, "neuron-lint fix --diff on one package / bare serial LibCST parse of it <= 0.5"),
]
MEMORY_TARGET = ("nl_cold", "libcst_parse", 1.5)


# ----------------------------------------------------------------------------- setup
def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build_corpus(work: Path) -> dict:
    corpus = work / "corpus"
    from importlib.metadata import version
    from importlib.util import find_spec

    spec = find_spec("torch")  # found, never imported
    if spec is None or not spec.origin:
        raise SystemExit("bench: torch is not installed in this environment (pip install torch); its files are part of the corpus")
    torch_dir = Path(spec.origin).resolve().parent
    versions = {**WHEELS, "torch": version("torch").split("+")[0]}
    stamp = corpus / "VERSIONS.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == versions:
        return versions
    shutil.rmtree(corpus, ignore_errors=True)
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    specs = [f"{n}=={v}" for n, v in WHEELS.items()]
    print(f"downloading {' '.join(specs)} ...", flush=True)
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", str(downloads), *specs])
    for name, version in WHEELS.items():
        wheel = next(downloads.glob(f"{name}-{version}-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for member in z.namelist():
                if member.endswith(".py") and ".dist-info/" not in member:
                    z.extract(member, corpus / f"{name}-{version}")
    dest = corpus / f"torch-{versions['torch']}" / "torch"
    for src in torch_dir.rglob("*.py"):
        if "__pycache__" in src.parts:
            continue
        target = dest / src.relative_to(torch_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    # A project root of its own, so neuron-lint's cache lands inside the corpus.
    (corpus / "pyproject.toml").write_text("[project]\nname = 'neuron-lint-bench-corpus'\nversion = '0'\n")
    stamp.write_text(json.dumps(versions))
    return versions


def build_tools(work: Path) -> Path:
    venv = work / "tools-venv"
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    stamp = venv / "TOOLS.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == TOOLS:
        return bindir
    shutil.rmtree(venv, ignore_errors=True)
    print(f"installing {', '.join(f'{k}=={v}' for k, v in TOOLS.items())} into {venv} ...", flush=True)
    run([sys.executable, "-m", "venv", str(venv)])
    try:
        run([str(bindir / "python"), "-m", "pip", "install", "--quiet", *(f"{k}=={v}" for k, v in TOOLS.items())])
    except subprocess.CalledProcessError:
        print("warning: could not install TorchFix/ruff; they are left out", file=sys.stderr)
        return bindir
    stamp.write_text(json.dumps(TOOLS))
    return bindir


def corpus_files(corpus: Path) -> list[str]:
    """The files neuron-lint checks: the same list is handed to the bare parsers."""
    sys.path.insert(0, str(REPO))
    from neuron_lint.config.settings import Settings
    from neuron_lint.io.discovery import iter_python_files

    files = [str(p) for p in iter_python_files([str(corpus)], Settings()) if isinstance(p, Path) and p.suffix == ".py"]
    return sorted(files)


# ----------------------------------------------------------------------------- measuring
def _tree_memory(root: int) -> int:
    """Sum of the proportional set size (bytes) of ``root`` and its descendants."""
    pids, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        pids.append(pid)
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    frontier.extend(int(c) for c in fh.read().split())
        except OSError:
            continue
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    return total


def measure(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, int, float]:
    """(wall seconds, peak tree memory in bytes, CPU seconds of the whole tree) of one command."""
    err = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
    peak = 0
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_memory(proc.pid))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    if sys.platform.startswith("linux"):
        sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)  # usage covers every process it waited for (workers too)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    if sampler.is_alive():
        sampler.join()
    if proc.returncode not in (0, 1, 2):  # linters exit 1 on findings, 2 on unparsable files
        err.seek(0)
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode(errors='replace')[-2000:]}")
    if proc.returncode == 2:  # said, so a run that stopped early is not taken for a fast one
        err.seek(0)
        print(f"  exit 2 after {elapsed:.2f} s: {' '.join(cmd[-4:])}: {err.read().decode(errors='replace')[-300:]!r}",
              flush=True)
    err.close()
    return elapsed, peak, usage.ru_utime + usage.ru_stime


PARSE_SCRIPT = """
import sys, warnings
warnings.simplefilter("ignore")
files = open(sys.argv[2]).read().split("\\n")
if sys.argv[1] == "libcst":
    import libcst
    parse = libcst.parse_module
else:
    import ast
    parse = ast.parse
bad = 0
for f in files:
    with open(f, "rb") as fh:
        data = fh.read()
    try:
        parse(data)
    except Exception:
        bad += 1
print(bad)
"""


PARALLEL_PARSE_SCRIPT = """
import os, sys, warnings, multiprocessing as mp
warnings.simplefilter("ignore")
import ast
def parse(chunk):
    bad = 0
    for f in chunk:
        with open(f, "rb") as fh:
            data = fh.read()
        try:
            ast.parse(data)
        except Exception:
            bad += 1
    return bad
if __name__ == "__main__":
    files = open(sys.argv[1]).read().split("\\n")
    files.sort(key=lambda f: -os.path.getsize(f))
    n = len(os.sched_getaffinity(0))
    chunks = [files[i:i + 8] for i in range(0, len(files), 8)]
    with mp.get_context("fork").Pool(n) as pool:
        print(sum(pool.imap_unordered(parse, chunks)))
"""


def compile_sources(*packages: Path) -> None:
    """Byte-compile ``packages`` once, so that no timed run compiles them from source (an environment
    with PYTHONDONTWRITEBYTECODE set would otherwise do it in every process, some 60 ms each)."""
    for package in packages:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=False, capture_output=True)


def neuron_lint_command() -> list[str]:
    """The console script pre-commit would run, from the environment running this script."""
    nl = shutil.which("neuron-lint", path=str(Path(sys.executable).parent))
    return [nl] if nl else [sys.executable, "-m", "neuron_lint"]


def export_revision(work: Path, rev: str) -> Path:
    """The neuron-lint sources of git revision ``rev`` of this repository, exported once into the workdir
    (or ``rev`` itself when it is a folder holding a ``neuron_lint`` package)."""
    if (Path(rev) / "neuron_lint").is_dir():
        return Path(rev).resolve()
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", rev], check=True, capture_output=True, text=True).stdout.strip()
    dest = work / f"neuron-lint-{sha[:12]}"
    if not (dest / "neuron_lint").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "neuron_lint", "rules"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def commands(work: Path, corpus: Path, bindir: Path, file_list: Path, subset: str,
             before: Path | None = None, fix_subset: str = "diffusers") -> dict[str, tuple[list[str], dict]]:
    py = sys.executable
    nl_cmd = neuron_lint_command()
    quiet = ["-q", "--output-format", "concise"]
    cache_env = {**os.environ, "NO_COLOR": "1"}
    nocache_env = {**cache_env, "NEURON_LINT_NO_CACHE": "1"}
    subset_dir = next(corpus.glob(f"{subset}-*"))
    cmds = {
        "nl_cold": (nl_cmd + ["check", *quiet, "."], cache_env),  # the cache is removed first
        "nl_cold_nocache": (nl_cmd + ["check", *quiet, "--no-cache", "."], cache_env),
        "nl_cold_serial": (nl_cmd + ["check", *quiet, "--no-cache", "-j", "1", "."], cache_env),
        "nl_warm": (nl_cmd + ["check", *quiet, "."], cache_env),
        "nl_one_file": (nl_cmd + ["check", "--no-cache", ONE_FILE], cache_env),
        "nl_cold_subset": (nl_cmd + ["check", *quiet, "--no-cache", str(subset_dir.relative_to(corpus))], nocache_env),
        "libcst_parse": ([py, "-c", PARSE_SCRIPT, "libcst", str(file_list)], cache_env),
        "ast_parse": ([py, "-c", PARSE_SCRIPT, "ast", str(file_list)], cache_env),
        "import_libcst": ([py, "-c", "import libcst"], cache_env),
    }
    if before is not None:  # the same interpreter and dependencies, only neuron-lint's sources differ
        check = [py, "-m", "neuron_lint", "check", *quiet, "--no-cache", "."]
        cmds["nl_check_now"] = (check, {**nocache_env, "PYTHONPATH": str(REPO)})
        cmds["nl_check_before"] = (check, {**nocache_env, "PYTHONPATH": str(before)})
    fix_dir = next(corpus.glob(f"{fix_subset}-*"))
    fix_list = work / "fix-files.txt"
    fix_list.write_text("\n".join(f for f in file_list.read_text().split("\n") if Path(f).is_relative_to(fix_dir)))
    cmds["nl_fix_subset"] = (nl_cmd + ["fix", "--diff", "-q", "--no-cache", str(fix_dir.relative_to(corpus))], nocache_env)
    cmds["libcst_parse_subset"] = ([py, "-c", PARSE_SCRIPT, "libcst", str(fix_list)], cache_env)
    if (bindir / "ruff").exists():
        cmds["ruff_all"] = ([str(bindir / "ruff"), "check", "--select", "ALL", "--no-cache", "--quiet", "--exit-zero", "."], cache_env)
    if (bindir / "torchfix").exists():
        cmds["torchfix_subset"] = ([str(bindir / "torchfix"), str(subset_dir.relative_to(corpus))], cache_env)
    return cmds


def tool_version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[-1]
    except Exception:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "neuron-lint-bench")
    ap.add_argument("--reps", type=int, default=3, help="rounds of every fast measurement (median reported)")
    ap.add_argument("--slow-reps", type=int, default=1, help="rounds of the slow ones (LibCST parse, TorchFix)")
    ap.add_argument("--torchfix-subset", default="accelerate", help="package of the corpus TorchFix is timed on")
    ap.add_argument("--only", nargs="*", help="measure only these (names as in the table)")
    ap.add_argument("--extra", action="store_true", help="also time neuron-lint --no-cache, and with -j 1")
    ap.add_argument("--before", metavar="REV", help="also time `check` of this git revision of neuron-lint (same files, same interpreter)")
    ap.add_argument("--fix-subset", default="diffusers", help="package of the corpus `fix --diff` is timed on")
    ap.add_argument("--out", type=Path, default=None, help="default bench/results.json (bench/results-repos.json with --repos)")
    ap.add_argument("--repos", nargs="+", type=Path, metavar="DIR", help="measure these projects instead (see above)")
    ap.add_argument("--fix", action="store_true", help="with --repos: also time `fix --diff --no-cache` against a bare serial LibCST parse of the same files")
    ap.add_argument("--ruff", help="the ruff to run with --repos (default: the benchmark's pinned one, else ruff on PATH)")
    args = ap.parse_args()
    if args.repos:
        return main_repos(args)
    args.out = args.out or HERE / "results.json"

    work = args.workdir.expanduser()
    work.mkdir(parents=True, exist_ok=True)
    versions = build_corpus(work)
    bindir = build_tools(work)
    corpus = work / "corpus"
    files = corpus_files(corpus)
    file_list = work / "files.txt"
    file_list.write_text("\n".join(files))
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    before = export_revision(work, args.before) if args.before else None
    compile_sources(REPO / "neuron_lint", *([before / "neuron_lint"] if before is not None else []))
    cmds = commands(work, corpus, bindir, file_list, args.torchfix_subset, before, args.fix_subset)
    if args.only:
        cmds = {k: v for k, v in cmds.items() if k in args.only}
    elif not args.extra:
        cmds = {k: v for k, v in cmds.items() if k not in ("nl_cold_nocache", "nl_cold_serial")}
    slow = {"libcst_parse", "torchfix_subset", "libcst_parse_subset"}
    print(f"corpus: {len(files)} files, {lines} lines ({', '.join(f'{k} {v}' for k, v in versions.items())})", flush=True)

    times: dict[str, list[float]] = {k: [] for k in cmds}
    cpus: dict[str, list[float]] = {k: [] for k in cmds}
    peaks: dict[str, list[int]] = {k: [] for k in cmds}
    cache_dir = corpus / ".neuron_lint_cache"
    for rep in range(max(args.reps, args.slow_reps)):
        for name, (cmd, env) in cmds.items():
            if rep >= (args.slow_reps if name in slow else args.reps):
                continue
            if name == "nl_cold":
                shutil.rmtree(cache_dir, ignore_errors=True)
            if name == "nl_warm" and not cache_dir.exists():  # --only nl_warm: fill the cache first
                measure(cmds.get("nl_cold", (cmd, env))[0], corpus, env)
            elapsed, peak, cpu = measure(cmd, corpus, env)
            times[name].append(elapsed)
            cpus[name].append(cpu)
            peaks[name].append(peak)
            print(f"  round {rep + 1}: {name:18s} {elapsed:8.2f} s  {cpu:8.2f} s CPU  {peak / 2**20:8.0f} MiB", flush=True)

    med = {k: statistics.median(v) for k, v in times.items() if v}
    mem = {k: max(v) for k, v in peaks.items() if v}
    subset_dir = next(corpus.glob(f"{args.torchfix_subset}-*"))
    subset_files = [f for f in files if Path(f).is_relative_to(subset_dir)]
    ratios = []
    for label, a, b, limit, text in TARGETS:
        if a in med and b in med:
            value = med[a] / med[b]
            ok = value >= limit if label == "cold vs TorchFix" else value <= limit
            ratios.append({"target": label, "text": text, "value": round(value, 3), "limit": limit, "met": ok})
    a, b, limit = MEMORY_TARGET
    if a in mem and b in mem and mem[b]:
        value = mem[a] / mem[b]
        ratios.append({"target": "peak memory vs LibCST parse", "text": "neuron-lint cold peak memory / LibCST parse <= 1.5",
                       "value": round(value, 3), "limit": limit, "met": value <= limit})

    result = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "cpu": _cpu_model(), "system": platform.platform(), "python": platform.python_version(),
        },
        "corpus": {"packages": versions, "files": len(files), "lines": lines,
                   "torchfix_subset": {"package": args.torchfix_subset, "files": len(subset_files),
                                       "lines": sum(Path(f).read_bytes().count(b"\n") for f in subset_files)},
                   "one_file": ONE_FILE},
        "tools": {
            "neuron-lint": tool_version(neuron_lint_command() + ["--version"]),
            "libcst": _module_version("libcst"),
            **{k: v for k, v in TOOLS.items() if (bindir / k).exists()},
        },
        "reps": args.reps, "slow_reps": args.slow_reps,
        "before": args.before, "fix_subset": args.fix_subset,
        "median_seconds": {k: round(v, 3) for k, v in med.items()},
        "all_seconds": {k: [round(x, 3) for x in v] for k, v in times.items() if v},
        "median_cpu_seconds": {k: round(statistics.median(v), 3) for k, v in cpus.items() if v},
        "load_average_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "peak_memory_mib": {k: round(v / 2**20, 1) for k, v in mem.items()},
        "targets": ratios,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(render_table(result))
    print(f"\nwritten to {args.out}")
    return 0


def _load() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def repo_files(root: Path) -> list[str]:
    """The Python files neuron-lint checks in ``root`` with its own configuration (notebooks and
    manifests left out: the floor is the parse of Python modules)."""
    sys.path.insert(0, str(REPO))
    from neuron_lint.config import files as config
    from neuron_lint.config.per_file import SettingsTree
    from neuron_lint.io.discovery import iter_python_files

    cwd = os.getcwd()
    os.chdir(root)
    try:
        tree = SettingsTree(config.from_command_line(["."]))
        return sorted(str(root / p) for p in iter_python_files(["."], tree) if isinstance(p, Path) and p.suffix == ".py")
    finally:
        os.chdir(cwd)


def main_repos(args) -> int:
    work = args.workdir.expanduser()
    work.mkdir(parents=True, exist_ok=True)
    ruff = args.ruff or (str(work / "tools-venv" / "bin" / "ruff") if (work / "tools-venv" / "bin" / "ruff").exists() else shutil.which("ruff"))
    if ruff is None:
        raise SystemExit(f"bench: no ruff (pip install ruff=={TOOLS['ruff']}, or --ruff PATH)")
    py = sys.executable
    nl_cmd = neuron_lint_command()
    quiet = ["-q", "--output-format", "concise"]
    env = {**os.environ, "NO_COLOR": "1"}
    before = export_revision(work, args.before) if args.before else None
    compile_sources(REPO / "neuron_lint", *([before / "neuron_lint"] if before is not None else []))
    repos = []
    for root in args.repos:
        root = root.resolve()
        files = repo_files(root)
        file_list = work / f"files-{root.name}.txt"
        file_list.write_text("\n".join(files))
        lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
        cmds = {
            "nl_cold_nocache": (nl_cmd + ["check", *quiet, "--no-cache", "."], env),
            "nl_warm": (nl_cmd + ["check", *quiet, "."], env),
            "ruff_all": ([ruff, "check", "--select", "ALL", "--no-cache", "--quiet", "--exit-zero", "."], env),
            "ast_parse_parallel": ([py, "-c", PARALLEL_PARSE_SCRIPT, str(file_list)], env),
        }
        if args.fix:
            cmds["nl_fix"] = (nl_cmd + ["fix", "--diff", "-q", "--no-cache", "."], env)
            cmds["libcst_parse"] = ([py, "-c", PARSE_SCRIPT, "libcst", str(file_list)], env)
        if before is not None:
            cmds["nl_before"] = ([py, "-m", "neuron_lint", "check", *quiet, "--no-cache", "."], {**env, "PYTHONPATH": str(before)})
            cmds["nl_now"] = ([py, "-m", "neuron_lint", "check", *quiet, "--no-cache", "."], {**env, "PYTHONPATH": str(REPO)})
        repos.append((root, files, lines, cmds))
        print(f"{root.name}: {len(files)} files, {lines} lines", flush=True)
    times: dict = {}
    cpus: dict = {}
    loads: list = []
    for rep in range(args.reps):
        loads.append(_load())
        for root, _files, _lines, cmds in repos:
            if rep == 0:  # fill the page cache, and neuron-lint's cache for the warm runs
                shutil.rmtree(root / ".neuron_lint_cache", ignore_errors=True)
                measure(nl_cmd + ["check", *quiet, "."], root, env)
            order = list(cmds.items())
            if rep % 2 and "nl_before" in cmds:  # the pair compared runs in turn first and second
                i, j = list(cmds).index("nl_before"), list(cmds).index("nl_now")
                order[i], order[j] = order[j], order[i]
            for name, (cmd, e) in order:
                if name == "libcst_parse" and rep >= args.slow_reps:
                    continue
                elapsed, _peak, cpu = measure(cmd, root, e)
                times.setdefault(root.name, {}).setdefault(name, []).append(elapsed)
                cpus.setdefault(root.name, {}).setdefault(name, []).append(cpu)
                print(f"  round {rep + 1}: {root.name:12s} {name:18s} {elapsed:7.2f} s  {cpu:7.2f} s CPU  load {_load():.2f}", flush=True)
    loads.append(_load())
    for root, *_rest in repos:  # the warm runs' cache is ours, not the project's
        shutil.rmtree(root / ".neuron_lint_cache", ignore_errors=True)
    result = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "cpu": _cpu_model(), "system": platform.platform(), "python": platform.python_version(),
        },
        "tools": {"neuron-lint": tool_version(nl_cmd + ["--version"]), "ruff": tool_version([ruff, "--version"])},
        "reps": args.reps, "before": args.before,
        "load_average_1min_per_round": [round(x, 2) if x is not None else None for x in loads],
        "repos": {},
    }
    for root, files, lines, _cmds in repos:
        med = {k: statistics.median(v) for k, v in times[root.name].items()}
        entry = {"files": len(files), "lines": lines,
                 "median_seconds": {k: round(v, 3) for k, v in med.items()},
                 "all_seconds": {k: [round(x, 3) for x in v] for k, v in times[root.name].items()},
                 "median_cpu_seconds": {k: round(statistics.median(v), 3) for k, v in cpus[root.name].items()},
                 "cold_vs_ruff": round(med["nl_cold_nocache"] / med["ruff_all"], 3),
                 "cold_vs_parse_floor": round(med["nl_cold_nocache"] / med["ast_parse_parallel"], 3),
                 "warm_vs_ruff": round(med["nl_warm"] / med["ruff_all"], 3)}
        if "nl_fix" in med:
            entry["fix_vs_libcst_parse"] = round(med["nl_fix"] / med["libcst_parse"], 3)
        if "nl_before" in med:
            entry["now_vs_before"] = round(med["nl_now"] / med["nl_before"], 3)
        result["repos"][root.name] = entry
    out = args.out or HERE / "results-repos.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(render_repos_table(result))
    print(f"\nwritten to {out}")
    return 0


def render_repos_table(r: dict) -> str:
    out = ["| repository | files | lines | neuron-lint cold, --no-cache | warm | ruff --select ALL --no-cache | parallel ast.parse floor | cold / ruff (<= 1) | cold / floor (<= 2) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in r["repos"].items():
        m = e["median_seconds"]
        out.append(f"| {name} | {e['files']:,} | {e['lines']:,} | {m['nl_cold_nocache']:.2f} | {m['nl_warm']:.2f} | {m['ruff_all']:.2f} | "
                   f"{m['ast_parse_parallel']:.2f} | {e['cold_vs_ruff']:.2f} | {e['cold_vs_parse_floor']:.2f} |")
    out += _ratio_table(r, "fix_vs_libcst_parse", "nl_fix", "libcst_parse",
                        "`fix --diff --no-cache` s | bare serial LibCST parse s | fix / parse (<= 0.5)")
    out += _ratio_table(r, "now_vs_before", "nl_now", "nl_before", "this revision (python -m) | before | now / before")
    return "\n".join(out)


def _ratio_table(r: dict, ratio: str, num: str, den: str, header: str) -> list[str]:
    """A second table of the repositories that have ``ratio``: the two medians and their ratio."""
    rows = [(name, e) for name, e in r["repos"].items() if ratio in e]
    if not rows:
        return []
    out = ["", f"| repository | {header} |", "|---|---:|---:|---:|"]
    for name, e in rows:
        m = e["median_seconds"]
        out.append(f"| {name} | {m[num]:.2f} | {m[den]:.2f} | {e[ratio]:.2f} |")
    return out


def render_table(r: dict) -> str:
    labels = {
        "nl_cold": "neuron-lint, cold (fresh cache, all cores)",
        "nl_cold_nocache": "neuron-lint, cold, --no-cache",
        "nl_cold_serial": "neuron-lint, cold, --no-cache -j 1",
        "nl_warm": "neuron-lint, warm (nothing changed)",
        "nl_one_file": f"neuron-lint, one file ({Path(r['corpus']['one_file']).name}, --no-cache)",
        "libcst_parse": "bare serial LibCST parse",
        "ast_parse": "bare serial ast.parse",
        "ruff_all": "ruff check --select ALL --no-cache",
        "import_libcst": 'python -c "import libcst"',
        "nl_cold_subset": f"neuron-lint, cold, {r['corpus']['torchfix_subset']['package']} only",
        "torchfix_subset": f"TorchFix, {r['corpus']['torchfix_subset']['package']} only",
        "nl_check_now": "neuron-lint check, --no-cache, this revision (python -m)",
        "nl_check_before": f"neuron-lint check, --no-cache, revision {r.get('before', '?')} (python -m)",
        "nl_fix_subset": f"neuron-lint fix --diff, {r.get('fix_subset', '?')} only",
        "libcst_parse_subset": f"bare serial LibCST parse, {r.get('fix_subset', '?')} only",
    }
    out = ["| command | median wall s | median CPU s | peak MiB |", "|---|---:|---:|---:|"]
    for key, label in labels.items():
        if key in r["median_seconds"]:
            cpu = r.get("median_cpu_seconds", {}).get(key, 0)
            out.append(f"| {label} | {r['median_seconds'][key]:.2f} | {cpu:.2f} | {r['peak_memory_mib'].get(key, 0):.0f} |")
    out += ["", "| target | measured | limit | met |", "|---|---:|---:|---|"]
    for t in r["targets"]:
        cmp = ">=" if t["target"] == "cold vs TorchFix" else "<="
        out.append(f"| {t['target']} | {t['value']:.3g} | {cmp} {t['limit']:g} | {'yes' if t['met'] else 'NO'} |")
    return "\n".join(out)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _module_version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
