"""``pyproject.toml``: PEP 621 dependencies and extras, dependency groups, build requirements, uv/poetry/pdm."""

from __future__ import annotations

import re
from typing import Iterator

from .entries import LOCAL_RE, Entry, index_entry, normalize, requirement, tomllib

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
            entry = requirement(req, line, col)
            if entry is not None:
                yield entry
    for url in urls:
        line, col = loc.find(url)
        yield index_entry(url, line, col)
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
            local = LOCAL_RE.search(version if isinstance(version, str) else "")
            line, col = loc.key_line(name)
            yield Entry("requirement", normalize(name), local.group(1) if local else "", url if isinstance(url, str) else "",
                        name, line, col, col + len(name))
