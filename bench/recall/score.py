"""Score neuron-lint against the held-out labelled lines in this folder (standard library only).

Each ``*.jsonl`` file here holds the labelled lines of one public repository: ``repo``, ``commit``,
``path``, ``line``, ``label`` (``must-flag`` or ``trap``), ``pattern``, ``reason`` and the source
``text`` of the line. The lines were labelled by reading the code, before neuron-lint was run on it.

Give the checkouts on the command line, as ``NAME=DIR`` or just ``DIR`` (then the folder's name is
the data set's name: ``yolov5.jsonl`` goes with ``.../yolov5``)::

    python bench/recall/score.py /work/recall/yolov5 mae=/tmp/mae [--json] [--neuron-lint CMD]

For each checkout it runs ``neuron-lint check --no-cache --output-format json --exit-zero`` on the
labelled files. A labelled line counts as found when neuron-lint reports any finding on it. The
report gives recall on must-flag lines and the flag rate on traps, per repository and in total, and
the missed must-flag lines (and flagged traps) grouped by pattern. A line whose text in the checkout
differs from the labelled text is reported as a mismatch (the checkout is at another commit).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_sets() -> dict[str, list[dict]]:
    sets = {}
    for f in sorted(HERE.glob("*.jsonl")):
        sets[f.stem] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return sets


def run_lint(cmd: list[str], checkout: Path, paths: list[str]) -> dict[str, list[dict]]:
    """Findings per relative path (neuron-lint is run inside the checkout)."""
    proc = subprocess.run(
        [*cmd, "check", "--no-cache", "--output-format", "json", "--exit-zero", *paths],
        cwd=checkout, capture_output=True, text=True,
    )
    if proc.returncode not in (0, 1):
        sys.exit(f"neuron-lint failed in {checkout} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    data = json.loads(proc.stdout or "[]")
    findings = data if isinstance(data, list) else data.get("findings", data.get("results", []))
    by_path: dict[str, list[dict]] = defaultdict(list)
    for item in findings:
        path = item.get("path") or item.get("filename") or ""
        try:
            rel = Path(path).resolve().relative_to(checkout.resolve()).as_posix()
        except ValueError:
            rel = Path(path).as_posix()
        by_path[rel].append(item)
    return by_path


def _line(item: dict) -> int | None:
    for key in ("line", "row"):
        if isinstance(item.get(key), int):
            return item[key]
    loc = item.get("location") or item.get("start") or {}
    return loc.get("line") or loc.get("row")


def score(name: str, rows: list[dict], checkout: Path, cmd: list[str]) -> dict:
    paths = sorted({r["path"] for r in rows})
    found = run_lint(cmd, checkout, paths)
    lines = {p: defaultdict(list) for p in paths}
    for p, items in found.items():
        for item in items:
            if p in lines:
                lines[p][_line(item)].append(item.get("code"))
    result = {"repo": rows[0]["repo"], "commit": rows[0]["commit"], "must_flag": 0, "found": 0,
              "traps": 0, "traps_flagged": 0, "missed": [], "flagged_traps": [], "mismatched": []}
    for r in rows:
        try:
            text = (checkout / r["path"]).read_text(encoding="utf-8").splitlines()[r["line"] - 1].strip()
        except (OSError, IndexError):
            text = None
        if text != r["text"]:
            result["mismatched"].append({"path": r["path"], "line": r["line"]})
        codes = sorted(set(lines[r["path"]].get(r["line"], [])))
        entry = {"path": r["path"], "line": r["line"], "pattern": r["pattern"], "text": r["text"], "codes": codes}
        if r["label"] == "must-flag":
            result["must_flag"] += 1
            if codes:
                result["found"] += 1
            else:
                result["missed"].append(entry)
        else:
            result["traps"] += 1
            if codes:
                result["traps_flagged"] += 1
                result["flagged_traps"].append(entry)
    return result


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="+", help="NAME=DIR or DIR (the folder's name is the data set's name)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--neuron-lint", default="neuron-lint", help="command that runs neuron-lint (default: %(default)s)")
    args = ap.parse_args(argv)
    sets = load_sets()
    cmd = shlex.split(args.neuron_lint)
    results = {}
    for spec in args.checkouts:
        name, _, folder = spec.rpartition("=") if "=" in spec else (Path(spec).name, "", spec)
        if name not in sets:
            ap.error(f"no labelled set named {name!r} (have: {', '.join(sets)})")
        results[name] = score(name, sets[name], Path(folder), cmd)
    total = {k: sum(r[k] for r in results.values()) for k in ("must_flag", "found", "traps", "traps_flagged")}
    if args.json:
        print(json.dumps({"repos": results, "total": total}, indent=2))
        return 0
    print(f"{'repository':<36} {'must-flag':>10} {'found':>6} {'recall':>7} {'traps':>6} {'flagged':>8} {'rate':>6}")
    for name, r in results.items():
        print(f"{r['repo']:<36} {r['must_flag']:>10} {r['found']:>6} {_pct(r['found'], r['must_flag']):>7} "
              f"{r['traps']:>6} {r['traps_flagged']:>8} {_pct(r['traps_flagged'], r['traps']):>6}")
    print(f"{'total':<36} {total['must_flag']:>10} {total['found']:>6} {_pct(total['found'], total['must_flag']):>7} "
          f"{total['traps']:>6} {total['traps_flagged']:>8} {_pct(total['traps_flagged'], total['traps']):>6}")
    missed = defaultdict(list)
    for name, r in results.items():
        for m in r["missed"]:
            missed[m["pattern"]].append((name, m))
    if missed:
        print("\nmissed must-flag lines, by pattern:")
        for pattern, items in sorted(missed.items(), key=lambda kv: -len(kv[1])):
            print(f"  {pattern} ({len(items)})")
            for name, m in items:
                print(f"    {name}/{m['path']}:{m['line']}: {m['text'][:100]}")
    flagged = [(name, t) for name, r in results.items() for t in r["flagged_traps"]]
    if flagged:
        print("\nflagged traps:")
        for name, t in flagged:
            print(f"    {name}/{t['path']}:{t['line']} [{','.join(t['codes'])}] ({t['pattern']}): {t['text'][:90]}")
    mism = [(name, m) for name, r in results.items() for m in r["mismatched"]]
    if mism:
        print(f"\n{len(mism)} labelled lines differ from the checkout (another commit?):")
        for name, m in mism[:20]:
            print(f"    {name}/{m['path']}:{m['line']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
