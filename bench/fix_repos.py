#!/usr/bin/env python3
"""What ``neuron-lint fix`` does to whole repositories: how much it fixes, and what it breaks.

    python bench/fix_repos.py /work/repos/nanoGPT /work/repos/timm ... \\
        [--select NRN2] [--json out.json] [--keep DIR] [--timeout 1800]

For each repository the script makes two copies in a temporary directory (one for
``neuron-lint fix``, one for ``neuron-lint fix --unsafe-fixes``); the original is never written.
It measures:

* findings before and after: ``neuron-lint check --no-cache --output-format json
  --exit-zero [--select S] .`` (cwd = the copy), counted per code; fixed % is
  (before - after) / before, so findings a fix introduces count against it;
* for every ``.py`` file, before and after: whether it compiles (``compile()`` in this
  process, on the file's bytes), whether ``ruff check --isolated --select E501,I001,F821
  --line-length N`` passes, and whether ``ruff format --check --isolated --line-length N`` passes,
  N being the project's line length as neuron-lint reads it (ruff's or black's ``line-length``,
  else flake8's or isort's, else 88: the limit the fixes keep to) (ruff is
  run in batches over explicit file lists, so its default excludes do not hide files);
* files changed (bytes differ from the original), files that compiled before and do not
  now (with the error), changed files that passed ruff E501/I001/F821 or ruff format before and
  fail now (with the new codes), and changed files that already failed E501/I001/F821 and now
  have more violations;
* idempotence: ``neuron-lint fix --diff`` run again on the fixed copy must exit 0 with
  empty output; the files it would still change are listed;
* with ``--keep DIR``: the unified diff of original vs fixed, ``DIR/NAME.safe.diff`` and
  ``DIR/NAME.unsafe.diff``.

An exit code 2 from neuron-lint is reported as "errors" (the first lines of its stderr) and the
measurement goes on; a failure in one repository does not stop the others. The tools are the
``neuron-lint`` and ``ruff`` next to ``sys.executable`` (else on PATH); options that the
installed ``neuron-lint fix``/``check`` does not have (e.g. ``--no-cache`` on older versions)
are left out, and the JSON says which. Output: a markdown table on stdout, everything in
``--json``. Stdlib only; it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

RUFF_CHECK = ["check", "--isolated", "--select", "E501,I001,F821", "--no-cache"]  # F821: a fix naming what the module never binds
RUFF_FORMAT = ["format", "--check", "--isolated", "--no-cache"]


def project_line_length(root: Path) -> int:
    """The line length neuron-lint keeps fixes within in ``root`` (ruff's or black's
    ``line-length``, else flake8's or isort's, else 88): the one the ruff checks use."""
    try:
        from neuron_lint.fixes.line_length import line_length_of
    except ImportError:  # an older neuron-lint without it: ruff's default
        return 88
    return line_length_of(str(root))
ARG_CHUNK = 60_000  # characters of file names per ruff invocation
SKIP_DIRS = {".git", ".neuron_lint_cache", ".ruff_cache"}  # not part of the repository's code
SLOW_S = 300  # a single command slower than this is called out
CONCISE = re.compile(r"^(?P<path>.+?):\d+:\d+: (?P<code>[\w-]+): ")
WOULD_REFORMAT = re.compile(r"^Would reformat: (?P<path>.+)$")
FAILED_PARSE = re.compile(r"^error: Failed to parse (?P<path>.+?):\d+:\d+")


# --------------------------------------------------------------------------- tools


def find_tool(name: str) -> str:
    """The executable next to the running Python (a venv's bin/), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if not found:
        sys.exit(f"fix_repos: {name} not found next to {sys.executable} or on PATH")
    return found


def run(cmd: list[str], cwd: Path | str, timeout: float) -> dict:
    """Run a command; return rc, stdout, stderr and wall seconds (rc None on timeout)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, _text(exc.stdout), _text(exc.stderr) + f"\ntimed out after {timeout}s"
    return {"rc": rc, "stdout": out, "stderr": err, "seconds": round(time.monotonic() - start, 2)}


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def first_lines(text: str, n: int = 8) -> list[str]:
    return [line for line in text.strip().splitlines() if line.strip()][:n]


class NeuronLint:
    """Builds neuron-lint command lines, leaving out options this version does not have."""

    WANTED = ("--no-cache", "--isolated", "--exit-zero", "--unsafe-fixes", "--diff")

    def __init__(self, exe: str, select: str | None, timeout: float):
        self.exe, self.select, self.timeout = exe, select, timeout
        self.supported = {sub: self._options(sub) for sub in ("check", "fix")}

    def _options(self, sub: str) -> set[str]:
        env = dict(os.environ, COLUMNS="300", NO_COLOR="1")
        proc = subprocess.run(
            [self.exe, sub, "--help"], capture_output=True, text=True, env=env, timeout=60
        )
        return {opt for opt in self.WANTED if opt in proc.stdout}

    def dropped(self) -> dict[str, list[str]]:
        wanted = {
            "check": ["--no-cache", "--exit-zero"],
            "fix": ["--no-cache", "--unsafe-fixes", "--diff"],
        }
        return {
            sub: [o for o in opts if o not in self.supported[sub]] for sub, opts in wanted.items()
        }

    def _cmd(self, sub: str, *flags: str) -> list[str]:
        cmd = [self.exe, sub] + [f for f in flags if f in self.supported[sub]]
        if self.select:
            cmd += ["--select", self.select]
        return cmd + ["."]

    def check(self, cwd: Path) -> dict:
        cmd = self._cmd("check", "--no-cache", "--exit-zero")
        cmd[-1:-1] = ["--output-format", "json"]
        return run(cmd, cwd, self.timeout)

    def fix(self, cwd: Path, unsafe: bool, diff: bool = False) -> dict:
        flags = ["--no-cache"] + ["--unsafe-fixes"] * unsafe + ["--diff"] * diff
        return run(self._cmd("fix", *flags), cwd, self.timeout)


# --------------------------------------------------------------------------- measurements


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes); a symlink is its target's name."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                files[rel] = b"symlink -> " + os.fsencode(os.readlink(path))
            else:
                with open(path, "rb") as f:
                    files[rel] = f.read()
    return files


def py_files(files: dict[str, bytes], root: Path) -> list[str]:
    return sorted(rel for rel in files if rel.endswith(".py") and not (root / rel).is_symlink())


def compile_errors(root: Path, names: list[str]) -> dict[str, str]:
    """File -> error, for the .py files that do not compile."""
    errors = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rel in names:
            try:
                compile((root / rel).read_bytes(), rel, "exec", dont_inherit=True)
            except SyntaxError as exc:
                errors[rel] = f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
            except (ValueError, RecursionError, MemoryError, OSError) as exc:
                errors[rel] = f"{type(exc).__name__}: {exc}"
    return errors


def chunks(names: list[str]):
    batch, size = [], 0
    for name in names:
        if batch and size + len(name) > ARG_CHUNK:
            yield batch
            batch, size = [], 0
        batch.append(name)
        size += len(name) + 1
    if batch:
        yield batch


def ruff_check(
    ruff: str, root: Path, names: list[str], timeout: float
) -> dict[str, collections.Counter]:
    """File -> Counter of E501/I001/F821 (and invalid-syntax) diagnostics; absent = passes."""
    result: dict[str, collections.Counter] = {}
    for batch in chunks(names):
        cmd = [ruff, *RUFF_CHECK, "--line-length", str(project_line_length(root)), "--exit-zero",
               "--output-format", "json", "--", *batch]
        proc = run(cmd, root, timeout)
        try:
            diagnostics = json.loads(proc["stdout"] or "[]")
        except json.JSONDecodeError:
            raise RuntimeError(f"ruff check failed: {first_lines(proc['stderr'], 3)}") from None
        for diag in diagnostics:
            rel = os.path.relpath(diag["filename"], root)
            result.setdefault(rel, collections.Counter())[diag.get("code") or "invalid-syntax"] += 1
    return result


def ruff_format(ruff: str, root: Path, names: list[str], timeout: float) -> dict[str, str]:
    """File -> why `ruff format --check` fails on it ("unformatted", "invalid-syntax")."""
    result: dict[str, str] = {}
    for batch in chunks(names):
        cmd = [ruff, *RUFF_FORMAT, "--line-length", str(project_line_length(root)), "--output-format", "concise",
               "--", *batch]
        proc = run(cmd, root, timeout)
        for line in (proc["stdout"] + "\n" + proc["stderr"]).splitlines():
            if m := CONCISE.match(line):
                result.setdefault(m["path"], m["code"])
            elif m := WOULD_REFORMAT.match(line):  # ruff without --output-format for format
                result.setdefault(m["path"], "unformatted")
            elif m := FAILED_PARSE.match(line):
                result.setdefault(m["path"], "invalid-syntax")
        if proc["rc"] not in (0, 1) and not result and "error" in proc["stderr"]:
            raise RuntimeError(f"ruff format failed: {first_lines(proc['stderr'], 3)}")
    return {os.path.relpath(root / p, root): why for p, why in result.items()}


def findings(proc: dict) -> dict:
    """Parse `neuron-lint check --output-format json`: total and per-code counts."""
    out: dict = {"rc": proc["rc"], "seconds": proc["seconds"]}
    if proc["rc"] not in (0, 1):
        out["errors"] = first_lines(proc["stderr"])
    try:
        items = json.loads(proc["stdout"])
    except json.JSONDecodeError:
        out.update(total=None, by_code={})
        out.setdefault("errors", first_lines(proc["stderr"]) or ["no JSON on stdout"])
        return out
    # a file neuron-lint could not read or parse is an item with no code (as in ruff's JSON)
    codes = collections.Counter(item["code"] or item.get("name") or "file-error" for item in items)
    out.update(total=sum(codes.values()), by_code=dict(sorted(codes.items())))
    return out


def snapshot(root: Path, ruff: str, timeout: float) -> dict:
    """Files, compile errors and ruff results of a tree."""
    files = tree_files(root)
    names = py_files(files, root)
    return {
        "files": files,
        "py": names,
        "compile": compile_errors(root, names),
        "ruff_check": ruff_check(ruff, root, names, timeout),
        "ruff_format": ruff_format(ruff, root, names, timeout),
    }


# --------------------------------------------------------------------------- comparisons


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def regressions(before: dict, after: dict, changed: list[str]) -> dict:
    """What got worse between two snapshots."""
    newly_noncompiling = [
        {"file": f, "error": after["compile"][f]}
        for f in after["py"]
        if f in after["compile"] and f not in before["compile"] and f in before["files"]
    ]
    newly_ruff, worse_ruff, newly_format = [], [], []
    for f in changed:
        if not f.endswith(".py"):
            continue
        was, now = before["ruff_check"].get(f), after["ruff_check"].get(f)
        if now and not was and f in before["files"]:
            newly_ruff.append({"file": f, "codes": dict(now)})
        elif now and was and sum(now.values()) > sum(was.values()):
            grown = {c: n - was.get(c, 0) for c, n in now.items() if n > was.get(c, 0)}
            worse_ruff.append({"file": f, "new": grown})
        if f in after["ruff_format"] and f not in before["ruff_format"] and f in before["files"]:
            newly_format.append({"file": f, "reason": after["ruff_format"][f]})
    return {
        "newly_noncompiling": newly_noncompiling,
        "newly_failing_ruff_check": newly_ruff,
        "worse_ruff_check": worse_ruff,
        "newly_failing_ruff_format": newly_format,
    }


def diff_paths(diff_text: str) -> list[str]:
    """Files named in a unified diff's `+++ b/PATH` lines."""
    paths = []
    for line in diff_text.splitlines():
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0].strip()
            paths.append(path[2:] if path.startswith("b/") else path)
    return sorted(set(paths))


def unified_diff(before: dict[str, bytes], after: dict[str, bytes], changed: list[str]) -> str:
    parts = []
    for f in changed:
        old, new = before.get(f), after.get(f)
        try:
            a = old.decode().splitlines(keepends=True) if old is not None else []
            b = new.decode().splitlines(keepends=True) if new is not None else []
        except UnicodeDecodeError:
            parts.append(f"Binary files a/{f} and b/{f} differ\n")
            continue
        lines = difflib.unified_diff(
            a,
            b,
            f"a/{f}" if old is not None else "/dev/null",
            f"b/{f}" if new is not None else "/dev/null",
        )
        parts.extend(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        )
    return "".join(parts)


# --------------------------------------------------------------------------- one repository


def fix_run(
    name: str, copy: Path, unsafe: bool, base: dict, before_total, lint: NeuronLint, ruff: str, args
) -> dict:
    """Fix one copy and measure it against the original snapshot."""
    label = "unsafe" if unsafe else "safe"
    fixed = lint.fix(copy, unsafe)
    out: dict = {
        "fix_rc": fixed["rc"],
        "fix_seconds": fixed["seconds"],
        "fix_summary": (first_lines(fixed["stdout"][-2000:], 999) or [""])[-1],
    }
    if fixed["rc"] not in (0, 1):
        out["errors"] = first_lines(fixed["stderr"])
    out["findings_after"] = after = findings(lint.check(copy))
    if before_total and after["total"] is not None:
        out["fixed"] = before_total - after["total"]
        out["fixed_pct"] = round(100 * out["fixed"] / before_total, 1)
    now = snapshot(copy, ruff, args.timeout)
    changed = changed_files(base["files"], now["files"])
    out["files_changed"] = changed
    out.update(regressions(base, now, changed))
    second = lint.fix(copy, unsafe, diff=True)
    out["second_run"] = {
        "rc": second["rc"],
        "seconds": second["seconds"],
        "clean": second["rc"] == 0 and not second["stdout"].strip(),
        "files": diff_paths(second["stdout"]),
    }
    if second["rc"] not in (0, 1):
        out["second_run"]["errors"] = first_lines(second["stderr"])
    if args.keep:
        target = Path(args.keep) / f"{name}.{label}.diff"
        target.write_text(unified_diff(base["files"], now["files"], changed), errors="replace")
        out["diff_file"] = str(target)
    slow = [
        (what, s)
        for what, s in (
            ("fix", fixed["seconds"]),
            ("check after", after["seconds"]),
            ("fix --diff again", second["seconds"]),
        )
        if s > SLOW_S
    ]
    if slow:
        out["slow"] = slow
    return out


def measure_repo(repo: Path, lint: NeuronLint, ruff: str, args) -> dict:
    name = repo.name
    start = time.monotonic()
    result: dict = {"name": name, "path": str(repo), "commit": manifest_commit(repo)}
    work = Path(tempfile.mkdtemp(prefix=f"fix_repos_{name}_", dir=args.tmp))
    try:
        copies = {}
        for label in ("safe", "unsafe"):
            copies[label] = work / label
            shutil.copytree(repo, copies[label], symlinks=True)
        base = snapshot(copies["safe"], ruff, args.timeout)
        result["py_files"] = len(base["py"])
        result["line_length"] = project_line_length(copies["safe"])
        result["noncompiling_before"] = len(base["compile"])
        result["failing_ruff_check_before"] = len(base["ruff_check"])
        result["failing_ruff_format_before"] = len(base["ruff_format"])
        result["findings_before"] = before = findings(lint.check(copies["safe"]))
        for label in ("safe", "unsafe"):
            progress(f"{name}: fix{' --unsafe-fixes' if label == 'unsafe' else ''}")
            result[label] = fix_run(
                name, copies[label], label == "unsafe", base, before["total"], lint, ruff, args
            )
    except Exception as exc:  # one repository's failure must not stop the others
        result.setdefault("errors", []).append(f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["seconds"] = round(time.monotonic() - start, 1)
    return result


def manifest_commit(repo: Path) -> str | None:
    """The commit recorded for this repository in a MANIFEST.txt beside it, if any."""
    manifest = repo.parent / "MANIFEST.txt"
    if manifest.is_file():
        for line in manifest.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == repo.name:
                return f"{parts[1]}@{parts[2]}"
    return None


def progress(message: str) -> None:
    print(f"[{dt.datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- report


def pct(run: dict) -> str:
    if run.get("fixed_pct") is None:
        return "n/a"
    return f"{run['fixed']} ({run['fixed_pct']}%)"


def run_errors(run: dict) -> list[str]:
    errs = list(run.get("errors", [])) + list(run.get("findings_after", {}).get("errors", []))
    return errs + list(run.get("second_run", {}).get("errors", []))


def table(results: list[dict]) -> str:
    head = [
        "repo",
        "findings before",
        "fixed by `fix`",
        "fixed by `fix --unsafe-fixes`",
        "files changed (safe / unsafe)",
        "newly non-compiling",
        "second-run changes",
        "newly failing E501/I001/F821",
        "E501/I001/F821 worse (already failing)",
        "newly failing ruff format",
        "time (s)",
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        safe, unsafe = r.get("safe", {}), r.get("unsafe", {})

        def both(key, s=safe, u=unsafe):
            return f"{len(s.get(key, []))} / {len(u.get(key, []))}"

        second = (
            f"{len(safe.get('second_run', {}).get('files', []))} / "
            f"{len(unsafe.get('second_run', {}).get('files', []))}"
        )
        before = r.get("findings_before", {}).get("total")
        rows.append(
            "| "
            + " | ".join(
                [
                    r["name"],
                    "error" if before is None else str(before),
                    pct(safe),
                    pct(unsafe),
                    both("files_changed"),
                    both("newly_noncompiling"),
                    second,
                    both("newly_failing_ruff_check"),
                    both("worse_ruff_check"),
                    both("newly_failing_ruff_format"),
                    str(r.get("seconds", "")),
                ]
            )
            + " |"
        )
    return "\n".join(rows)


def notes(results: list[dict]) -> str:
    """Errors, slow commands and the regressions themselves, under the table."""
    lines = []
    for r in results:
        for err in r.get("errors", []) + r.get("findings_before", {}).get("errors", []):
            lines.append(f"- {r['name']}: error: {err}")
        for label in ("safe", "unsafe"):
            run = r.get(label, {})
            tag = f"{r['name']} ({label})"
            if run_errors(run):
                lines.append(
                    f"- {tag}: errors (exit {run.get('fix_rc')}): "
                    + " / ".join(run_errors(run)[:4])
                )
            for what, s in run.get("slow", []):
                lines.append(f"- {tag}: `{what}` took {s:.0f}s")
            for item in run.get("newly_noncompiling", []):
                lines.append(f"- {tag}: no longer compiles: {item['file']}: {item['error']}")
            for item in run.get("newly_failing_ruff_check", [])[:10]:
                lines.append(f"- {tag}: newly fails ruff check: {item['file']} {item['codes']}")
            if not run.get("second_run", {}).get("clean", True):
                files = run["second_run"]["files"]
                lines.append(
                    f"- {tag}: second run would change {len(files)} file(s): "
                    + ", ".join(files[:8])
                    + (" ..." if len(files) > 8 else "")
                )
    return "\n".join(lines)


def meta(lint: NeuronLint, ruff: str, args) -> dict:
    def version(exe):
        return run([exe, "--version"], ".", 60)["stdout"].strip()

    python = Path(sys.executable)
    probe = "import neuron_lint, os; print(os.path.dirname(neuron_lint.__file__))"
    # cwd = the executable's folder, so the probe imports what the neuron-lint script imports
    where = run([str(python), "-c", probe], Path(lint.exe).parent, 60)["stdout"].strip()
    source = {"path": where}
    if where:
        head = run(["git", "-C", where, "rev-parse", "HEAD"], ".", 60)
        status = run(
            ["git", "--no-optional-locks", "-C", where, "status", "--porcelain", "."], ".", 60
        )
        if head["rc"] == 0:
            source.update(
                commit=head["stdout"].strip(),
                uncommitted_changes=len(status["stdout"].splitlines()),
            )
    return {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "select": args.select or "(neuron-lint default)",
        "neuron_lint": version(lint.exe),
        "neuron_lint_exe": lint.exe,
        "neuron_lint_source": source,
        "options_not_supported": lint.dropped(),
        "ruff": version(ruff),
        "python": sys.version.split()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repos", nargs="+", type=Path, help="repository directories")
    parser.add_argument("--select", help="rule codes or prefixes (default: neuron-lint's own)")
    parser.add_argument("--json", type=Path, help="write all results here")
    parser.add_argument("--keep", type=Path, help="write NAME.safe.diff / NAME.unsafe.diff here")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    parser.add_argument("--tmp", help="where the copies go (default: the system temp dir)")
    args = parser.parse_args(argv)

    lint = NeuronLint(find_tool("neuron-lint"), args.select, args.timeout)
    ruff = find_tool("ruff")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    info = meta(lint, ruff, args)
    results = []
    for repo in args.repos:
        repo = repo.resolve()
        progress(f"{repo.name}: copying and measuring")
        if not repo.is_dir():
            results.append({"name": repo.name, "path": str(repo), "errors": ["not a directory"]})
            continue
        results.append(measure_repo(repo, lint, ruff, args))
        if args.json:  # written after every repository, so a long run leaves partial results
            args.json.write_text(json.dumps({"meta": info, "repos": results}, indent=1) + "\n")
    print(f"neuron-lint {info['neuron_lint']}, select {info['select']}, ruff {info['ruff']}")
    if any(info["options_not_supported"].values()):
        print(f"options this neuron-lint lacks (left out): {info['options_not_supported']}")
    print()
    print(table(results))
    extra = notes(results)
    if extra:
        print("\n" + extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
