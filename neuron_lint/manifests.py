"""Dependency manifests: find CUDA-only packages and CUDA-pinned PyTorch builds.

Reads ``requirements*.txt``, ``pyproject.toml``, ``setup.py`` (with ``ast``, never executed),
``setup.cfg`` and conda ``environment*.yml``, and turns every dependency and package-index URL into
an :class:`Entry` with its exact line and columns. Rules with ``manifest = [...]`` matches (NRN68x)
fire on those entries; the findings look like any other finding.

A ``manifest`` pattern is one of:

- ``flash-attn``, ``nvidia-*``: a requirement whose normalized name (PEP 503) matches the glob;
- ``torch+cu*``: such a requirement whose local version label (``2.1.0+cu121``) or conda build
  string (``py3.10_cuda12.1_cudnn8_0``) matches the glob after ``+``;
- ``url:*download.pytorch.org/whl/cu*``: a package index, find-links or direct-download URL.

A manifest line ending in ``# noqa`` or ``# noqa: NRN680`` is not reported.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from .catalog import Catalog, Match, Rule, load_catalog
from .model import CheckResult, FileError, Finding
from .settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Entry", "manifest_kind", "scan_text", "check_manifest_text", "check_manifest", "manifest_files",
           "declared_torch"]


@dataclass(frozen=True)
class Entry:
    """One dependency or index URL in a manifest; columns are 1-based characters, end exclusive."""

    kind: str  # "requirement" | "index"
    name: str  # normalized package name ("" for an index)
    local: str  # local version label or conda build string ("" if none)
    url: str  # index / direct URL ("" if none)
    text: str  # what the user wrote (shown in messages)
    line: int
    col: int
    end_col: int


# ----------------------------------------------------------------------------- file kinds

def manifest_kind(path: Path | str) -> str | None:
    """``requirements``, ``pyproject``, ``setup.py``, ``setup.cfg``, ``conda`` or None."""
    p = Path(path)
    name = p.name.lower()
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.py":
        return "setup.py"
    if name == "setup.cfg":
        return "setup.cfg"
    if name.endswith(".txt") and ("requirements" in name or p.parent.name.lower() == "requirements"):
        return "requirements"
    if name.startswith("environment") and name.endswith((".yml", ".yaml")):
        return "conda"
    return None


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ----------------------------------------------------------------------------- requirement strings

_REQ_RE = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?")
_LOCAL_RE = re.compile(r"\+([A-Za-z0-9][A-Za-z0-9._]*)")
_WHEEL_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._]*?)-(\d[^-/]*?)(?:-[^/]*)?\.(?:whl|tar\.gz|zip)$")
_URL_RE = re.compile(r"[a-z][a-z0-9+.-]*://\S+", re.I)


def _requirement(text: str, line: int, col: int) -> Entry | None:
    """An Entry for a PEP 508 requirement (or a bare wheel URL) starting at ``col`` on ``line``."""
    stripped = text.strip()
    if not stripped:
        return None
    col += len(text) - len(text.lstrip())
    end = col + len(stripped)
    url_match = _URL_RE.match(stripped)
    if url_match:  # a bare URL: name and version come from the file name
        url = url_match.group(0)
        wheel = _WHEEL_RE.search(url.split("#")[0])
        name = normalize(wheel.group(1)) if wheel else ""
        local = _LOCAL_RE.search(wheel.group(2).replace("%2B", "+")) if wheel else None
        return Entry("requirement", name, local.group(1) if local else "", url, stripped, line, col, end)
    m = _REQ_RE.match(stripped)
    if not m:
        return None
    rest = stripped[m.end():].split(";", 1)[0]
    url = ""
    if rest.lstrip().startswith("@"):
        url = rest.lstrip()[1:].strip().split()[0] if rest.lstrip()[1:].strip() else ""
        wheel = _WHEEL_RE.search(url.split("#")[0])
        local = _LOCAL_RE.search(wheel.group(2).replace("%2B", "+")) if wheel else None
    else:
        local = _LOCAL_RE.search(rest)
    return Entry("requirement", normalize(m.group(1)), local.group(1) if local else "", url, stripped, line, col, end)


def _index(url: str, line: int, col: int) -> Entry:
    return Entry("index", "", "", url, url, line, col, col + len(url))


# ----------------------------------------------------------------------------- requirements.txt

_INDEX_OPTS = ("--index-url", "--extra-index-url", "--find-links", "-i", "-f")
_OPT_RE = re.compile(r"(--index-url|--extra-index-url|--find-links|-i|-f)(?:\s*=\s*|\s+)(\S+)")
_COMMENT_RE = re.compile(r"(^|\s)#")


def _strip_comment(line: str) -> str:
    m = _COMMENT_RE.search(line)
    return line[: m.start()] if m else line


def _pip_line(content: str, line: int, col: int) -> Iterator[Entry]:
    """Entries in one logical pip line (already without its comment), starting at ``col``."""
    stripped = content.strip()
    if not stripped:
        return
    if stripped.startswith("-"):
        m = _OPT_RE.search(content)
        if m and content.lstrip().startswith(m.group(1)):
            yield _index(m.group(2), line, col + m.start(2))
        elif stripped.startswith(("-e ", "--editable")):
            target = stripped.split(None, 1)[1] if " " in stripped else ""
            if _URL_RE.match(target) and "#egg=" in target:
                name = normalize(target.split("#egg=", 1)[1].split("&")[0])
                start = col + content.index(target)
                yield Entry("requirement", name, "", target, target, line, start, start + len(target))
        return  # -r, -c, --hash-only lines, --pre, ...
    # per-requirement options (`--hash=...`, `--config-settings`) follow the requirement
    cut = re.search(r"\s--?[a-z]", content)
    req = content[: cut.start()] if cut else content
    entry = _requirement(req, line, col)
    if entry is not None:
        yield entry


def scan_requirements(text: str) -> Iterator[Entry]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        content = _strip_comment(lines[i])
        # a trailing backslash continues the logical line; report at the first physical line
        while content.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            content = content.rstrip()[:-1] + " " + _strip_comment(lines[i]).strip()
        yield from _pip_line(content, start + 1, 1)
        i += 1


# ----------------------------------------------------------------------------- pyproject.toml

_TOML_STR_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


class _Locator:
    """Finds where a string value sits in a TOML file, in document order, each literal once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for m in re.finditer(r"\n", text):
            self.starts.append(m.end())
        self.literals: list[tuple[str, int]] = []
        for line_no, raw in enumerate(text.splitlines(), 1):
            for m in _TOML_STR_RE.finditer(raw):
                before = raw[: m.start()]
                if "#" in before and before.count('"') % 2 == 0 and before.count("'") % 2 == 0:
                    break  # the rest of the line is a comment
                token = m.group(0)
                try:
                    value = tomllib.loads(f"v = {token}")["v"] if token[0] == '"' else token[1:-1]
                except tomllib.TOMLDecodeError:
                    continue
                self.literals.append((value, line_no, m.start() + 2))
        self.used: set[int] = set()

    def find(self, value: str) -> tuple[int, int]:
        for i, (v, line, col) in enumerate(self.literals):
            if v == value and i not in self.used:
                self.used.add(i)
                return line, col
        return 1, 1

    def key_line(self, key: str) -> tuple[int, int]:
        m = re.search(rf'(?m)^[ \t]*["\']?{re.escape(key)}["\']?[ \t]*=', self.text)
        if not m:
            return 1, 1
        line = self.text.count("\n", 0, m.start()) + 1
        return line, m.start() - self.starts[line - 1] + 1


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def scan_pyproject(text: str) -> Iterator[Entry]:
    data = tomllib.loads(text)  # TOMLDecodeError is reported by the caller
    loc = _Locator(text)
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    groups: list[list[str]] = [_strings(project.get("dependencies"))]
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        groups.extend(_strings(v) for v in extras.values())
    dep_groups = data.get("dependency-groups")
    if isinstance(dep_groups, dict):
        groups.extend(_strings(v) for v in dep_groups.values())
    build = data.get("build-system")
    if isinstance(build, dict):
        groups.append(_strings(build.get("requires")))
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    urls: list[str] = []
    uv = tool.get("uv") if isinstance(tool.get("uv"), dict) else {}
    for key in ("index-url", "extra-index-url", "find-links"):
        v = uv.get(key)
        urls.extend([v] if isinstance(v, str) else _strings(v))
    for table in (uv.get("index"), (tool.get("poetry") or {}).get("source") if isinstance(tool.get("poetry"), dict) else None,
                  (tool.get("pdm") or {}).get("source") if isinstance(tool.get("pdm"), dict) else None):
        if isinstance(table, list):
            urls.extend(t["url"] for t in table if isinstance(t, dict) and isinstance(t.get("url"), str))
    groups.append(_strings(uv.get("dev-dependencies")))
    for group in groups:
        for req in group:
            line, col = loc.find(req)
            entry = _requirement(req, line, col)
            if entry is not None:
                yield entry
    for url in urls:
        line, col = loc.find(url)
        yield _index(url, line, col)
    poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    for grp in (poetry.get("group") or {}).values() if isinstance(poetry.get("group"), dict) else ():
        if isinstance(grp, dict):
            tables.append(grp.get("dependencies"))
    for table in tables:
        if not isinstance(table, dict):
            continue
        for name, spec in table.items():
            if normalize(name) == "python":
                continue
            version = spec if isinstance(spec, str) else spec.get("version", "") if isinstance(spec, dict) else ""
            url = spec.get("url", "") if isinstance(spec, dict) else ""
            local = _LOCAL_RE.search(version if isinstance(version, str) else "")
            line, col = loc.key_line(name)
            yield Entry("requirement", normalize(name), local.group(1) if local else "", url if isinstance(url, str) else "",
                        name, line, col, col + len(name))


# ----------------------------------------------------------------------------- setup.py

_SETUP_KEYWORDS = ("install_requires", "extras_require", "setup_requires", "tests_require")


def scan_setup_py(text: str) -> Iterator[Entry]:
    """Requirements passed to ``setup(...)`` as literals or names bound to literals; never executed."""
    from .positions import LineIndex

    tree = ast.parse(text)  # SyntaxError: reported by the Python check of the same file
    lines = LineIndex(text)
    # name -> every value put into it: `x = [...]`, `x += [...]`, `x["k"] = [...]`, `x.append(...)`, `x.extend(...)`
    bound: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            bound.setdefault(node.target.id, []).append(node.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
              and node.func.attr in ("append", "extend", "update", "add")):
            bound.setdefault(node.func.value.id, []).extend(node.args)
    seen: set[int] = set()

    def literals(node: ast.AST | None, depth: int = 0) -> Iterator[ast.Constant]:
        if node is None or depth > 8 or id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            for elt in node.elts:
                yield from literals(elt.value if isinstance(elt, ast.Starred) else elt, depth + 1)
        elif isinstance(node, ast.Dict):
            for v in node.values:
                yield from literals(v, depth + 1)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            yield from literals(node.left, depth + 1)
            yield from literals(node.right, depth + 1)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("dict", "list", "tuple"):
            for a in node.args:
                yield from literals(a, depth + 1)
            for kw in node.keywords:
                yield from literals(kw.value, depth + 1)
        elif isinstance(node, ast.Name) and node.id in bound:
            for value in bound[node.id]:
                yield from literals(value, depth + 1)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            yield from literals(node.value, depth + 1)  # extras["test"]: everything in extras

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if fname != "setup":
            continue
        for kw in node.keywords:
            if kw.arg not in _SETUP_KEYWORDS:
                continue
            for const in literals(kw.value):
                line, col, end_line, end_col = lines.node_span(const)
                if end_line != line:  # a multi-line string: one requirement per line
                    yield from scan_requirements(const.value)
                    continue
                raw = lines.line(line)[col - 1: end_col - 1]
                inner = col + 1 if raw[:1] in "\"'" else col  # skip the opening quote
                if raw[:3] in ('"""', "'''"):
                    inner = col + 3
                entry = _requirement(const.value, line, inner)
                if entry is not None:
                    yield entry


# ----------------------------------------------------------------------------- setup.cfg

def scan_setup_cfg(text: str) -> Iterator[Entry]:
    section = ""
    key = ""
    lines = text.splitlines()
    for n, raw in enumerate(lines, 1):
        if not raw.strip() or raw.lstrip().startswith(("#", ";")):
            continue
        if raw[0] not in " \t":
            key = ""
            head = re.match(r"\[([^\]]+)\]", raw)
            if head:
                section = head.group(1).strip().lower()
                continue
            m = re.match(r"([A-Za-z0-9_.-]+)\s*[=:]\s*(.*)$", raw)
            if not m:
                continue
            name, value = m.group(1).lower(), m.group(2)
            wanted = (section == "options" and name in _SETUP_KEYWORDS) or section == "options.extras_require"
            key = name if wanted else ""
            if key and value.strip():
                col = m.start(2) + 1
                # one line: setuptools splits on ';' (a marker needs the one-per-line form)
                for part in re.finditer(r"[^;]+", _strip_comment(value)):
                    entry = _requirement(part.group(0), n, col + part.start())
                    if entry is not None:
                        yield entry
        elif key:
            body = _strip_comment(raw)
            entry = _requirement(body, n, 1)
            if entry is not None:
                yield entry


# ----------------------------------------------------------------------------- environment.yml

def _yaml_scalar(raw: str) -> tuple[str, int]:
    """The value of a plain or quoted YAML scalar and its offset in ``raw``."""
    s = raw.strip()
    offset = len(raw) - len(raw.lstrip())
    if s[:1] in "\"'" and len(s) >= 2:
        quote = s[0]
        end = s.find(quote, 1)
        if end > 0:
            return s[1:end], offset + 1
    return _strip_comment(s).strip(), offset


def _conda_spec(spec: str, line: int, col: int) -> Entry | None:
    """``pytorch=2.1.0=py3.10_cuda12.1_cudnn8_0``, ``nvidia::cuda-toolkit``, ``pytorch-cuda>=12``."""
    m = re.match(r"\s*(?:([^\s:]+)::)?([A-Za-z0-9_.-]+)\s*(.*)$", spec)
    if not m:
        return None
    tokens = m.group(3).split()
    if len(tokens) >= 2 and tokens[0][0] not in "=<>!~":  # `pytorch 2.1.0 py3.10_cuda12.1_0`
        rest = "=" + "=".join(tokens[:2])
    else:
        rest = "".join(tokens)
    parts = rest.lstrip("=<>!~").split("=") if rest else []
    build = parts[1] if rest.startswith("=") and len(parts) > 1 else ""
    local = _LOCAL_RE.search(parts[0]) if parts else None
    stripped = spec.strip()
    return Entry("requirement", normalize(m.group(2)), build or (local.group(1) if local else ""), "", stripped,
                 line, col + 1, col + 1 + len(stripped))


def scan_conda(text: str) -> Iterator[Entry]:
    """Dependencies of a conda environment file, including its ``pip:`` list.

    Handles the block-sequence layout conda writes and documents (``- item`` lines, quoted or
    not, comments, one nested ``- pip:`` list) and one-line flow lists (``[a, b]``).
    """
    lines = text.splitlines()
    in_deps = False
    deps_indent = -1
    pip_indent = -1  # indentation of the "- pip:" item while inside its list
    for n, raw in enumerate(lines, 1):
        body = _strip_comment(raw)
        if not body.strip() or body.strip() in ("---", "..."):
            continue
        indent = len(raw) - len(raw.lstrip())
        top = re.match(r"([A-Za-z_][\w-]*)\s*:\s*(.*)$", body) if indent == 0 else None
        if top:
            in_deps = top.group(1) == "dependencies"
            deps_indent, pip_indent = -1, -1
            flow = top.group(2).strip()
            if in_deps and flow.startswith("["):
                start = body.index("[") + 1
                for item in re.finditer(r"[^,\[\]]+", body[start:]):
                    value, off = _yaml_scalar(item.group(0))
                    entry = _conda_spec(value, n, start + item.start() + off)
                    if value and entry:
                        yield entry
                in_deps = False
            continue
        if not in_deps:
            continue
        item = re.match(r"(\s*)-\s+(.*)$", body) or re.match(r"(\s*)-()$", body)
        if not item:
            continue
        if pip_indent >= 0 and indent <= pip_indent:
            pip_indent = -1
        value, off = _yaml_scalar(item.group(2))
        col = item.start(2) + off  # 0-based
        if pip_indent >= 0:
            yield from _pip_line(value, n, col + 1)
            continue
        if deps_indent < 0:
            deps_indent = indent
        if re.match(r"pip\s*:\s*$", value):
            pip_indent = indent
            continue
        if value:
            entry = _conda_spec(value, n, col)
            if entry is not None:
                yield entry


# ----------------------------------------------------------------------------- the project's torch

#: Requirement names of PyTorch itself (``pytorch`` is conda's name for it).
TORCH_NAMES = ("torch", "pytorch")
#: Version operators that set a lower bound (``=`` and a bare version are conda's ``==``).
_LOWER_OPS = ("~=", "===", "==", ">=", ">", "=")
_CLAUSE_RE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>|=)?\s*v?(\d+(?:\.\d+){0,2})")
#: Manifests read for the project's torch (requirement files also inside a ``requirements/`` folder).
MANIFEST_READ_LIMIT = 1024 * 1024


def torch_lower_bound(entry: Entry) -> tuple[int, ...] | None:
    """The lowest torch version ``entry`` allows, or None (not torch, no lower bound, a URL).

    ``torch>=2.4,<3`` -> (2, 4); ``torch==2.4.1+cu121`` -> (2, 4, 1); ``torch~=2.6`` -> (2, 6);
    ``torch>2.5`` -> (2, 5) (the bound itself is taken: "newer than 2.5" includes 2.5.1);
    ``pytorch=2.1.0=py3.10_cuda12.1_0`` (conda) -> (2, 1, 0); ``torch``, ``torch<3`` -> None.
    """
    if entry.kind != "requirement" or entry.name not in TORCH_NAMES or entry.url:
        return None
    text = entry.text.split("::", 1)[-1]  # a conda channel: nvidia::pytorch
    m = _REQ_RE.match(text)
    if not m:
        return None
    rest = text[m.end():].split(";", 1)[0].strip().strip("()")
    if not rest or rest.startswith("@"):
        return None
    if re.match(r"\d", rest):  # conda: `pytorch 2.1.0 build`
        rest = "=" + rest.split()[0]
    bounds = []
    for clause in rest.split(","):
        c = _CLAUSE_RE.match(clause)
        if c and (c.group(1) or "=") in _LOWER_OPS:
            bounds.append(tuple(int(p) for p in c.group(2).split(".")))
    return max(bounds) if bounds else None


def manifest_files(directory: Path | str) -> list[Path]:
    """The dependency manifests directly in ``directory`` (and in its ``requirements/`` folder)."""
    directory = Path(directory)
    found: list[Path] = []
    for folder in (directory, directory / "requirements"):
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.is_file())
        except OSError:
            continue
        found.extend(folder / n for n in names if manifest_kind(folder / n) is not None)
    return found


def declared_torch(directory: Path | str) -> tuple[tuple[int, ...], str] | None:
    """The oldest torch the project in ``directory`` declares, and where: ``((2, 4), "pyproject.toml: torch>=2.4")``.

    Reads every manifest of :func:`manifest_files` with the scanners above (``[project]``
    dependencies and extras, requirement files, ``setup.py``/``setup.cfg`` requirements, conda
    environments) and takes the lowest lower bound of a ``torch`` requirement: the fixed code must
    run on every version the project says it supports. None when no requirement bounds torch
    from below. Unreadable or malformed manifests are passed over (``check`` reports them).
    """
    from .source import decode, read_source_bytes

    best: tuple[tuple[int, ...], str] | None = None
    for path in manifest_files(directory):
        kind = manifest_kind(path)
        try:
            data = read_source_bytes(path, MANIFEST_READ_LIMIT)
            text = decode(data).text if kind == "setup.py" else data.decode("utf-8-sig")
            entries = scan_text(text, kind)
        except Exception:  # a pipe, a huge file, bad TOML, a setup.py that does not parse...
            continue
        for entry in entries:
            bound = torch_lower_bound(entry)
            if bound is not None and (best is None or bound < best[0]):
                rel = path.name if path.parent == Path(directory) else f"{path.parent.name}/{path.name}"
                best = (bound, f"{rel}: {entry.text}")
    return best


# ----------------------------------------------------------------------------- matching

SCANNERS = {
    "requirements": scan_requirements,
    "pyproject": scan_pyproject,
    "setup.py": scan_setup_py,
    "setup.cfg": scan_setup_cfg,
    "conda": scan_conda,
}


def scan_text(text: str, kind: str) -> list[Entry]:
    """Every entry of a manifest of the given kind. Raises ValueError/SyntaxError on unreadable files."""
    return list(SCANNERS[kind](text))


def pattern_matches(pattern: str, entry: Entry) -> bool:
    if pattern.startswith("url:"):
        return bool(entry.url) and fnmatch.fnmatchcase(entry.url.lower(), pattern[4:].lower())
    if entry.kind != "requirement" or not entry.name:
        return False
    name, plus, local = pattern.partition("+")
    if not fnmatch.fnmatchcase(entry.name, normalize(name) if not any(c in name for c in "*?[") else name.lower()):
        return False
    return not plus or (bool(entry.local) and fnmatch.fnmatchcase(entry.local.lower(), local.lower()))


def manifest_rules(catalog: Catalog, codes: Iterable[str]) -> list[Rule]:
    wanted = set(codes)
    return [r for r in catalog.rules if r.code in wanted and any(m.kind == "manifest" for m in r.matches)]


def _first_match(rule: Rule, entry: Entry) -> Match | None:
    for m in rule.matches:
        if m.kind == "manifest" and any(pattern_matches(p, entry) for p in m.patterns):
            return m
    return None


def _by_url(m: Match, entry: Entry) -> bool:
    """Did only a ``url:`` pattern of this match select the entry?"""
    return not any(pattern_matches(p, entry) for p in m.patterns if not p.startswith("url:"))


_NOQA_RE = re.compile(r"#\s*noqa(?::\s*([A-Z0-9, ]+))?", re.I)


def _suppressed(line_text: str, code: str) -> bool:
    m = _NOQA_RE.search(line_text)
    if not m:
        return False
    if not m.group(1):
        return True
    return any(code.startswith(c.strip().upper()) for c in m.group(1).split(",") if c.strip())


def findings_for(entries: list[Entry], text: str, path: str, rules: list[Rule]) -> list[Finding]:
    lines = text.splitlines()
    out: list[Finding] = []
    seen: set[tuple] = set()
    for entry in entries:
        matched = [(rule, m) for rule in rules if (m := _first_match(rule, entry)) is not None]
        if any(not _by_url(m, entry) for _, m in matched):
            # `xformers @ https://download.pytorch.org/whl/cu121/...`: the package's own finding says
            # it all; the CUDA index in its URL is not a second finding on the same line
            matched = [(rule, m) for rule, m in matched if not _by_url(m, entry)]
        for rule, m in matched:
            line_text = lines[entry.line - 1] if 0 < entry.line <= len(lines) else ""
            key = (rule.code, entry.line, entry.col)
            if key in seen or _suppressed(line_text, rule.code):
                continue
            seen.add(key)
            subject = entry.text if len(entry.text) <= 80 else entry.text[:77] + "..."
            out.append(Finding(
                path=path, line=entry.line, col=entry.col, end_line=entry.line, end_col=entry.end_col,
                code=rule.code, name=rule.name, category=rule.category,
                message=(m.message or rule.message).replace("{name}", subject),
                suggestion=(m.suggestion or rule.suggestion).replace("{name}", subject),
                url=rule.url,
            ))
    out.sort(key=lambda f: f.sort_key)
    return out


def check_manifest_text(text: str, kind: str, path: str = "requirements.txt", settings: Settings | None = None,
                        catalog: Catalog | None = None) -> list[Finding]:
    """Findings for a manifest's text. Raises ValueError (bad TOML) or SyntaxError (bad setup.py)."""
    settings = settings or Settings()
    catalog = catalog or load_catalog()
    rules = manifest_rules(catalog, settings.codes_for(path, catalog))
    if not rules:
        return []
    return findings_for(scan_text(text, kind), text, path, rules)


def check_manifest(path: Path | str, settings: Settings | None = None, catalog: Catalog | None = None,
                   shown: str | None = None, data: bytes | None = None) -> CheckResult:
    """Check one manifest file. Unreadable files become a :class:`FileError`, never an exception.

    ``setup.py`` is also Python: its syntax errors are reported by the Python check, and it is
    counted there, so here it counts as no extra file. ``data``: its bytes, when already read
    (standard input).
    """
    from .source import SourceError, decode, read_source_bytes

    kind = manifest_kind(path)
    shown = shown if shown is not None else os.fspath(path)
    result = CheckResult()
    if kind is None:
        return result
    try:
        if data is None:
            data = read_source_bytes(path, settings.max_file_bytes if settings else Settings().max_file_bytes)
    except (OSError, SourceError) as exc:  # a pipe, device or huge file is never read
        if kind != "setup.py":
            reason = f"cannot be read: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
            result.errors.append(FileError(shown, reason))
        return result
    try:
        text = decode(data).text if kind == "setup.py" else data.decode("utf-8-sig")
    except (SourceError, UnicodeDecodeError):
        if kind != "setup.py":
            result.errors.append(FileError(shown, "is not UTF-8 text"))
        return result
    try:
        result.findings.extend(check_manifest_text(text, kind, shown, settings, catalog))
    except tomllib.TOMLDecodeError as exc:
        result.errors.append(FileError(shown, f"not valid TOML: {exc}"))
    except (SyntaxError, ValueError, RecursionError):
        pass  # setup.py: the Python check reports it
    if kind != "setup.py":
        result.files_checked = 1
    return result
