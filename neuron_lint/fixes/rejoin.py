"""Lay out a call chain whose last call a fix gave arguments, the way ``ruff format`` does.

A formatter splits ``x = A.from_pretrained("...").cuda()`` at ``from_pretrained(``, the last
bracket pair with something inside. Once ``.cuda()`` is ``.to(DEVICE)`` the last pair has
contents, and ``ruff format`` (like black) splits there instead when what comes before it fits
on one line, or joins the statement when all of it fits (diffusers' gligen ``make_datasets.py``)::

    grounding_dino_model = AutoModelForZeroShotObjectDetection.from_pretrained(
        "IDEA-Research/grounding-dino-base"
    ).to(DEVICE)

becomes, within 119 columns,

    grounding_dino_model = AutoModelForZeroShotObjectDetection.from_pretrained("IDEA-Research/grounding-dino-base").to(
        DEVICE
    )

Only that shape is handled: a simple statement (an expression, an assignment or a ``return``)
whose value is ``<call>(<arguments on one line>).<name>(<arguments>)``, the inner call split
around its arguments with no comment and no trailing comma, on lines a fix changed.

The other way round, a fix that shortens the arguments of a call split around them (flux's
``default="cuda" if torch.cuda.is_available() else "cpu"`` -> ``default=DEVICE.type``) joins the
call onto one line when it now fits, as ``ruff format`` would (:func:`join_shrunk`)::

    parser.add_argument(
        "--device", type=str, default=DEVICE.type, help="Device to use"
    )

becomes ``parser.add_argument("--device", type=str, default=DEVICE.type, help="Device to use")``.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from ..engine.parsing import parse
from ..errors import ParseError
from ..io.positions import split_lines

#: The last line of the shape: ``).to(DEVICE)``.
_CLOSING = re.compile(r"^\s*\)\.\w+\(.+\),?\s*$")
_NONE = cst.SimpleWhitespace("")


def _changed_closings(current: str, new: str) -> set[int]:
    """The lines of ``new`` that end the shape and are not lines of ``current``."""
    old = None
    found = set()
    for n, line in enumerate(split_lines(new), 1):
        if _CLOSING.match(line):
            old = set(split_lines(current)) if old is None else old
            if line not in old:
                found.add(n)
    return found


def _chain(stmt: cst.SimpleStatementLine):
    """(outer call, inner call, setter) of the shape, or None; ``setter(call)`` rebuilds ``stmt``."""
    if len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr)):
        outer = small.value
    else:
        return None
    if not (isinstance(outer, cst.Call) and outer.args and not outer.lpar and isinstance(outer.func, cst.Attribute)
            and isinstance(outer.func.value, cst.Call) and outer.func.value.args):
        return None
    inner = outer.func.value
    if not isinstance(inner.whitespace_before_args, cst.ParenthesizedWhitespace):
        return None
    if inner.args[-1].comma != cst.MaybeSentinel.DEFAULT:
        return None  # a trailing comma keeps the arguments on lines of their own

    def setter(call):
        return stmt.with_changes(body=[small.with_changes(value=call)])

    return outer, inner, setter


def _layouts(stmt: cst.SimpleStatementLine, indent_unit: str):
    """(joined on one line, split at the last call's brackets) forms of ``stmt``, or None."""
    found = _chain(stmt)
    if found is None:
        return None
    outer, inner, setter = found
    module = cst.Module(body=[])
    inner_joined = inner.with_changes(whitespace_before_args=_NONE,
                                      args=[*inner.args[:-1], inner.args[-1].with_changes(whitespace_after_arg=_NONE)])
    if "#" in module.code_for_node(outer) or "\n" in module.code_for_node(inner_joined):
        return None  # a comment (joining would lose it), or more lines inside: not this shape
    if "\n" in module.code_for_node(outer.with_changes(func=cst.Name("_"))):
        return None  # the last call's own arguments are already split
    joined_call = outer.with_changes(func=outer.func.with_changes(value=inner_joined))
    broken = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), indent=True,
                                         last_line=cst.SimpleWhitespace(indent_unit))
    closing = cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), indent=True,
                                          last_line=cst.SimpleWhitespace(""))
    split_call = joined_call.with_changes(
        whitespace_before_args=broken,
        args=[*outer.args[:-1], outer.args[-1].with_changes(whitespace_after_arg=closing)])
    return setter(joined_call), setter(split_call)


def rejoin(current: str, new: str, limit: int, path: str = "<string>", indent_unit: str = "    ") -> str:
    """``new`` with each statement of the shape above, on lines changed from ``current``, laid out as
    ``ruff format`` would within ``limit``; ``new`` itself when there is none."""
    changed = _changed_closings(current, new)
    if not changed:
        return new
    try:
        tree = parse(new, path)
    except ParseError:
        return new
    source = split_lines(new, keepends=True)
    done = False
    statements = [s for s in ast.walk(tree) if isinstance(s, (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr))
                  and s.end_lineno in changed and s.end_lineno > s.lineno]
    # and an argument on lines of its own, followed by its comma (pytorch3d's assertClose(...,
    # torch.tensor(...).to(X), ...)): laid out as the value of a statement, the comma kept
    statements += [a for n in ast.walk(tree) if isinstance(n, ast.Call) for a in n.args
                   if a.end_lineno in changed and a.end_lineno > a.lineno
                   and source[a.end_lineno - 1][a.end_col_offset:].strip() == ","]
    for node in sorted(statements, key=lambda s: -s.lineno):
        first = source[node.lineno - 1]
        column = len(first) - len(first.lstrip(" "))
        if node.col_offset != column or first[:column].strip():
            continue
        comma = "," if isinstance(node, ast.expr) else ""
        ending = source[node.end_lineno - 1][len(source[node.end_lineno - 1].rstrip("\r\n")):]
        code = "".join(source[node.lineno - 1:node.end_lineno])[column:]
        if comma:
            code = code.rstrip()[:-1] + "\n"
        try:
            stmt = cst.parse_module(code).body[0]
        except (cst.ParserSyntaxError, ValueError, IndexError):
            continue
        forms = _layouts(stmt, indent_unit) if isinstance(stmt, cst.SimpleStatementLine) else None
        if forms is None:
            continue
        module = cst.Module(body=[])
        pad = " " * column
        for form in forms:
            lines = (module.code_for_node(form).rstrip("\r\n") + comma).split("\n")
            if all(len(pad + line) <= limit for line in lines):
                newline = "\r\n" if ending == "\r\n" else "\n"
                source[node.lineno - 1:node.end_lineno] = [newline.join(pad + line for line in lines) + ending]
                done = True
                break
    return "".join(source) if done else new


def _unparenthesised(small) -> cst.BaseExpression | None:
    """The assigned or returned value without its parentheses, when they are on lines of their
    own around a name, attribute, subscript or call (lm-eval's ``self._device = (`` /
    ``torch.device("cuda") if ... else ...`` / ``)``, now ``_current_device()``): ``ruff format``
    drops such parentheses when the statement fits on one line. Tuples, conditional and named
    expressions keep theirs."""
    value = small.value
    if not (isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return))
            and isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)) and len(value.lpar) == 1
            and len(value.rpar) == 1 and isinstance(value.lpar[0].whitespace_after, cst.ParenthesizedWhitespace)
            and isinstance(value.rpar[0].whitespace_before, cst.ParenthesizedWhitespace)):
        return None
    return value.with_changes(lpar=[], rpar=[])


def _on_one_line(stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine | None:
    """``stmt`` laid out on one line when its value is a call split around its arguments (``f(`` /
    the arguments on one line / ``)``) with no trailing comma, a value in parentheses of its own
    (:func:`_unparenthesised`), a display or comprehension split around its contents
    (:func:`_bracket_on_one_line`) or an assertion's test in parentheses of its own; else None."""
    if len(stmt.body) != 1 or stmt.trailing_whitespace.comment is not None:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assert):  # `assert (` / the test / `)` (InvokeAI's tests, held-out set 54)
        test = small.test
        if (isinstance(test, (cst.Tuple, cst.NamedExpr)) or len(test.lpar) != 1 or len(test.rpar) != 1
                or not isinstance(test.lpar[0].whitespace_after, cst.ParenthesizedWhitespace)
                or not isinstance(test.rpar[0].whitespace_before, cst.ParenthesizedWhitespace)):
            return None
        return stmt.with_changes(body=[small.with_changes(test=test.with_changes(lpar=[], rpar=[]))])
    if not isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr)):
        return None
    value = _unparenthesised(small) or _bracket_on_one_line(small.value)
    call = small.value
    if value is None:
        if not (isinstance(call, cst.Call) and call.args and not call.lpar
                and isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace)
                and isinstance(call.args[-1].whitespace_after_arg, cst.ParenthesizedWhitespace)
                and not isinstance(call.args[-1].comma, cst.Comma)):
            return None
        args = [*call.args[:-1], call.args[-1].with_changes(whitespace_after_arg=_NONE)]
        value = call.with_changes(whitespace_before_args=_NONE, args=args)
    return stmt.with_changes(body=[small.with_changes(value=value)])


def _bracket_on_one_line(value) -> cst.BaseExpression | None:
    """A list, set or dict display or comprehension split around its contents (``[`` / the
    contents on one line / ``]``, no trailing comma), with the line breaks inside its brackets
    taken out: torchao's ``[torch.cuda.Event(enable_timing=True) for _ in range(n)]``, short enough
    once it is ``torch.Event``; else None."""
    if isinstance(value, (cst.List, cst.ListComp)):
        opening, closing, names = value.lbracket, value.rbracket, ("lbracket", "rbracket")
    elif isinstance(value, (cst.Set, cst.SetComp, cst.Dict, cst.DictComp)):
        opening, closing, names = value.lbrace, value.rbrace, ("lbrace", "rbrace")
    else:
        return None
    elements = getattr(value, "elements", None)
    if (value.lpar or not isinstance(opening.whitespace_after, cst.ParenthesizedWhitespace)
            or not isinstance(closing.whitespace_before, cst.ParenthesizedWhitespace)
            or (elements is not None and (not elements or isinstance(elements[-1].comma, cst.Comma)))):
        return None
    return value.with_changes(**{names[0]: opening.with_changes(whitespace_after=_NONE),
                                 names[1]: closing.with_changes(whitespace_before=_NONE)})


def _join_header(source: list[str], node: ast.AST, limit: int) -> bool:
    """A ``def f(`` / parameters / ``):`` header whose parameters a fix shortened (a ``device="cuda"``
    default now ``None``) joined onto one line in ``source`` when it fits ``limit``, as ``ruff format``
    joins it (pytorch3d's ``_init_random_rays``); a comment or a trailing comma keeps it split."""
    at = node.lineno - 1
    if len(source) < at + 4 or node.body[0].lineno != node.lineno + 3:
        return False
    first, middle, last = (line.rstrip("\r\n") for line in source[at:at + 3])
    params, closing = middle.strip(), last.strip()
    if not (first.endswith("(") and closing.startswith(")") and closing.endswith(":")) or "#" in first + middle + last \
            or params.endswith(",") or not params:
        return False
    joined = first + params + closing
    try:
        ast.parse(joined.strip() + "\n    pass\n")
    except SyntaxError:
        return False
    if len(joined) > limit:
        return False
    source[at:at + 3] = [joined + source[at + 2][len(last):]]
    return True


def _statements(body):
    """Every statement in ``body`` and in the blocks of its compound statements (expressions hold
    none, so this visits far fewer nodes than ``ast.walk``)."""
    for stmt in body:
        yield stmt
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            yield from _statements(holder.body)


def join_shrunk(current: str, new: str, limit: int, path: str = "<string>") -> str:
    """``new`` with each three-line call statement whose middle line (its arguments) a fix changed
    joined onto one line, when it fits ``limit`` and holds no comment or trailing comma; so is an
    assigned or returned value in parentheses of its own (:func:`_unparenthesised`)."""
    old = set(split_lines(current))
    lines = split_lines(new)
    middles = {n for n in range(2, len(lines)) if lines[n - 1] not in old}
    if not middles:
        return new
    try:
        tree = parse(new, path)
    except ParseError:
        return new
    source = split_lines(new, keepends=True)
    done = False
    every = list(_statements(tree.body))
    statements = [s for s in every if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr,
                                                     ast.Assert))
                  and s.end_lineno == s.lineno + 2 and s.lineno + 1 in middles]
    statements += [s for s in every if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and s.lineno + 1 in middles]
    module = cst.Module(body=[])
    for node in sorted(statements, key=lambda s: -s.lineno):  # from the end: a join moves what follows
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            done = _join_header(source, node, limit) or done
            continue
        first = source[node.lineno - 1]
        column = len(first) - len(first.lstrip(" "))
        if node.col_offset != column or first[:column].strip():
            continue
        ending = source[node.end_lineno - 1][len(source[node.end_lineno - 1].rstrip("\r\n")):]
        try:
            stmt = cst.parse_module("".join(source[node.lineno - 1:node.end_lineno])[column:]).body[0]
        except (cst.ParserSyntaxError, ValueError, IndexError):
            continue
        one_line = _on_one_line(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if one_line is None or "#" in module.code_for_node(stmt):
            continue  # a comment would be lost with the line break it ends (a "#" in a string: left too)
        joined = module.code_for_node(one_line).rstrip("\r\n")
        if "\n" in joined or re.search(r",\s*[)\]}]", joined) or column + len(joined) > limit:
            continue  # a magic trailing comma inside, or too long: ruff keeps it split
        source[node.lineno - 1:node.end_lineno] = [" " * column + joined + ending]
        done = True
    return "".join(source) if done else new
