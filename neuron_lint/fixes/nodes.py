"""Small LibCST node builders the fixers share (attributes, keyword arguments, f-strings, string literals)."""

from __future__ import annotations

import libcst as cst

NO_SPACE = cst.SimpleWhitespace("")
COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))  # ", " between arguments


def attribute(value: cst.BaseExpression | str, name: str) -> cst.Attribute:
    """``value.name``; ``value`` is a node, or a plain name given as a string."""
    return cst.Attribute(value=cst.Name(value) if isinstance(value, str) else value, attr=cst.Name(name))


def renamed(node: cst.Attribute, name: str) -> cst.Attribute:
    """The attribute ``node`` naming ``name`` instead (its value and spacing kept)."""
    return node.with_changes(attr=cst.Name(name))


def renamed_method(call: cst.Call, name: str) -> cst.Call:
    """``obj.old(...)`` -> ``obj.name(...)``: the call with its method renamed."""
    return call.with_changes(func=renamed(call.func, name))


def keyword(name: str, value: cst.BaseExpression, like: cst.Arg | None = None) -> cst.Arg:
    """``name=value`` (PEP 8 spacing), keeping the comma and whitespace of ``like``."""
    equal = cst.AssignEqual(whitespace_before=NO_SPACE, whitespace_after=NO_SPACE)
    if like is not None:
        return like.with_changes(keyword=cst.Name(name), equal=equal, value=value)
    return cst.Arg(keyword=cst.Name(name), equal=equal, value=value)


def with_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """A positional ``arg`` passed by keyword instead."""
    return keyword(name, arg.value, like=arg)


def string(value: str, quote: str = '"') -> cst.SimpleString:
    return cst.SimpleString(f"{quote}{value}{quote}")


def quote_of(node: cst.CSTNode) -> str:
    """The quote character a string literal uses (``"`` when it is not a plain one-line literal)."""
    if isinstance(node, cst.SimpleString) and node.quote in ("'", '"'):
        return node.quote
    if isinstance(node, cst.FormattedString) and node.start.lstrip("fFrRbBuU") in ("'", '"'):
        return node.start.lstrip("fFrRbBuU")
    return '"'


def fstring(parts: list, quote: str = '"') -> cst.FormattedString:
    """An f-string from a list of plain strings and expressions: ``[dev_type, ":", index]``."""
    built = []
    for p in parts:
        if isinstance(p, str):
            built.append(cst.FormattedStringText(p))
        else:
            built.append(cst.FormattedStringExpression(expression=p))
    return cst.FormattedString(parts=built, start=f"f{quote}", end=quote)


def device_string_with_index(device_type: cst.BaseExpression, index: cst.BaseExpression | str, quote: str = '"'):
    """``"neuron:1"``, ``f"neuron:{i}"``, ``f"{DEVICE.type}:1"`` or ``f"{DEVICE.type}:{i}"``."""
    if isinstance(device_type, cst.SimpleString):
        word = device_type.evaluated_value
        if isinstance(index, str):
            return string(f"{word}:{index}", quote)
        return fstring([f"{word}:", index], quote)
    return fstring([device_type, ":", index], quote)


def is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def parenthesised_like(new: cst.BaseExpression, old: cst.BaseExpression) -> cst.BaseExpression:
    """``new`` in ``old``'s parentheses, when ``old`` had any. Parentheses that split a conditional
    expression over lines (``device or (`` / ``"cuda" if ... else "cpu"`` / ``)``), holding no
    comment, are dropped when ``new`` is a name, attribute, call or subscript: such a value needs
    none, and ``ruff format`` would join them onto one line around it (F5-TTS's socket server)."""
    if not old.lpar:
        return new
    atom = isinstance(new, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not new.lpar
    split = any(isinstance(p.whitespace_after, cst.ParenthesizedWhitespace) for p in old.lpar) or any(
        isinstance(p.whitespace_before, cst.ParenthesizedWhitespace) for p in old.rpar)
    if atom and split:
        probe = cst.Module(body=[]).code_for_node
        if not any("#" in probe(p) for p in (*old.lpar, *old.rpar)):
            return new
    return new.with_changes(lpar=old.lpar, rpar=old.rpar)
