"""Load and validate the rule catalog (``rules/*.toml``).

Each TOML file holds one rule. The catalog is data: a contributor adds a rule by adding a
file, and every mistake is reported with the file name and the key at fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Code family (first digit after ``NRN``) -> category name.
FAMILIES: dict[str, str] = {
    "1": "unsupported",
    "2": "cuda-specific",
    "3": "numerics",
    "4": "compile",
    "5": "cpu-fallback",
    "6": "cuda-only-package",
    "7": "legacy-xla",
    "9": "meta",
}

FAMILY_TITLES: dict[str, str] = {
    "unsupported": "NRN1xx  APIs TorchNeuron does not support",
    "cuda-specific": "NRN2xx  CUDA-specific code with a device-agnostic rewrite",
    "numerics": "NRN3xx  Numerics and dtypes",
    "compile": "NRN4xx  torch.compile and shape hazards",
    "cpu-fallback": "NRN5xx  Ops that fall back to the CPU",
    "cuda-only-package": "NRN6xx  CUDA-only kernels and packages",
    "legacy-xla": "NRN7xx  The legacy PyTorch/XLA path (torch_xla, NxD, optimum-neuron) and its native replacements",
    "meta": "NRN9xx  neuron-lint's own checks",
}

CONFIDENCE = ("confirmed", "likely")
EFFORT = ("auto", "low", "medium", "high")
FIX_SAFETY = ("safe", "unsafe")

DOCS_URL = "https://github.com/neuron-lint/neuron-lint/blob/main/rules/{file}"

_CODE_RE = re.compile(r"^NRN[1-9]\d\d$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_MATCH_KINDS = ("names", "imports", "methods", "attributes", "calls", "assign", "env", "matcher")
#: Matches on dependency manifests (requirements, pyproject, setup.py/cfg, environment.yml), not on Python code.
MANIFEST_KIND = "manifest"

_RULE_KEYS = {
    "code", "name", "category", "message", "suggestion", "rationale", "source",
    "confidence", "effort", "match", "fix", "examples",
}
_REQUIRED = ("code", "name", "category", "message", "suggestion", "rationale", "source", "confidence", "effort")
_MATCH_KEYS = set(_MATCH_KINDS) | {MANIFEST_KIND} | {"arg", "values", "value_names", "message", "suggestion", "trigger", "guarded"}
_FIX_KEYS = {"fixer", "safety", "map", "note"}
_EXAMPLE_KEYS = {"bad", "good", "fixed", "fix_cases"}


class CatalogError(ValueError):
    """A rule file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class ArgSpec:
    position: int | None = None
    keyword: str | None = None


@dataclass(frozen=True)
class Match:
    """One way a rule can fire. ``kind`` is one of ``_MATCH_KINDS``."""

    kind: str
    patterns: tuple[str, ...]
    arg: ArgSpec | None = None
    values: tuple[Any, ...] = ()
    value_names: tuple[str, ...] = ()
    message: str | None = None
    suggestion: str | None = None
    #: what a file's text must hold for a Python matcher to fire: groups, all of which must hold, each
    #: of alternatives (``catalog.index.trigger_need`` says how one is read)
    trigger: tuple[tuple[str, ...], ...] = ()
    guarded: bool = False  # imports: also count imports guarded by try/except ImportError


@dataclass(frozen=True)
class FixSpec:
    fixer: str
    safety: str
    map: dict[str, Any] = field(default_factory=dict, hash=False)  # a dict cannot be hashed
    note: str = ""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    category: str
    message: str
    suggestion: str
    rationale: str
    source: str
    confidence: str
    effort: str
    matches: tuple[Match, ...]
    fix: FixSpec | None
    bad: tuple[str, ...]
    good: tuple[str, ...]
    fixed: tuple[str, ...]
    fix_cases: tuple[dict, ...] = field(compare=False, hash=False)
    file: str
    #: For each ``bad`` snippet, the span its finding must cover, ``(line, col, end_line, end_col)``
    #: as findings print them (1-based, end exclusive), or None where the example states none.
    bad_spans: tuple[tuple[int, int, int, int] | None, ...] = field(default=(), compare=False, hash=False)

    @property
    def family(self) -> str:
        return self.code[3]

    @property
    def manifest_only(self) -> bool:
        """True for rules about dependency manifests; their examples are manifest text, not Python."""
        return bool(self.matches) and all(m.kind == MANIFEST_KIND for m in self.matches)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    @property
    def url(self) -> str:
        return DOCS_URL.format(file=self.file)


def rules_dir() -> Path:
    """Where the catalog lives: inside the installed package, or at the repository top."""
    package = Path(__file__).resolve().parent.parent  # neuron_lint/
    packaged = package / "rules"
    if packaged.is_dir():
        return packaged
    return package.parent / "rules"


def _err(file: str, key: str, problem: str) -> CatalogError:
    return CatalogError(f"{file}: key '{key}': {problem}")


def _str(data: dict, key: str, file: str, required: bool = True) -> str | None:
    if key not in data:
        if required:
            raise _err(file, key, "is required")
        return None
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise _err(file, key, "must be a non-empty string")
    return value.strip() if key not in ("rationale",) else value.strip()


def _str_list(value: Any, file: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise _err(file, key, "must be a non-empty string or list of non-empty strings")
    return tuple(value)


def _trigger(value: Any, file: str, key: str) -> tuple[tuple[str, ...], ...]:
    """``["a", "b"]`` (one group: a or b) or ``[["a", "b"], ["c"]]`` (a or b, and c)."""
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return tuple(_str_list(group, file, f"{key}[{i}]") for i, group in enumerate(value))
    return (_str_list(value, file, key),)


_SPAN_RE = re.compile(r"^(\d+):(\d+)-(\d+):(\d+)$")


def _bad_examples(value: Any, file: str) -> tuple[tuple[str, ...], tuple]:
    """``bad`` snippets: strings, or tables ``{ code = "...", span = "LINE:COL-LINE:COL" }`` that
    also say where the finding must be (as findings print it: 1-based columns, end exclusive)."""
    items = value if isinstance(value, list) else [value]
    snippets, spans = [], []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            key = f"examples.bad[{i}]"
            if set(item) - {"code", "span"} or not isinstance(item.get("code"), str) or not item["code"]:
                raise _err(file, key, "a table needs a non-empty 'code' and may have a 'span', nothing else")
            span = item.get("span")
            found = _SPAN_RE.match(span) if isinstance(span, str) else None
            if span is not None and found is None:
                raise _err(file, f"{key}.span", "must read LINE:COL-END_LINE:END_COL, e.g. \"2:9-2:16\"")
            snippets.append(item["code"])
            spans.append(tuple(int(g) for g in found.groups()) if found else None)
        else:
            snippets.append(item)
            spans.append(None)
    return _str_list(snippets, file, "examples.bad"), tuple(spans)


def _parse_match(raw: Any, file: str, index: int) -> Match:
    where = f"match[{index}]"
    if not isinstance(raw, dict):
        raise _err(file, where, "must be a table")
    unknown = set(raw) - _MATCH_KEYS
    if unknown:
        raise _err(file, f"{where}.{sorted(unknown)[0]}", f"unknown key (allowed: {', '.join(sorted(_MATCH_KEYS))})")
    kinds = [k for k in (*_MATCH_KINDS, MANIFEST_KIND) if k in raw]
    if len(kinds) != 1:
        raise _err(file, where, f"needs exactly one of {', '.join((*_MATCH_KINDS, MANIFEST_KIND))} (found {kinds or 'none'})")
    kind = kinds[0]
    patterns = _str_list(raw[kind], file, f"{where}.{kind}")
    if kind == "matcher":
        unknown_matchers = [p for p in patterns if not _matcher_known(p)]
        if unknown_matchers:
            raise _err(file, f"{where}.matcher", f"no matcher {unknown_matchers[0]!r} in neuron_lint/checks")
    if kind == MANIFEST_KIND:
        extra = set(raw) - {MANIFEST_KIND, "message", "suggestion"}
        if extra:
            raise _err(file, f"{where}.{sorted(extra)[0]}", "is not valid with 'manifest' (only message and suggestion are)")
        for p in patterns:
            if p.startswith("url:") and len(p) == 4 or not p.startswith("url:") and not re.match(r"^[A-Za-z0-9*?\[\]_.-]+(\+[A-Za-z0-9*?._-]+)?$", p):
                raise _err(file, f"{where}.manifest", f"{p!r} is not a package name glob, 'name+local' or 'url:GLOB'")
    arg = None
    if "arg" in raw:
        if kind != "calls":
            raise _err(file, f"{where}.arg", "is only valid with 'calls'")
        a = raw["arg"]
        if not isinstance(a, dict) or not set(a) <= {"position", "keyword"} or not a:
            raise _err(file, f"{where}.arg", "must be a table with 'position' (int) and/or 'keyword' (string)")
        pos, kw = a.get("position"), a.get("keyword")
        if pos is not None and (not isinstance(pos, int) or isinstance(pos, bool) or pos < 0):
            raise _err(file, f"{where}.arg.position", "must be a non-negative integer")
        if kw is not None and (not isinstance(kw, str) or not kw.isidentifier()):
            raise _err(file, f"{where}.arg.keyword", "must be a Python identifier")
        arg = ArgSpec(pos, kw)
    values = raw.get("values", [])
    if not isinstance(values, list) or not all(isinstance(v, (str, bool, int, float)) for v in values):
        raise _err(file, f"{where}.values", "must be a list of strings, booleans or numbers")
    value_names = _str_list(raw["value_names"], file, f"{where}.value_names") if "value_names" in raw else ()
    if kind == "assign" and not (values or value_names):
        raise _err(file, f"{where}.values", "'assign' needs 'values' or 'value_names'")
    if (values or value_names) and kind not in ("calls", "assign"):
        raise _err(file, f"{where}.values", "is only valid with 'calls' (with 'arg') or 'assign'")
    if kind == "calls" and (values or value_names) and arg is None:
        raise _err(file, f"{where}.arg", "is required when 'values' constrain a call")
    trigger = _trigger(raw["trigger"], file, f"{where}.trigger") if "trigger" in raw else ()
    if kind == "matcher" and not trigger:
        raise _err(file, f"{where}.trigger", "a Python matcher must list the words its findings need (for the prefilter)")
    guarded = raw.get("guarded", False)
    if not isinstance(guarded, bool):
        raise _err(file, f"{where}.guarded", "must be true or false")
    message = _str(raw, "message", file, required=False)
    suggestion = _str(raw, "suggestion", file, required=False)
    return Match(kind, patterns, arg, tuple(values), value_names, message, suggestion, trigger, guarded)


def _parse_rule(data: dict, file: str) -> Rule:
    unknown = set(data) - _RULE_KEYS
    if unknown:
        raise _err(file, sorted(unknown)[0], f"unknown key (allowed: {', '.join(sorted(_RULE_KEYS))})")
    for key in _REQUIRED:
        _str(data, key, file)
    code, name, category = data["code"], data["name"], data["category"]
    if not _CODE_RE.match(code):
        raise _err(file, "code", f"{code!r} is not NRN followed by three digits")
    if not _NAME_RE.match(name):
        raise _err(file, "name", f"{name!r} is not kebab-case")
    expected = FAMILIES.get(code[3])
    if category != expected:
        raise _err(file, "category", f"{category!r} does not fit code {code} (family {code[3]}xx is {expected!r})")
    if data["confidence"] not in CONFIDENCE:
        raise _err(file, "confidence", f"must be one of {', '.join(CONFIDENCE)}")
    if data["effort"] not in EFFORT:
        raise _err(file, "effort", f"must be one of {', '.join(EFFORT)}")
    raw_matches = data.get("match")
    if not isinstance(raw_matches, list) or not raw_matches:
        raise _err(file, "match", "needs at least one [[match]] table")
    matches = tuple(_parse_match(m, file, i) for i, m in enumerate(raw_matches))
    if len({m.kind == MANIFEST_KIND for m in matches}) > 1:
        raise _err(file, "match", "a rule matches either Python code or manifests ('manifest'), not both")

    fix = None
    if "fix" in data:
        raw_fix = data["fix"]
        if not isinstance(raw_fix, dict):
            raise _err(file, "fix", "must be a table")
        unknown = set(raw_fix) - _FIX_KEYS
        if unknown:
            raise _err(file, f"fix.{sorted(unknown)[0]}", "unknown key")
        fixer = _str(raw_fix, "fixer", file)
        if not _fixer_known(fixer):
            raise _err(file, "fix.fixer", f"no fixer {fixer!r} (expected neuron_lint/fixes/fixers/{fixer}.py)")
        safety = raw_fix.get("safety")
        if safety not in FIX_SAFETY:
            raise _err(file, "fix.safety", f"must be one of {', '.join(FIX_SAFETY)}")
        fmap = raw_fix.get("map", {})
        if not isinstance(fmap, dict):
            raise _err(file, "fix.map", "must be a table")
        fix = FixSpec(fixer, safety, fmap, raw_fix.get("note", ""))
    if data["effort"] == "auto" and (fix is None or fix.safety != "safe"):
        raise _err(file, "effort", "'auto' is only for rules with a safe fix")

    ex = data.get("examples")
    if not isinstance(ex, dict):
        raise _err(file, "examples", "is required: a table with 'bad' and 'good' snippets")
    unknown = set(ex) - _EXAMPLE_KEYS
    if unknown:
        raise _err(file, f"examples.{sorted(unknown)[0]}", "unknown key")
    bad, bad_spans = _bad_examples(ex["bad"], file) if "bad" in ex else ((), ())
    good = _str_list(ex.get("good"), file, "examples.good") if "good" in ex else ()
    if len(bad) < 2:
        raise _err(file, "examples.bad", "needs at least two snippets that must each produce this rule")
    if len(good) < 2:
        raise _err(file, "examples.good", "needs at least two look-alike snippets that must not produce this rule")
    fixed: tuple[str, ...] = ()
    if "fixed" in ex:
        fixed = _str_list(ex["fixed"], file, "examples.fixed")
        if len(fixed) != len(bad):
            raise _err(file, "examples.fixed", f"needs one entry per 'bad' snippet ({len(bad)}), found {len(fixed)}")
    if fix is not None and not fixed:
        raise _err(file, "examples.fixed", "a rule with a [fix] needs the fixed text of each bad snippet")
    if fix is None and fixed:
        raise _err(file, "examples.fixed", "only rules with a [fix] table have fixed examples")
    fix_cases = ex.get("fix_cases", [])
    if not isinstance(fix_cases, list) or not all(
        isinstance(c, dict) and isinstance(c.get("before"), str) and isinstance(c.get("after"), str) for c in fix_cases
    ):
        raise _err(file, "examples.fix_cases", "must be a list of tables with 'before', 'after' and optional 'settings'")
    return Rule(
        code=code, name=name, category=category,
        message=data["message"].strip(), suggestion=data["suggestion"].strip(),
        rationale=data["rationale"].strip(), source=data["source"].strip(),
        confidence=data["confidence"], effort=data["effort"],
        matches=matches, fix=fix, bad=bad, good=good, fixed=fixed,
        fix_cases=tuple(fix_cases), bad_spans=bad_spans, file=file,
    )


@dataclass(frozen=True)
class Catalog:
    rules: tuple[Rule, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_code", {r.code: r for r in self.rules})

    def get(self, code: str) -> Rule | None:
        return self._by_code.get(code.upper())  # type: ignore[attr-defined]

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(r.code for r in self.rules)


def _fixer_known(name: str) -> bool:
    from ..fixes import (  # the registry is a folder: nothing is imported
        TEXT_FIXERS,
        fixer_exists,
    )

    return name in TEXT_FIXERS or fixer_exists(name)


def _matcher_known(name: str) -> bool:
    from .. import checks  # noqa: F401  (registers the rules' matchers; checks never import the catalog)
    from .registry import is_known

    return is_known(name)


def load_catalog_from(directory: Path) -> Catalog:
    from .stored import rule_data

    files = sorted(directory.glob("*.toml"))
    if not files:
        raise CatalogError(f"{directory}: no rule files (*.toml) found")
    parsed = rule_data(files, lambda path, exc: CatalogError(f"{path.name}: not valid TOML: {exc}"))
    rules = [_parse_rule(data, f.name) for f, data in zip(files, parsed)]
    seen: dict[str, str] = {}
    names: dict[str, str] = {}
    for r in rules:
        if r.code in seen:
            raise _err(r.file, "code", f"{r.code} is also used by {seen[r.code]}")
        if r.name in names:
            raise _err(r.file, "name", f"{r.name!r} is also used by {names[r.name]}")
        seen[r.code] = r.file
        names[r.name] = r.file
        if not r.file.startswith(r.code):
            raise _err(r.file, "code", f"the file name must start with the rule code ({r.code})")
    rules.sort(key=lambda r: r.code)
    return Catalog(tuple(rules))


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The catalog shipped with neuron-lint (cached per process)."""
    return load_catalog_from(rules_dir())
