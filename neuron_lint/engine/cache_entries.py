"""A cache entry's JSON: results written as plain data, and read back only when every field fits.

:func:`encode` writes a dataclass as an object tagged with its class name (``"@"``);
:func:`decode_entry` rebuilds ``(CheckResult, lookups)`` from the annotations of
:mod:`neuron_lint.model`, so an entry that does not fit the model (planted, stale, or from another
version) raises :class:`Invalid` and is a miss, never a half-built result.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from functools import cache as _memo


def encode(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"@": type(value).__name__, **{f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


class Invalid(Exception):
    """A decoded entry that does not fit the model: a miss."""


@_memo
def _shape(cls) -> tuple[dict, frozenset]:
    """``cls``'s constructor fields with their resolved types, and the ones without a default."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = frozenset(
        f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    return {f.name: hints[f.name] for f in fields}, required


def _frozen(value):
    """A JSON value with its arrays as tuples, all the way down (a fix's plan is hashed and compared)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


_SCALARS = {str: (str,), int: (int,), bool: (bool,), float: (int, float)}


def _build(tp, value):
    """``value`` (decoded JSON) as an instance of the annotation ``tp``, or :class:`Invalid`.

    Driven by the dataclasses' own annotations, so a field added to the model is checked too;
    an annotation this does not know makes every entry holding it a miss, never a guess.
    """
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if type(value) is not dict or value.get("@") != tp.__name__:
            raise Invalid(f"not a {tp.__name__}")
        fields, required = _shape(tp)
        kwargs = {}
        for name, item in value.items():
            if name == "@":
                continue
            if name not in fields:
                raise Invalid(f"{tp.__name__} has no field {name!r}")
            kwargs[name] = _build(fields[name], item)
        if not required <= kwargs.keys():
            raise Invalid(f"{tp.__name__} lacks {sorted(required - kwargs.keys())}")
        return tp(**kwargs)
    if tp is type(None):
        if value is None:
            return None
        raise Invalid("not None")
    if tp in _SCALARS:
        if type(value) in _SCALARS[tp]:
            return value
        raise Invalid(f"not a {tp.__name__}")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except (ValueError, TypeError):
            raise Invalid(f"not a {tp.__name__}") from None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        for option in args:
            try:
                return _build(option, value)
            except Invalid:
                continue
        raise Invalid(f"none of {args}")
    if tp in (list, tuple) or origin in (list, tuple):
        if type(value) is not list:
            raise Invalid("not an array")
        if not args:
            return _frozen(value) if tp is tuple else value
        if origin is list:
            return [_build(args[0], v) for v in value]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v) for v in value)
        if len(args) != len(value):
            raise Invalid("wrong length")
        return tuple(_build(a, v) for a, v in zip(args, value))
    if tp is dict or origin is dict:
        if type(value) is not dict:
            raise Invalid("not an object")
        if not args:
            return value
        return {_build(args[0], k): _build(args[1], v) for k, v in value.items()}
    if tp is typing.Any or tp is object:
        return value
    raise Invalid(f"cannot check {tp!r}")


def decode_entry(payload: bytes):
    """``(CheckResult, lookups)`` from an entry's JSON, or :class:`Invalid`."""
    from ..model import CheckResult

    entry = json.loads(payload)
    if type(entry) is not dict or "result" not in entry or not entry.keys() <= {"result", "lookups"}:
        raise Invalid("not an entry")
    result = _build(CheckResult, entry["result"])
    lookups = _build(list[tuple[str, str, bool] | tuple[str, str]], entry.get("lookups", []))
    return result, lookups
