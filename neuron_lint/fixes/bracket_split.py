"""A bracket pair opened onto lines of its own, the way ``ruff format`` (and black) opens it: the
contents on one indented line, or one item per line with a trailing comma (always so for a list,
set, dict or parenthesised tuple of two items or more)."""

from __future__ import annotations

import libcst as cst


def broken(indent: str) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, continuing at the statement's indentation plus ``indent``."""
    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), indent=True,
                                       last_line=cst.SimpleWhitespace(indent))


def bracket_items(node: cst.BaseExpression) -> list:
    """The comma-separated items inside the node's own bracket pair ([] for a parenthesised one)."""
    if node.lpar:
        return []
    if isinstance(node, cst.Call):
        return list(node.args)
    if isinstance(node, (cst.List, cst.Set, cst.Dict, cst.Tuple)):
        return list(node.elements)
    return []


def display(node: cst.BaseExpression) -> bool:
    """A list, set, dict or parenthesised tuple of two items or more: split, ``ruff format`` (as
    black) puts one item per line, where a call's arguments may stay together on one line."""
    if isinstance(node, cst.Tuple):
        return len(node.lpar) == 1 and len(node.elements) >= 2
    return isinstance(node, (cst.List, cst.Set, cst.Dict)) and not node.lpar and len(node.elements) >= 2


def is_empty(node: cst.BaseExpression) -> bool:
    """``f()``, ``[]``: nothing to put on a line of its own."""
    return not node.lpar and isinstance(node, (cst.Call, cst.List, cst.Set, cst.Tuple, cst.Dict)) and not bracket_items(node)


def trailing_comma(items: list) -> bool:
    return bool(items) and isinstance(getattr(items[-1], "comma", None), cst.Comma)


def split_bracket(node: cst.BaseExpression, indent: str, explode: bool):
    """``node`` with its bracket pair opened onto separate lines; ``explode``: one item per line,
    each with a trailing comma. None when that form is not one neuron-lint writes."""
    inner, outer, none = broken(indent), broken(""), cst.SimpleWhitespace("")
    if isinstance(node, cst.Tuple) and explode and display(node):  # `(a, b)`: one item per line
        items = [i.with_changes(comma=cst.Comma(whitespace_after=inner if n < len(node.elements) - 1 else none))
                 for n, i in enumerate(node.elements)]
        return node.with_changes(elements=items, lpar=[node.lpar[0].with_changes(whitespace_after=inner)],
                                 rpar=[node.rpar[0].with_changes(whitespace_before=outer)])
    if node.lpar:  # a parenthesised expression: break inside its own parentheses
        if explode:  # a ternary: one part per line
            if len(node.lpar) != 1 or not plain_ternary(node.with_changes(lpar=[], rpar=[])):
                return None
            node = node.with_changes(whitespace_before_if=inner, whitespace_before_else=inner)
        return node.with_changes(lpar=[node.lpar[0].with_changes(whitespace_after=inner), *node.lpar[1:]],
                                 rpar=[*node.rpar[:-1], node.rpar[-1].with_changes(whitespace_before=outer)])
    if isinstance(node, cst.Subscript):
        if explode:
            return None
        return node.with_changes(lbracket=node.lbracket.with_changes(whitespace_after=inner),
                                 rbracket=node.rbracket.with_changes(whitespace_before=outer))
    if isinstance(node, cst.Call):
        args = list(node.args)
        if not args:
            return None
        if explode:
            if len(args) < 2 or any(isinstance(a.value, cst.GeneratorExp) and not a.value.lpar for a in args):
                return None
            args = [a.with_changes(comma=cst.Comma(whitespace_after=inner if n < len(args) - 1 else outer),
                                   whitespace_after_arg=none) for n, a in enumerate(args)]
        else:
            args[-1] = args[-1].with_changes(whitespace_after_arg=outer)
        return node.with_changes(whitespace_before_args=inner, args=args)
    if isinstance(node, (cst.List, cst.Set, cst.Dict)):
        opening, closing = ("lbracket", "rbracket") if isinstance(node, cst.List) else ("lbrace", "rbrace")
        items = list(node.elements)
        if not items:
            return None
        if explode:
            if len(items) < 2:
                return None
            items = [i.with_changes(comma=cst.Comma(whitespace_after=inner if n < len(items) - 1 else none))
                     for n, i in enumerate(items)]
        return node.with_changes(elements=items, **{
            opening: getattr(node, opening).with_changes(whitespace_after=inner),
            closing: getattr(node, closing).with_changes(whitespace_before=outer)})
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp)) and not explode:
        # `[\n    elt for x in it\n]`, as ruff prints a comprehension whose content fits on a line
        # (a longer one, split at `for` and `if`, is left to a person: every line must fit)
        opening, closing = ("lbracket", "rbracket") if isinstance(node, cst.ListComp) else ("lbrace", "rbrace")
        return node.with_changes(**{opening: getattr(node, opening).with_changes(whitespace_after=inner),
                                    closing: getattr(node, closing).with_changes(whitespace_before=outer)})
    return None  # generator expressions and exploded comprehensions: left to a person


def plain_ternary(node: cst.BaseExpression) -> bool:
    """``a if b else c`` without parentheses, whose parts hold no other ternary or lambda (a
    formatter's split of those is not one neuron-lint is sure of)."""
    if not isinstance(node, cst.IfExp) or node.lpar:
        return False
    return not any(isinstance(n, (cst.IfExp, cst.Lambda)) for part in (node.body, node.test, node.orelse)
                   for n in _walk(part))


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)
