"""Which lines hold a shape :mod:`neuron_lint.fixes.wrap` knows how to break: a statement on one
line (or a compound statement's header, or a decorator), one element of a bracket broken one
element per line, one ``key: value`` pair of a dict broken one pair per line, and the one line of
contents of a bracket opened onto lines of its own, and a call whose arguments are aligned under its
opening bracket or hang below it (broken again as if written on one line). Found on the module's ``ast`` tree, near the
lines a fix made too long."""

from __future__ import annotations

import ast


def shapes_on(tree: ast.Module, lines: set[int], source: list[str]) -> set[tuple[int, str]]:
    """(line, kind) for each of ``lines`` that starts a shape wrap knows (``source``: the module's
    lines, with their endings)."""
    return (set(_candidates(tree, lines)) | set(_elements(tree, lines, source)) | set(_pairs(tree, lines, source))
            | set(_contents(tree, lines, source)) | set(_aligned(tree, lines, source)))


def _near(tree: ast.Module, lines: set[int]):
    """The nodes of ``tree`` whose lines (a definition's decorators included) reach one of ``lines``,
    with those of no position: ``ast.walk`` less the subtrees that cannot matter."""
    if not lines:
        return
    first, last = min(lines), max(lines)
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            start = getattr(child, "lineno", None)
            if start is not None:
                for dec in getattr(child, "decorator_list", ()):
                    start = min(start, dec.lineno)
                end = child.end_lineno or start  # type: ignore[attr-defined]
                if end < first or start > last or not any(start <= n <= end for n in lines):
                    continue
            todo.append(child)


def _elements(tree: ast.Module, lines: set[int], source: list[str]):
    """(line, "element") of the lines that hold exactly one element of a bracket broken one element
    per line, with its trailing comma (a formatter keeps such a bracket broken and formats each
    element on its own)."""
    for node in _near(tree, lines):
        if isinstance(node, ast.Call):
            items = [*node.args, *(k for k in node.keywords if k.arg is not None)]
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = list(node.elts)
        else:
            continue
        for item in items:
            line = item.lineno
            if (line not in lines or item.end_lineno != line or isinstance(item, ast.Starred)
                    or not node.lineno < line < node.end_lineno):
                continue
            text = source[line - 1].rstrip("\r\n")
            if text[:item.col_offset].strip(" ") == "" and text[item.end_col_offset:] == ",":
                yield line, "element"


def _pairs(tree: ast.Module, lines: set[int], source: list[str]):
    """(line, "element") of the lines that hold exactly one ``key: value`` pair of a dict broken
    one pair per line, with its trailing comma."""
    for node in _near(tree, lines):
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values):
            if key is None:
                continue  # `**spread`
            line = key.lineno
            if line not in lines or value.end_lineno != line or not node.lineno < line < node.end_lineno:
                continue
            text = source[line - 1].rstrip("\r\n")
            if text[:key.col_offset].strip(" ") == "" and text[value.end_col_offset:] == ",":
                yield line, "pair"


#: The bracket around a node's items.
_OPENERS = {ast.Call: "(", ast.List: "[", ast.Tuple: "(", ast.Set: "{", ast.Dict: "{"}
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def _items(node: ast.AST) -> tuple[list, list]:
    """Where the items of a bracket start and where they end (a dict's keys and values; a
    ``**spread``'s value, whose stars sit two columns before it)."""
    if isinstance(node, ast.Call):
        items = [*node.args, *node.keywords]  # `*a` and `**k` start at their stars
        return items, items
    if isinstance(node, ast.Dict):
        return [k if k is not None else v for k, v in zip(node.keys, node.values)], list(node.values)
    return list(node.elts), list(node.elts)


def _start(node: ast.Dict | ast.AST, item: ast.AST) -> int:
    if isinstance(node, ast.Dict) and not any(item is k for k in node.keys):
        return item.col_offset - 2  # `**spread`
    return item.col_offset


def _contents(tree: ast.Module, lines: set[int], source: list[str]):
    """(line, "contents" + opener) of the lines that hold all the items of a bracket opened onto
    lines of its own (``f(`` ending the line above, ``)`` alone below), without a trailing comma.
    The opener is the bracket to parse the items in: ``(`` for a call's arguments, ``[`` for the
    elements of a list or tuple, ``{`` for a set's or a dict's."""
    for node in _near(tree, lines):
        opener = _OPENERS.get(type(node))
        if opener is None or node.end_lineno - node.lineno < 2:
            continue
        starts, ends = _items(node)
        if not starts:
            continue
        line = min(i.lineno for i in starts)
        last = max(ends, key=lambda i: (i.end_lineno, i.end_col_offset))
        if line not in lines or last.end_lineno != line or line != node.end_lineno - 1:
            continue
        text = source[line - 1].rstrip("\r\n")
        column = min(_start(node, i) for i in starts)
        if text[:column].strip(" ") != "" or text[last.end_col_offset:] != "":
            continue  # something else on the line, a trailing comma (kept broken) or a comment
        above, below = source[line - 2].rstrip("\r\n"), source[line].rstrip("\r\n")
        if isinstance(node, ast.Call):
            opened = node.func.end_lineno == line - 1
        else:
            opened = node.lineno == line - 1 and node.col_offset == len(above) - 1
        if opened and above.endswith(opener) and below.strip(" ") == _CLOSERS[opener] and node.end_col_offset == len(below):
            yield line, "contents" + ("[" if opener == "(" and not isinstance(node, ast.Call) else opener)


def _candidates(tree: ast.Module, lines: set[int]):
    """(line, kind) of the statements that start on ``lines`` and fit on that one line (their header,
    for a compound statement)."""
    for node in _near(tree, lines):
        if not isinstance(node, ast.stmt) or (node.lineno not in lines and not getattr(node, "decorator_list", None)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for dec in node.decorator_list:
                if dec.lineno in lines and dec.end_lineno == dec.lineno:
                    yield dec.lineno, "decorator"
        if isinstance(node, (ast.For, ast.If, ast.While)):
            head = node.iter if isinstance(node, ast.For) else node.test
            if head.end_lineno == node.lineno and node.body and node.body[0].lineno > node.lineno:
                yield node.lineno, "header"
        elif isinstance(node, ast.With) and len(node.items) == 1:
            if node.end_lineno and node.body and node.body[0].lineno > node.lineno and isinstance(
                    node.items[0].context_expr, ast.Call) and node.items[0].context_expr.end_lineno == node.lineno:
                yield node.lineno, "header"
        elif not hasattr(node, "body") and node.end_lineno == node.lineno:
            yield node.lineno, "simple"


def _aligned(tree: ast.Module, lines: set[int], source: list[str]):
    """(line, "joined:" + last line) of the statements that end in a call broken by hand with its first
    argument on the call's line and the others below it, each on one line (ProPainter's
    ``init_process_group(backend='nccl',`` / ``init_method=...`` aligned under it), whose first line
    a fix made too long. Read as the one line they would make, they are broken as a formatter
    would; no comment, backslash or other grown line in them."""
    for node in _near(tree, lines):
        if not isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            continue
        first, last = node.lineno, node.end_lineno or node.lineno
        call = node.value
        if last == first or not isinstance(call, ast.Call):
            continue
        items = [*call.args, *call.keywords]
        # or opened at the end of the first line, the arguments below and the bracket closed after the
        # last of them (yapf's and pep8's hanging form: ViTPose's `parser.add_argument(` / `'--device',
        # default='cuda:0', help=...)`, read set 99)
        hanging = (bool(items) and items[0].lineno == first + 1 and source[first - 1].rstrip("\r\n").endswith("(")
                   and max(i.end_lineno for i in items) == last)  # (a bracket closed on a line of its own: `_contents`)
        grown = [n for n in range(first, last + 1) if n in lines]
        if grown != [first] and not (hanging and grown):
            continue
        if (call.func.end_lineno != first or not items or items[0].lineno != first + hanging or call.end_lineno != last
                or any(i.lineno != i.end_lineno for i in items)):
            continue
        span = [source[n - 1].rstrip("\r\n") for n in range(first, last + 1)]
        if (call.end_col_offset != len(span[-1]) or span[-1].endswith(",)")
                or any("#" in text or text.endswith("\\") for text in span)):
            continue  # (a trailing comma keeps the call broken one argument per line)
        yield first, f"joined:{last}"
