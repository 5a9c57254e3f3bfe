"""Break a statement that a fix made too long, the way ``ruff format`` (and black) would.

A rewrite such as ``"cuda"`` -> ``DEVICE.type`` can push a line past the project's line length.
In a file that keeps to that length, the fixer's output should not be the one line ``ruff format
--check`` (or E501) complains about, so the statement is broken at its last bracket pair:

    x = torch.empty(8, device=DEVICE.type, dtype=torch.int64, pin_memory=True)

becomes

    x = torch.empty(
        8, device=DEVICE.type, dtype=torch.int64, pin_memory=True
    )

and, when the contents do not fit on one line either, one element per line with a trailing
comma. Only the shapes whose formatted form is certain are handled (one-line simple statements
and ``for``/``if``/``while`` headers whose expression ends in a bracket, ``with`` headers of one
call, one-line decorators, one element (or ``key: value`` pair) of a bracket already broken one
element per line, the one line of contents of a bracket opened onto lines of its own (then one
item per line with a trailing comma, or a lone ``a if b else c`` one part per line), and an
assigned or returned ``a if b else c``, in parentheses of its own or before bracket-free operands; no comments);
:func:`wrap_lines` leaves every other statement as it is, and the caller then drops the fix that
made it too long, as before.
"""

from __future__ import annotations

import libcst as cst

from ..engine.parsing import parse
from ..errors import ParseError
from ..io.positions import split_lines
from .bracket_split import (
    bracket_items,
    broken,
    display,
    is_empty,
    plain_ternary,
    split_bracket,
    trailing_comma,
)
from .wrap_shapes import shapes_on

_BRACKETED = (cst.Call, cst.Subscript, cst.List, cst.Tuple, cst.Set, cst.Dict,
              cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _last_bracket(node: cst.BaseExpression, value: bool = False) -> list | None:
    """The path to the expression that owns the statement's last bracket pair (the one closing at
    the end of the line), or None. An operator's right operand is followed; a parenthesised
    expression owns its parentheses. ``value``: ``node`` is an assigned or returned value, where
    ruff also splits at a parenthesised ternary followed by operands without brackets (as an
    argument it breaks before the operator instead)."""
    path = [node]
    while True:
        if node.lpar:
            return path
        if isinstance(node, _BRACKETED):
            if isinstance(node, cst.Tuple):
                return None  # a tuple without parentheses: nothing to split at
            return path
        if (value and isinstance(node, cst.BinaryOperation) and _bracket_free(node.right)
                and (isinstance(node.left, cst.BinaryOperation) or isinstance(node.left, cst.IfExp) and node.left.lpar)):
            node = node.left  # `(a if b else c) // 1e9`: the ternary's parentheses are the last pair
        elif isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
            node = node.right
        elif isinstance(node, cst.Comparison) and node.comparisons:
            node = node.comparisons[-1].comparator
        else:
            return None
        path.append(node)


def _bracket_free(node: cst.BaseExpression) -> bool:
    """A name, a number, an attribute of one, or an operation on such (``1024**3``): no bracket."""
    if node.lpar:
        return False
    if isinstance(node, cst.Attribute):
        return _bracket_free(node.value)
    if isinstance(node, cst.BinaryOperation):
        return _bracket_free(node.left) and _bracket_free(node.right)
    return isinstance(node, (cst.Name, cst.Integer, cst.Float))


def _subscripted_call(node: cst.BaseExpression) -> list | None:
    """From ``f(a)[i][j]``: the path down the subscripts to the call ``f(a)`` (whose arguments are
    the pair to split when the subscript's opening line is too long), or None."""
    path = []
    while isinstance(node, cst.Subscript) and not node.lpar:
        node = node.value
        path.append(node)
    if path and isinstance(node, cst.Call) and not node.lpar and node.args:
        return path
    return None


def _rebuild(path: list, new_last: cst.BaseExpression) -> cst.BaseExpression:
    """``path[0]`` with ``path[-1]`` replaced by ``new_last`` (``path`` from :func:`_last_bracket`)."""
    node = new_last
    for parent, child in zip(reversed(path[:-1]), reversed(path[1:])):
        if isinstance(parent, (cst.BinaryOperation, cst.BooleanOperation)):
            node = parent.with_changes(left=node) if parent.left is child else parent.with_changes(right=node)
        elif isinstance(parent, cst.Call):  # the empty trailing call `.float()` of a split call
            node = parent.with_changes(func=parent.func.with_changes(value=node))
        elif isinstance(parent, cst.Subscript):  # `)[::2]` after a split call
            node = parent.with_changes(value=node)
        else:
            last = parent.comparisons[-1].with_changes(comparator=node)
            node = parent.with_changes(comparisons=[*parent.comparisons[:-1], last])
    return node


#: Priorities of the binary operators, as black and ruff rank the places to split a line: only the
#: operators of the highest priority present count (``z + noise * f(x)`` has one, the ``+``).
_PRIORITY = {
    cst.BitOr: 9, cst.BitXor: 8, cst.BitAnd: 7, cst.LeftShift: 6, cst.RightShift: 6, cst.Add: 5,
    cst.Subtract: 5, cst.Multiply: 4, cst.Divide: 4, cst.FloorDivide: 4, cst.Modulo: 4,
    cst.MatrixMultiply: 4, cst.Power: 1,
}
_LOGIC, _COMPARATOR = 14, 10


def _operators(node: cst.BaseExpression, out: list[int]) -> bool:
    """Collect the priority of each operator outside any bracket in ``node``; False when ``node``
    has one neuron-lint does not try to place."""
    if node.lpar:
        return True
    if isinstance(node, cst.BooleanOperation):
        out.append(_LOGIC)
        return _operators(node.left, out) and _operators(node.right, out)
    if isinstance(node, cst.BinaryOperation):
        out.append(_PRIORITY.get(type(node.operator), 4))
        return _operators(node.left, out) and _operators(node.right, out)
    if isinstance(node, cst.Comparison):
        out.extend(_COMPARATOR for _ in node.comparisons)
        return _operators(node.left, out)
    return not isinstance(node, (cst.IfExp, cst.Lambda, cst.NamedExpr, cst.UnaryOperation, cst.Await, cst.Yield))


def _top_delimiters(node: cst.BaseExpression) -> int:
    """Operators of the highest priority outside any bracket in ``node`` (0 for a name, a call, an
    attribute chain; 99 for a ternary, a lambda and the like, which neuron-lint does not place)."""
    found: list[int] = []
    if not _operators(node, found):
        return 99
    return found.count(max(found)) if found else 0


def _chained_calls(node: cst.BaseExpression) -> int:
    """Attribute accesses on a call or subscript result (``a(x).b(y).c`` has two): a formatter
    splits such a chain as a whole rather than at its last bracket."""
    count = 0
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)) and not node.lpar:
        inner = node.value if isinstance(node, (cst.Attribute, cst.Subscript)) else node.func
        if isinstance(node, cst.Attribute) and isinstance(inner, (cst.Call, cst.Subscript)) and not inner.lpar:
            count += 1
        node = inner
    return count


class _Breaker:
    """Chooses the broken form of one statement (parsed on its own, without its indentation)."""

    def __init__(self, limit: int, indent: str) -> None:
        self.limit, self.indent = limit, indent

    def _fits(self, column: int, code: str) -> bool:
        """Does every line of ``code`` (a statement at indentation ``column``) keep within the limit?"""
        return all(column + len(line) <= self.limit for line in code.split("\n"))

    def _candidates(self, expr: cst.BaseExpression, optional_parens: bool, render, column: int):
        """Split forms of ``expr``, in the order a formatter prefers them."""
        path = _last_bracket(expr, optional_parens)
        last = path[-1] if path else None
        chained = _chained_calls(last if path else expr)
        if last is not None and is_empty(last) and chained == 1 and isinstance(last, cst.Call):
            # `x.to(device, non_blocking=True).float()`: an empty last pair is not split; the
            # formatter opens the call before it and `).float()` closes the last line
            inner = last.func.value if isinstance(last.func, cst.Attribute) else None
            if isinstance(inner, (cst.Call, cst.Subscript)) and not inner.lpar and not is_empty(inner):
                path, last = [*path, inner], inner
        can_omit = last is not None and not is_empty(last) and _top_delimiters(expr) <= 1
        if optional_parens and chained > 1 and (not path or len(path) == 1):
            # the value is a chain of calls: the formatter puts it in parentheses, one call per
            # line (a chain that is an operand, `z + f(x).float().to(d)`, is split at its last bracket)
            can_omit = False
        if can_omit:
            head = _subscripted_call(last)
            if head is not None and not self._head_fits(path, last, render, column):
                # `x = f(a, b)[::2]` whose `x = f(a, b)[` is too long: the formatter splits the
                # call instead and keeps the subscripts on its closing line
                path, last = [*path, *head], head[-1]
                yield from self._splits(path, last)
                return
            yield from self._splits(path, last)
        if optional_parens and not expr.lpar and _top_delimiters(expr) < 99:
            yield self._parenthesized(expr)
        if optional_parens and plain_ternary(expr):
            # `x = a if b else c`: in parentheses of its own, on one line, else one part per line
            yield self._parenthesized(expr)
            yield self._parenthesized(expr.with_changes(whitespace_before_if=broken(self.indent),
                                                        whitespace_before_else=broken(self.indent)))

    def _splits(self, path: list, last: cst.BaseExpression):
        if not trailing_comma(bracket_items(last)):
            for explode in (True,) if display(last) else (False, True):
                split = split_bracket(last, self.indent, explode)
                if split is not None:
                    yield _rebuild(path, split)
            if isinstance(last, cst.Call) and len(last.args) == 1 and not last.args[0].star and plain_ternary(
                    last.args[0].value):
                # `torch.device(a if b else c)` whose argument does not fit on a line of its own: one
                # part of the ternary per line inside the opened call, as ruff format prints it
                arg = last.args[0]
                value = arg.value.with_changes(whitespace_before_if=broken(self.indent),
                                               whitespace_before_else=broken(self.indent))
                split = split_bracket(last.with_changes(args=[arg.with_changes(value=value)]), self.indent, False)
                if split is not None:
                    yield _rebuild(path, split)

    def _head_fits(self, path: list, last: cst.Subscript, render, column: int) -> bool:
        """Does the line up to a split subscript's opening bracket keep within the limit?"""
        split = split_bracket(last, self.indent, False)
        return split is not None and self._fits(column, render(_rebuild(path, split)).split("\n")[0])

    def _parenthesized(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        return expr.with_changes(lpar=[cst.LeftParen(whitespace_after=broken(self.indent))],
                                 rpar=[cst.RightParen(whitespace_before=broken(""))])

    def _pick(self, expr, optional_parens, render, column: int):
        for candidate in self._candidates(expr, optional_parens, render, column):
            code = render(candidate)
            # every line must fit as it is: no nested split is attempted
            if "\n" in code and self._fits(column, code):
                return code
        return None

    def simple(self, stmt: cst.SimpleStatementLine, column: int) -> str | None:
        """The broken code of a one-line simple statement, or None."""
        if len(stmt.body) != 1 or stmt.trailing_whitespace.comment is not None:
            return None
        small = stmt.body[0]
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)) and small.value is not None:
            optional = True  # the value may go into parentheses of its own
        elif isinstance(small, cst.Expr):
            optional = False
        else:
            return None
        module = cst.Module(body=[])

        def render(candidate):
            return module.code_for_node(stmt.with_changes(body=[small.with_changes(value=candidate)])).rstrip("\n")

        return self._pick(small.value, optional, render, column)

    def decorator(self, dec: cst.Decorator, column: int) -> str | None:
        """The broken code of a one-line decorator (``@skipUnless(...)``), split as a call statement is."""
        if dec.trailing_whitespace.comment is not None:
            return None
        module = cst.Module(body=[])

        def render(candidate):
            return module.code_for_node(dec.with_changes(decorator=candidate, leading_lines=[])).rstrip("\n")

        return self._pick(dec.decorator, False, render, column)

    def element(self, arg: cst.Arg | cst.DictElement, column: int) -> str | None:
        """The broken code of one element (or ``key: value`` pair) of a bracket already broken one
        element per line (``backend=get_backend(device),``), split as a call statement is, its comma kept."""
        module = cst.Module(body=[])

        def render(candidate):
            return module.code_for_node(arg.with_changes(value=candidate, comma=cst.MaybeSentinel.DEFAULT)) + ","

        return self._pick(arg.value, False, render, column)

    def contents(self, items: list, column: int) -> str | None:
        """The broken code of a bracket's one line of contents (the bracket itself opened onto lines
        of its own): one item per line with a trailing comma, as ``ruff format`` breaks a bracket
        whose contents do not fit; a lone ``a if b else c`` one part per line, at the same column."""
        module = cst.Module(body=[])
        none = cst.SimpleWhitespace("")
        if len(items) == 1:
            value = items[0].value
            if not plain_ternary(value) or isinstance(items[0], (cst.StarredElement, cst.StarredDictElement)):
                return None
            item = items[0].with_changes(value=value.with_changes(whitespace_before_if=broken(""),
                                                                  whitespace_before_else=broken("")))
            code = module.code_for_node(item.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        else:
            lines = []
            for item in items:
                if isinstance(item, cst.Arg):
                    item = item.with_changes(whitespace_after_arg=none)
                lines.append(module.code_for_node(item.with_changes(comma=cst.MaybeSentinel.DEFAULT)) + ",")
            code = "\n".join(lines)
        return code if "\n" in code and self._fits(column, code) else None

    def header(self, node, column: int) -> str | None:
        """The broken header (up to its colon) of a ``for``/``if``/``while`` statement, or of a
        ``with`` of one call (split inside the call's parentheses, as ``ruff format`` does), or None."""
        if not isinstance(node.body, cst.IndentedBlock) or node.body.header.comment is not None:
            return None
        module = cst.Module(body=[])
        if isinstance(node, cst.With):
            if len(node.items) != 1 or isinstance(node.lpar, cst.LeftParen) or not isinstance(node.items[0].item, cst.Call):
                return None
            item = node.items[0]

            def changed(candidate):
                return node.with_changes(items=[item.with_changes(item=candidate)])

            head, optional = item.item, False
        else:
            field = "iter" if isinstance(node, cst.For) else "test"

            def changed(candidate):
                return node.with_changes(**{field: candidate})

            head, optional = getattr(node, field), True

        def render(candidate):
            code = module.code_for_node(changed(candidate))
            return code[: code.index(":\n", len(code) - len(module.code_for_node(node.body)) - 2) + 1]

        return self._pick(head, optional, render, column)


def _joined(pieces: list[str]) -> str:
    """The lines of a bracket broken by hand, stripped, as one line: a space after each comma, none
    inside the brackets."""
    out = pieces[0].rstrip()
    for piece in pieces[1:]:
        out += piece if out.endswith(("(", "[", "{")) or piece.startswith((")", "]", "}")) else " " + piece
    return out


def wrap_lines(text: str, lines: set[int], limit: int, path: str = "<string>") -> str:
    """``text`` with the one-line statements starting on ``lines`` broken to fit ``limit``, where a
    formatter's form is certain (see the module docs); the rest stays as it is.

    Each statement is parsed by LibCST on its own (its line, less the indentation), so the cost
    does not grow with the module."""
    try:
        tree = parse(text, path)
    except ParseError:
        return text
    source = split_lines(text, keepends=True)  # as Python numbers lines: not at form feeds
    indent_unit = "    "
    breaker = _Breaker(limit, indent_unit)
    changed = False
    found = shapes_on(tree, lines, source)
    broken_at: set[int] = set()  # lines already broken (from the bottom up): a joined statement over them is left
    for number, kind in sorted(found, reverse=True):
        if kind.startswith("joined:") and broken_at & set(range(number, int(kind[7:]) + 1)):
            continue
        raw = source[number - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body):]
        newline = "\r\n" if ending == "\r\n" else "\n"
        code = body.lstrip(" ")
        column = len(body) - len(code)
        if not code or code[0] in "\t\f":
            continue  # tab indentation: not a shape a formatter leaves
        try:
            if kind.startswith("joined:"):
                end = int(kind[7:])
                code = _joined([code] + [source[n].strip() for n in range(number, end)])
                stmt = cst.parse_module(code + "\n").body[0]
                broken = breaker.simple(stmt, column) if isinstance(stmt, cst.SimpleStatementLine) else None
                if broken is not None:
                    del source[number:end]  # the lines below: the statement is now on ``number``'s
            elif kind == "simple":
                stmt = cst.parse_module(code + "\n").body[0]
                broken = breaker.simple(stmt, column) if isinstance(stmt, cst.SimpleStatementLine) else None
            elif kind == "element":
                call = cst.parse_expression("_(" + code[:-1] + ")")
                broken = breaker.element(call.args[0], column) if len(call.args) == 1 else None
            elif kind == "pair":
                pair = cst.parse_expression("{" + code[:-1] + "}")
                broken = breaker.element(pair.elements[0], column) if len(pair.elements) == 1 else None
            elif kind.startswith("contents"):
                opener = kind[-1]
                closer = {"(": ")", "[": "]", "{": "}"}[opener]
                bracket = cst.parse_expression(("_(" if opener == "(" else opener) + code + closer)
                broken = breaker.contents(list(bracket.args if opener == "(" else bracket.elements), column)
            elif kind == "decorator":
                stmt = cst.parse_module(code + "\ndef _():\n" + indent_unit + "pass\n").body[0]
                broken = breaker.decorator(stmt.decorators[0], column) if len(stmt.decorators) == 1 else None
            else:
                stmt = cst.parse_module(code + "\n" + indent_unit + "pass\n").body[0]
                broken = breaker.header(stmt, column)
        except (cst.ParserSyntaxError, ValueError):
            continue
        if broken is None:
            continue
        pad = " " * column
        source[number - 1] = newline.join(pad + line for line in broken.split("\n")) + ending
        changed = True
        broken_at.add(number)
    return "".join(source) if changed else text
