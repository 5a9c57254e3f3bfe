"""``setup.py`` (read with ``ast``, never executed) and ``setup.cfg``."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from .entries import Entry, requirement, strip_comment
from .requirements import scan_requirements

SETUP_KEYWORDS = ("install_requires", "extras_require", "setup_requires", "tests_require")


def scan_setup_py(text: str) -> Iterator[Entry]:
    """Requirements passed to ``setup(...)`` as literals or names bound to literals; never executed."""
    from ..io.positions import LineIndex

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
            if kw.arg not in SETUP_KEYWORDS:
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
                entry = requirement(const.value, line, inner)
                if entry is not None:
                    yield entry


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
            wanted = (section == "options" and name in SETUP_KEYWORDS) or section == "options.extras_require"
            key = name if wanted else ""
            if key and value.strip():
                col = m.start(2) + 1
                # one line: setuptools splits on ';' (a marker needs the one-per-line form)
                for part in re.finditer(r"[^;]+", strip_comment(value)):
                    entry = requirement(part.group(0), n, col + part.start())
                    if entry is not None:
                        yield entry
        elif key:
            body = strip_comment(raw)
            entry = requirement(body, n, 1)
            if entry is not None:
                yield entry
