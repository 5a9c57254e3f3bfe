#!/usr/bin/env python3
"""What ``neuron-lint`` does to real Jupyter notebooks: findings by cell, and what ``fix`` writes.

    python bench/notebooks.py /work/repos/minGPT /work/repos/dinov2 ... [--unsafe-fixes] [--json out.json]

Every ``*.ipynb`` under the roots is copied into a temporary folder (the originals are never
written). For each copy:

* ``check``: findings (``--output-format json``) and errors; every finding must name a cell and a
  line inside that cell's source;
* ``fix`` (safe, or with ``--unsafe-fixes``): the file must still be JSON; every cell must keep its
  type, metadata, outputs and execution count, and non-code cells their source; the lines of the
  file that differ must all be items of a cell's ``source`` list (or the ``source`` string);
  the code cells, joined with their IPython lines dropped, must still compile when they did;
* a second ``fix`` must change nothing; a notebook with nothing to fix must keep its bytes and
  its modification time.

Output: one line per notebook with a problem, and a summary table; everything in ``--json``.
Stdlib only; it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_SOURCE_ITEM = re.compile(r'\s*(?:"source":\s*)?"(?:[^"\\]|\\.)*",?')


def tool() -> str:
    here = Path(sys.executable).with_name("neuron-lint")
    return str(here) if here.exists() else "neuron-lint"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([tool(), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def python_of(nb: dict) -> str:
    """The code cells, IPython lines (magics, shell escapes) dropped: for a compile check."""
    out = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        if src.lstrip().startswith("%%"):
            continue
        out.append("\n".join("pass" if re.match(r"\s*[%!]|.*\?$", line) else line for line in src.split("\n")))
    return "\n".join(out)


def compiles(text: str) -> bool:
    try:
        compile(text, "<nb>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def check_one(path: Path, original: bytes, unsafe: bool) -> dict:
    folder = path.parent
    out: dict = {"path": str(path), "problems": []}
    checked = run("check", "--no-cache", "--isolated", "--output-format", "json", "--exit-zero", path.name, cwd=folder)
    try:
        findings = json.loads(checked.stdout or "[]")
    except json.JSONDecodeError:
        out["problems"].append(f"check output is not JSON: {checked.stderr.strip()[:200]}")
        return out
    out["findings"] = len(findings)
    out["errors"] = checked.stderr.count("error:")
    before = json.loads(original.decode("utf-8-sig"))
    for f in findings:
        cell = f.get("cell")
        if not cell or cell > len(before["cells"]):
            out["problems"].append(f"{f['code']} has no cell")
            continue
        src = before["cells"][cell - 1]["source"]
        if f["location"]["row"] > len(("".join(src) if isinstance(src, list) else src).split("\n")):
            out["problems"].append(f"{f['code']} at cell {cell}:{f['location']['row']} is past the cell")
    mtime = os.stat(path).st_mtime_ns
    args = ["fix", "--no-cache", "--isolated", "--quiet"] + (["--unsafe-fixes"] if unsafe else []) + [path.name]
    run(*args, cwd=folder)
    fixed = path.read_bytes()
    out["changed"] = fixed != original
    if not out["changed"]:
        if os.stat(path).st_mtime_ns != mtime:
            out["problems"].append("rewritten with nothing to change")
        return out
    try:
        after = json.loads(fixed.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        out["problems"].append(f"not JSON after fix: {exc}")
        return out
    if len(after["cells"]) != len(before["cells"]):
        out["problems"].append("cell count changed")
    for n, (a, b) in enumerate(zip(before["cells"], after["cells"]), 1):
        if {k: v for k, v in a.items() if k != "source"} != {k: v for k, v in b.items() if k != "source"}:
            out["problems"].append(f"cell {n}: more than its source changed")
        if a.get("cell_type") != "code" and a.get("source") != b.get("source"):
            out["problems"].append(f"cell {n}: a {a.get('cell_type')} cell changed")
    if {k: v for k, v in before.items() if k != "cells"} != {k: v for k, v in after.items() if k != "cells"}:
        out["problems"].append("notebook metadata changed")
    diff = [line[2:] for line in difflib.ndiff(original.decode("utf-8-sig").splitlines(), fixed.decode("utf-8-sig").splitlines())
            if line[:2] in ("+ ", "- ")]
    stray = [line for line in diff if not _SOURCE_ITEM.fullmatch(line) and line.strip() not in ("[", "]", "],", "[]", "[],")]
    if stray:
        out["problems"].append(f"lines outside cell sources changed: {stray[:2]}")
    out["cells_changed"] = sum(1 for a, b in zip(before["cells"], after["cells"]) if a.get("source") != b.get("source"))
    if compiles(python_of(before)) and not compiles(python_of(after)):
        out["problems"].append("the code cells no longer compile")
    second = path.read_bytes()
    run(*args, cwd=folder)
    if path.read_bytes() != second:
        out["problems"].append("a second fix changed it again")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for root in args.roots:
            for i, nb in enumerate(sorted(Path(root).rglob("*.ipynb"))):
                if ".ipynb_checkpoints" in nb.parts:
                    continue
                folder = Path(tmp) / f"{Path(root).name}-{i}"
                folder.mkdir()
                copy = folder / nb.name
                shutil.copyfile(nb, copy)
                result = check_one(copy, nb.read_bytes(), args.unsafe_fixes)
                result["path"] = str(nb)
                results.append(result)
                if result["problems"]:
                    print(f"{nb}: {'; '.join(result['problems'])}")
    total = len(results)
    print(f"\n| notebooks | with findings | findings | check errors | fixed (changed) | cells rewritten | with a problem |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {total} | {sum(1 for r in results if r.get('findings'))} | {sum(r.get('findings', 0) for r in results)} "
          f"| {sum(r.get('errors', 0) for r in results)} | {sum(1 for r in results if r.get('changed'))} "
          f"| {sum(r.get('cells_changed', 0) for r in results)} | {sum(1 for r in results if r['problems'])} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 1 if any(r["problems"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
