"""Configuration files: find them, validate them, and merge them with command-line options.

neuron-lint reads ``[tool.neuron-lint]`` from a ``pyproject.toml``, or the top level of a
``neuron-lint.toml``, found by walking up from the checked paths (``neuron-lint.toml`` wins in
the same folder). ``--config PATH`` names the file; ``--isolated`` ignores every file. Command-line
options override the file. Every mistake is a :class:`ConfigError` naming the file and the key.
"""

from __future__ import annotations

import os
import re
import reprlib
import stat
import sys
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError
from ..fixes.min_torch import (  # noqa: F401 (re-exported)
    FIX_TORCH_FLOOR,
    TORCHNEURON_TORCH,
    project_min_torch,
    project_root,
)
from .settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SECTION = "tool.neuron-lint"
CONFIG_LIMIT = 1024 * 1024  # bytes; a configuration file larger than this is refused
OWN_FILE = "neuron-lint.toml"
EXTEND_KEY = "extend"  # the one key that is not a setting: a base configuration to read first
DEVICES = ("accelerator", "neuron")
_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?$")
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80


class ConfigError(UsageError):
    """A configuration file (or option) is wrong; the message names the file and the key."""


@lru_cache(maxsize=1)
def _known_prefixes() -> frozenset[str]:
    """Every code of the shipped catalog and every prefix of one (``N``, ``NR``, ... ``NRN201``)."""
    from ..catalog.loading import load_catalog

    return frozenset(code[:i] for code in load_catalog().codes for i in range(1, len(code) + 1))


def _shown_value(value: Any) -> str:
    """A value for an error message, bounded in depth and length (a hostile file's value can be huge)."""
    return _REPR.repr(value)


def _codes(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of rule codes or prefixes, such as [\"NRN2\", \"NRN301\"]")
    known = _known_prefixes()  # one set lookup per entry: a 50,000-entry select is checked in milliseconds
    out = []
    for raw in value:
        code = raw.strip().upper()
        if code not in known:
            raise ConfigError(f"{where}: unknown rule code or prefix {_shown_value(raw)} (see `neuron-lint rules`)")
        out.append(code)
    return tuple(out)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: must be a list of non-empty strings")
    return tuple(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: must be true or false, not {_shown_value(value)}")
    return value


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a table of glob = [codes], such as \"tests/*\" = [\"NRN201\"]")
    return tuple((glob, _codes(codes, f"{where}.{_shown_value(glob)}")) for glob, codes in value.items())


def _output_format(value: Any, where: str) -> str:
    from ..output import FORMATS

    if not isinstance(value, str) or value not in FORMATS:
        raise ConfigError(f"{where}: must be one of {', '.join(FORMATS)}, not {_shown_value(value)}")
    return value


def _device(value: Any, where: str) -> str:
    if value not in DEVICES:
        raise ConfigError(f"{where}: must be one of {', '.join(DEVICES)}, not {_shown_value(value)}")
    return value


def _min_torch(value: Any, where: str) -> str:
    if not isinstance(value, str):  # `min-torch = 2.6` in TOML is a float
        raise ConfigError(f"{where}: must be a quoted version such as \"2.6\", not {_shown_value(value)}")
    if not _VERSION_RE.match(value):
        raise ConfigError(f"{where}: must be a version such as 2.6, not {_shown_value(value)}")
    return value


#: config key -> (Settings field, validator)
KEYS: dict[str, tuple[str, Any]] = {
    "select": ("select", _codes),
    "extend-select": ("extend_select", _codes),
    "ignore": ("ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _strings),
    "extend-exclude": ("extend_exclude", _strings),
    "force-exclude": ("force_exclude", _bool),
    "respect-gitignore": ("respect_gitignore", _bool),
    "output-format": ("output_format", _output_format),
    "device": ("device", _device),
    "min-torch": ("min_torch", _min_torch),
    "unsafe-fixes": ("unsafe_fixes", _bool),
}


@dataclass(frozen=True)
class Resolved:
    settings: Settings
    config_file: Path | None  # the file the settings came from, if any
    # Where the default min-torch came from ("pyproject.toml: torch>=2.9"), when a manifest set it.
    min_torch_from: str = ""
    # The oldest torch the project declares, when that is older than the fixes can target (below 2.6).
    torch_below_floor: str = ""
    # What the command line set (Settings fields), how the file was chosen, and the folder holding
    # every checked path: what config_tree needs to resolve each file's own configuration the same way.
    given: dict = field(default_factory=dict, compare=False)
    isolated: bool = False
    named: bool = False  # --config: this file for every path
    start: Path | None = None


def _shown(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _read_bounded(path: Path) -> bytes:
    """A configuration file's bytes; never a pipe or device, never more than CONFIG_LIMIT bytes."""
    from ..io.source import read_source_bytes

    return read_source_bytes(path, CONFIG_LIMIT)


def _read_toml(path: Path) -> dict:
    from ..io.source import SourceError

    try:
        text = _read_bounded(path).decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{_shown(path)}: cannot be read: {exc.strerror or exc}") from None
    except SourceError as exc:
        raise ConfigError(f"{_shown(path)}: {str(exc).removeprefix('skipped: ')}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{_shown(path)}: is not UTF-8 text") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{_shown(path)}: not valid TOML: {exc}") from None
    except (RecursionError, MemoryError):  # [[[[... a hundred thousand deep: the parser recurses
        raise ConfigError(f"{_shown(path)}: cannot be read: nested too deeply") from None


def _section(path: Path, data: dict) -> tuple[Any, str]:
    """The neuron-lint table of a parsed file and the prefix its keys are shown with.

    In ``pyproject.toml`` it is ``[tool.neuron-lint]``; any other file holds the keys at the top
    (or in ``[tool.neuron-lint]``, for a pyproject file under another name given to ``--config``).
    """
    tool = data.get("tool")
    if path.name == "pyproject.toml" or isinstance(tool, dict) and "neuron-lint" in tool:
        return (tool.get("neuron-lint") if isinstance(tool, dict) else None), f"[{SECTION}] "
    return data, ""


def load_config(path: Path | str, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Validated Settings fields from one file (empty if it has no neuron-lint section).

    ``extend = "PATH"`` (relative to the file's folder) reads that file first; the keys of this
    file then replace the base's, except ``extend-select``, ``ignore`` and ``extend-exclude``,
    which add to them (a ``select`` here starts the selection afresh, as on the command line).
    Globs are anchored to the folder of the file that holds them.
    """
    path = Path(path)
    data = _read_toml(path)
    section, prefix = _section(path, data)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{_shown(path)}: {prefix.strip()} must be a table")
    values: dict[str, Any] = {}
    for key, raw in section.items():
        where = f"{_shown(path)}: {prefix}key '{key}'"
        if key == EXTEND_KEY:
            continue
        if key not in KEYS:
            hint = f" (did you mean '{key.replace('_', '-')}'?)" if key.replace("_", "-") in KEYS else ""
            raise ConfigError(f"{where}: unknown key{hint}; allowed: {', '.join((*KEYS, EXTEND_KEY))}")
        field_name, validate = KEYS[key]
        values[field_name] = validate(raw, where)
    values = anchored(values, path.resolve().parent)
    if EXTEND_KEY not in section:
        return values
    base = _extended(path, section[EXTEND_KEY], f"{_shown(path)}: {prefix}key '{EXTEND_KEY}'", _chain)
    return layered(load_config(base, (*_chain, path.resolve())), values, adding=ADDING_KEYS)


def _extended(path: Path, value: Any, where: str, chain: tuple[Path, ...]) -> Path:
    """The file ``extend = value`` in ``path`` names, checked: it exists and does not close a loop."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be the path of another configuration file, such as \"../base.toml\"")
    base = (path.resolve().parent / os.path.expanduser(value)).resolve()
    if base in chain or base == path.resolve():
        raise ConfigError(f"{where}: {value!r} extends itself (a loop: {' -> '.join(_shown(p) for p in (*chain, path.resolve(), base))})")
    if len(chain) >= MAX_EXTEND_DEPTH:
        raise ConfigError(f"{where}: more than {MAX_EXTEND_DEPTH} files extend each other")
    if not os.path.isfile(base):
        raise ConfigError(f"{where}: {value!r}: no such file ({_shown(base)})")
    return base


#: Keys that add to a lower layer's value (a base configuration's, or the file's under the command line).
ADDING_KEYS = ("extend_select", "ignore", "extend_exclude")
#: Files that extend each other, at most (a chain longer than this is surely a mistake).
MAX_EXTEND_DEPTH = 32


def layered(lower: dict[str, Any], upper: dict[str, Any], adding: Iterable[str]) -> dict[str, Any]:
    """``upper``'s values over ``lower``'s: a ``select`` in ``upper`` drops ``lower``'s selection
    (select, extend-select, ignore); keys in ``adding`` are appended; the rest replace."""
    out = dict(lower)
    upper = dict(upper)
    if "select" in upper:
        for key in ("select", "extend_select", "ignore"):
            out[key] = tuple(upper.pop(key, ()))
    for key in adding:
        if key in upper:
            out[key] = tuple(out.get(key, ())) + tuple(upper.pop(key))
    out.update(upper)
    return out


def anchored(values: dict[str, Any], base: Path) -> dict[str, Any]:
    """Path patterns (with a ``/``) of a configuration file also match relative to its folder.

    ``legacy/*.py`` keeps matching any path ending in ``legacy/x.py``, and now also
    ``<config folder>/legacy/x.py`` when neuron-lint runs from a subfolder.
    """
    root = base.as_posix().rstrip("/")

    def extra(glob: str) -> list[str]:
        if "/" not in glob or os.path.isabs(glob):
            return []
        rel = glob[2:] if glob.startswith("./") else glob
        return [f"{root}/{rel}"]

    for key in ("exclude", "extend_exclude"):
        if key in values:
            values[key] = tuple(values[key]) + tuple(a for g in values[key] for a in extra(g))
    if "per_file_ignores" in values:
        pairs = list(values["per_file_ignores"])
        values["per_file_ignores"] = tuple(pairs) + tuple((a, codes) for g, codes in pairs for a in extra(g))
    return values


def _has_section(pyproject: Path) -> bool:
    from ..io.source import SourceError

    try:
        text = _read_bounded(pyproject).decode("utf-8", "replace")
    except SourceError:
        pass  # a pipe, device or huge file: _read_toml below says so
    except OSError:
        return False
    else:
        if "neuron-lint" not in text:  # cheap: most pyproject files are not ours
            return False
    section, _ = _section(pyproject, _read_toml(pyproject))
    return section is not None


def _start(paths: Iterable[str | Path]) -> Path:
    """The deepest folder containing every checked path."""
    starts = []
    for p in paths or (".",):
        a = Path(os.path.abspath(p))
        starts.append(str(a if os.path.isdir(a) else a.parent))  # os.path: False, never raises, on EACCES
    try:
        return Path(os.path.commonpath(starts)) if starts else Path.cwd()
    except ValueError:  # paths on different drives
        return Path.cwd()


def find_config(paths: Iterable[str | Path] = (".",)) -> Path | None:
    """The nearest ``neuron-lint.toml`` or ``pyproject.toml`` with a neuron-lint section.

    The search starts at the deepest folder containing every checked path and walks up.
    """
    start = _start(paths)
    for directory in (start, *start.parents):
        own = directory / OWN_FILE
        # os.path.isfile, not Path.is_file(): on 3.11 that raises PermissionError for a file under a
        # folder without search permission; such a file cannot be read, so the walk goes on up
        if os.path.isfile(own):
            return own
        pyproject = directory / "pyproject.toml"
        if os.path.isfile(pyproject) and _has_section(pyproject):
            return pyproject
    return None


_FIELDS = {f.name for f in fields(Settings)}
#: Command-line values that add to the configuration's instead of replacing them.
CLI_ADDING_KEYS = ADDING_KEYS + ("per_file_ignores",)


def resolve(
    paths: Iterable[str] = (".",),
    config: str | None = None,
    isolated: bool = False,
    **cli: Any,
) -> Resolved:
    """Settings for a run: defaults, then the configuration file, then command-line values.

    ``cli`` holds Settings fields; ``None`` means "not given on the command line". A command-line
    ``select`` starts the rule selection afresh (the file's select/extend-select/ignore are dropped);
    otherwise command-line ``extend_select`` and ``ignore`` add to the file's. Command-line
    ``per_file_ignores`` and ``extend_exclude`` add to the file's; other values replace them.

    When neither sets ``min_torch``, it is the oldest torch the project's manifests declare
    (:func:`project_min_torch`, from the configuration file's folder, else from the checked paths),
    and 2.13 (TorchNeuron's PyTorch) when they declare none; ``isolated`` skips that too.

    These are the settings of the folder holding every checked path; :mod:`neuron_lint.config.per_file`
    gives each file those of its own nearest configuration file.
    """
    unknown = set(cli) - _FIELDS
    if unknown:
        raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
    if config is not None and isolated:
        raise ConfigError("--config and --isolated cannot be used together")
    start = _start(list(paths))
    if isolated:
        config_file: Path | None = None
    elif config is not None:
        config_file = _named_config(config)
    else:
        config_file = find_config(list(paths))
    given = {k: v for k, v in cli.items() if v is not None}
    return settings_from(config_file, given, isolated=isolated, start=start, named=config is not None)


def _named_config(config: str) -> Path:
    """The file ``--config`` names, checked to be a regular file."""
    config_file = Path(config)
    try:
        is_file = stat.S_ISREG(os.stat(config_file).st_mode)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in the name
        is_file = False
    except OSError as exc:  # a folder on the way without search permission
        raise ConfigError(f"--config: {config}: cannot be read: {exc.strerror or exc}") from None
    if not is_file:
        raise ConfigError(f"--config: {config}: no such file")
    return config_file


def settings_from(config_file: Path | None, given: dict[str, Any], *, isolated: bool = False,
                  start: Path | None = None, named: bool = False) -> Resolved:
    """The settings of one configuration file (None: the defaults) under the command line's ``given``
    values; ``start`` is where the project's declared torch is looked for when no file says."""
    values = layered(load_config(config_file) if config_file else {}, given, adding=CLI_ADDING_KEYS)
    origin = below = ""
    if "min_torch" not in values and not isolated:  # neither the command line nor the file set it
        where = config_file.resolve().parent if config_file else (start or Path.cwd())
        version, origin, below = project_min_torch(where)
        if version:
            values["min_torch"] = version
    return Resolved(Settings(**values), config_file, origin, below, given=dict(given), isolated=isolated,
                    named=named, start=start)


def split_codes(values: Iterable[str] | None, option: str) -> tuple[str, ...] | None:
    """``--select NRN1,NRN201 --select NRN3`` -> validated codes; None when the option was not given."""
    if not values:
        return None
    return _codes([c.strip() for v in values for c in v.split(",") if c.strip()], option)


def split_per_file_ignores(values: Iterable[str] | None) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """``--per-file-ignores "tests/*:NRN201,NRN301"`` (repeatable) -> ((glob, codes), ...)."""
    if not values:
        return None
    out = []
    for v in values:
        glob, sep, codes = v.rpartition(":")
        if not sep or not glob or not codes.strip():
            raise ConfigError(f"--per-file-ignores: {v!r} is not GLOB:CODES (such as \"tests/*:NRN201\")")
        out.append((glob, split_codes([codes], f"--per-file-ignores {glob!r}") or ()))
    return tuple(out)


def from_command_line(
    paths: Iterable[str],
    *,
    config: str | None = None,
    isolated: bool = False,
    select: Iterable[str] | None = None,
    extend_select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    per_file_ignores: Iterable[str] | None = None,
    output_format: str | None = None,
    **other: Any,
) -> Resolved:
    """Settings from raw command-line values (comma-separated codes, GLOB:CODES) and the config file."""
    for value, option, check in ((output_format, "--output-format", _output_format),
                                 (other.get("device"), "--device", _device),
                                 (other.get("min_torch"), "--min-torch", _min_torch)):
        if value is not None:
            check(value, option)
    return resolve(
        paths, config=config, isolated=isolated,
        select=split_codes(select, "--select"),
        extend_select=split_codes(extend_select, "--extend-select"),
        ignore=split_codes(ignore, "--ignore"),
        per_file_ignores=split_per_file_ignores(per_file_ignores),
        output_format=output_format,
        **other,
    )
