"""The project's line length, as its formatter sees it, so that fixes keep within it.

The nearest ``ruff.toml``/``.ruff.toml`` (``line-length``) or ``pyproject.toml`` with
``[tool.ruff]`` or ``[tool.black]`` ``line-length`` above a file decides (where that
``pyproject.toml`` gives neither, its yapf ``column_limit``, isort ``line_length`` or pylint
``max-line-length``); in a folder with neither,
flake8's ``max-line-length`` (``.flake8``, ``setup.cfg``, ``tox.ini``) or isort's ``line_length``
(``.isort.cfg``, ``setup.cfg``: detectron2 keeps 100 there), unless the folder's pre-commit runs black
or ruff-format (their ``--line-length``, else 88); 88 (ruff's and black's default) when none says.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from functools import lru_cache

DEFAULT_LINE_LENGTH = 88

#: The line length of the file being rewritten, for the few rewrites whose layout depends on it
#: (the module's device definition is one line where it fits, as ruff format prints it). Set by
#: :func:`current_line_length` around a fix or the computation of a file's fix edits.
_CURRENT = contextvars.ContextVar("neuron_lint_line_length", default=DEFAULT_LINE_LENGTH)


def line_length() -> int:
    """The line length of the file being rewritten (88 when none was set)."""
    return _CURRENT.get()


@contextlib.contextmanager
def current_line_length(limit: int):
    token = _CURRENT.set(limit)
    try:
        yield
    finally:
        _CURRENT.reset(token)
_LIMIT = 1024 * 1024  # a configuration file bigger than this is not read


def read_toml(path: str) -> dict:
    """The TOML file at ``path`` as a dict ({} when it is missing, too big or not TOML)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    try:
        if os.path.getsize(path) > _LIMIT:
            return {}
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except (OSError, ValueError):
        return {}


def _valid(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 20 <= value <= 1000 else None


#: (file, section, keys) read in this order, the first value found deciding.
_INI_SOURCES = (
    (".flake8", "flake8", ("max-line-length", "max_line_length")),
    ("setup.cfg", "flake8", ("max-line-length", "max_line_length")),
    ("tox.ini", "flake8", ("max-line-length", "max_line_length")),
    (".isort.cfg", "settings", ("line_length", "line-length")),
    ("setup.cfg", "isort", ("line_length", "line-length")),
)


def _ini_line_length(directory: str) -> int | None:
    """flake8's or isort's line length configured in ``directory``, or None."""
    import configparser

    for name, section, keys in _INI_SOURCES:
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        parser = configparser.RawConfigParser(strict=False)
        try:
            if os.path.getsize(path) > _LIMIT:
                continue
            parser.read(path, encoding="utf-8")
        except (OSError, UnicodeDecodeError, configparser.Error):
            continue
        for key in keys:
            value = parser.get(section, key, fallback=None) if parser.has_section(section) else None
            try:
                found = _valid(int(value.split("#")[0].strip())) if value else None
            except ValueError:
                found = None
            if found:
                return found
    return None


#: (table path under ``[tool]``, key) of the other formatters and linters a ``pyproject.toml`` may
#: configure, read when neither ruff nor black gives ``line-length`` there: composer sets none
#: for ruff (which it runs without E501 or its formatter) and formats with yapf at 120.
_PYPROJECT_OTHERS = (
    (("yapf",), "column_limit"),
    (("isort",), "line_length"),
    (("isort",), "line-length"),
    (("pylint", "format"), "max-line-length"),
    (("pylint",), "max-line-length"),
)


def _other_tools_line_length(tool: dict) -> int | None:
    for keys, name in _PYPROJECT_OTHERS:
        table = tool
        for key in keys:
            table = table.get(key) if isinstance(table, dict) else None
        if isinstance(table, dict) and _valid(table.get(name)):
            return table[name]
    return None


def formatter_configs(directory: str):
    """Each folder from ``directory`` up to the root, as ``(folder, ruff, tool)``: its
    ``ruff.toml``/``.ruff.toml`` as a dict (None when it has neither) and its ``pyproject.toml``'s
    ``[tool]`` table (None when it has none): what :func:`line_length_of` and
    :func:`.quotes.configured_quote` read, nearest first."""
    here = os.path.abspath(directory)
    while True:
        ruff = next((read_toml(os.path.join(here, n)) for n in ("ruff.toml", ".ruff.toml")
                     if os.path.isfile(os.path.join(here, n))), None)
        tool = None
        if ruff is None and os.path.isfile(os.path.join(here, "pyproject.toml")):
            tool = read_toml(os.path.join(here, "pyproject.toml")).get("tool", {})
            tool = tool if isinstance(tool, dict) else {}
        yield here, ruff, tool
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


@lru_cache(maxsize=256)
def line_length_of(directory: str) -> int:
    """The line length configured for files in ``directory`` (searched upwards)."""
    for here, ruff, tool in formatter_configs(directory):
        if ruff is not None:
            return _valid(ruff.get("line-length")) or DEFAULT_LINE_LENGTH
        if tool is not None:
            for section in ("ruff", "black"):
                table = tool.get(section)
                if isinstance(table, dict) and _valid(table.get("line-length")):
                    return table["line-length"]
            other = _other_tools_line_length(tool)
            if other:
                return other
            if "ruff" in tool or "black" in tool:
                return DEFAULT_LINE_LENGTH
        found = _precommit_formatter_length(here) or _ini_line_length(here)
        if found:
            return found
    return DEFAULT_LINE_LENGTH


#: A black or ruff-format hook in ``.pre-commit-config.yaml``, and a line length among its arguments.
_FORMATTER_HOOK = re.compile(r"^\s*-?\s*id:\s*(?:black|black-jupyter|ruff-format)\s*$", re.MULTILINE)
_LENGTH_ARG = re.compile(r"(?:--line-length|-l)[= ]+(\d+)")


def _precommit_formatter_length(directory: str) -> int | None:
    """The line length of a black (or ruff-format) hook that the folder's ``.pre-commit-config.yaml``
    runs, where no ``pyproject.toml`` configures it: its ``--line-length`` argument, else the
    formatter's 88. It comes before flake8's ``max-line-length``, which projects set looser than
    their formatter (theseus: flake8 100, black at 88 in pre-commit and CI, read set 74); None
    without such a hook."""
    path = os.path.join(directory, ".pre-commit-config.yaml")
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _LIMIT:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    hook = _FORMATTER_HOOK.search(text)
    if hook is None:
        return None
    # the arguments of that hook: up to the next `- id:` or `- repo:`
    rest = text[hook.end():]
    end = re.search(r"^\s*-\s*(?:id|repo):", rest, re.MULTILINE)
    arg = _LENGTH_ARG.search(rest[:end.start()] if end else rest)
    return _valid(int(arg.group(1))) if arg else DEFAULT_LINE_LENGTH
