"""How much of real XLA-path code neuron-lint's legacy-XLA rules see, and how much ``fix`` removes.

    python bench/xla_coverage.py /work/repos/neuron-samples /work/repos/optimum-neuron [--json out.json]

A *legacy line* is a source line that uses a torch_xla name (an import of ``torch_xla`` or
anything bound by one, however aliased), an ``"xla"`` device or backend string (``"xla"``,
``"xla:0"``, ``"xla://"``, ``"openxla"``...) or an XLA environment variable (``XLA_*``,
``PJRT_*``) as a string. The script reports:

- *covered*: the share of legacy lines on which a NRN7xx/NRN110 finding starts or spans;
- *gone*: copies the trees to a scratch folder, runs ``neuron-lint fix --unsafe-fixes`` there,
  and counts legacy lines again (1 - after/before);
- *broken*: fixed files that no longer compile; *unstable*: files a second fix changes again.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

XLA_STRING = re.compile(r"^(xla(:\d+|:\{.*\}|://.*)?|openxla(_eval)?|aot_torchxla_.*)$")
XLA_ENV = re.compile(r"^(XLA_[A-Z0-9_]+|PJRT_[A-Z0-9_]+)$")


def legacy_lines(text: str) -> set[int]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    lines: set[int] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "torch_xla":
                    lines.add(node.lineno)
                    bound.add(a.asname or "torch_xla")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and node.module.split(".")[0] == "torch_xla":
            lines.add(node.lineno)
            bound.update(a.asname or a.name for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in bound and isinstance(node.ctx, ast.Load):
            lines.add(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            XLA_STRING.match(node.value) or XLA_ENV.match(node.value)
        ):
            lines.add(node.lineno)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) and str(node.values[0].value).startswith("xla:"):
            lines.add(node.lineno)
    return lines


def python_files(root: Path):
    for p in sorted(root.rglob("*.py")):
        if ".git" not in p.parts:
            yield p


def findings_by_file(paths: list[str]) -> dict[str, list[dict]]:
    """NRN7xx/NRN110 findings per file (in process: JSON output would spell out every fix's edits)."""
    from neuron_lint.api import check_file
    from neuron_lint.config.settings import Settings

    by: dict[str, list[dict]] = {}
    for path in paths:
        for f in check_file(path, Settings()).findings:
            if f.code.startswith("NRN7") or f.code == "NRN110":
                by.setdefault(os.path.abspath(path), []).append(
                    {"code": f.code, "location": {"row": f.line}, "end_location": {"row": f.end_line}})
    return by


def measure(roots: list[Path]) -> dict:
    files = [p for r in roots for p in python_files(r)]
    before = {str(p.resolve()): legacy_lines(p.read_text(encoding="utf-8", errors="replace")) for p in files}
    before = {k: v for k, v in before.items() if v}
    total = sum(len(v) for v in before.values())
    found = findings_by_file(list(before))
    covered, missed = 0, []
    for path, lines in before.items():
        spans = [(f["location"]["row"], f["end_location"]["row"]) for f in found.get(path, [])]
        for line in sorted(lines):
            if any(a <= line <= b for a, b in spans):
                covered += 1
            else:
                missed.append(f"{path}:{line}")
    # fix a copy
    scratch = Path(tempfile.mkdtemp(prefix="xla-coverage-"))
    copies = {}
    for i, path in enumerate(before):
        dest = scratch / f"{i:04d}" / Path(path).name
        dest.parent.mkdir(parents=True)
        shutil.copy2(path, dest)
        copies[path] = dest
    cmd = [sys.executable, "-m", "neuron_lint", "fix", "--no-cache", "--unsafe-fixes", "--isolated", *map(str, copies.values())]
    subprocess.run(cmd, capture_output=True, text=True)
    after_total, broken, unstable = 0, [], []
    snapshot = {p: c.read_text(encoding="utf-8") for p, c in copies.items()}
    for path, dest in copies.items():
        text = snapshot[path]
        try:
            compile(text, str(dest), "exec")
        except SyntaxError as exc:
            broken.append(f"{path}: {exc}")
        after_total += len(legacy_lines(text))
    subprocess.run(cmd, capture_output=True, text=True)
    for path, dest in copies.items():
        if dest.read_text(encoding="utf-8") != snapshot[path]:
            unstable.append(path)
    result = {
        "roots": [str(r) for r in roots],
        "files_with_legacy_lines": len(before),
        "legacy_lines": total,
        "covered": covered,
        "covered_share": round(covered / total, 4) if total else 1.0,
        "legacy_lines_after_fix": after_total,
        "gone_share": round(1 - after_total / total, 4) if total else 1.0,
        "broken": broken,
        "unstable": unstable,
        "missed": missed,
        "scratch": str(scratch),
    }
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--show-missed", type=int, default=20)
    args = ap.parse_args()
    r = measure(args.roots)
    print(f"files with legacy lines: {r['files_with_legacy_lines']}")
    print(f"legacy lines: {r['legacy_lines']}  with a finding: {r['covered']} ({r['covered_share']:.1%}, target 95%)")
    print(f"after fix --unsafe-fixes: {r['legacy_lines_after_fix']} left, {r['gone_share']:.1%} gone (target 60%)")
    print(f"broken files: {len(r['broken'])}  changed by a second fix: {len(r['unstable'])}")
    for m in r["missed"][: args.show_missed]:
        print("  missed", m)
    for b in r["broken"]:
        print("  broken", b)
    for u in r["unstable"]:
        print("  unstable", u)
    print(f"fixed copies: {r['scratch']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
