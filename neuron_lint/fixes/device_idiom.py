"""The availability idiom ``"cuda" if torch.cuda.is_available() else "cpu"``, and device definitions.

- :func:`plan_guard` / :func:`rewrite_guard`: the idiom is replaced as a whole by the device (or
  its type): the guard and what it decides go together. When the other arm is not a plain CPU
  fallback, the guard becomes ``torch.accelerator.is_available()``;
- :func:`plan_inline_definition` / :func:`rewrite_inline`: a variable that *is* the module's device
  string, where no shared device can be used, gets the string idiom written out;
- :func:`device_idiom`: ``torch.accelerator.current_accelerator() if torch.accelerator.is_available()
  else torch.device("cpu")``, broken over lines as ``ruff format`` prints it when it is too long.
"""

from __future__ import annotations

import ast

from .decline import Decline
from .device_choice import (
    cpu_fallback_chain,
    device_data,
    first_arg_of_to,
    is_availability,
    is_test_file,
    runs_at_import,
    short,
)
from .device_forms import convert, cst_literal_kind, word
from .guard_reach import kept_placement, typed_data_note
from .guards import cuda_only_code, moves_things, region_nodes
from .imported_device import imported_device_note
from .line_length import line_length
from .plan import DEVICE_VAR
from .visible_devices import VISIBLE_LATER, chosen_before, picks_visible_devices


def _top_statement(ctx, node: ast.AST) -> ast.stmt:
    """The module-level statement that holds ``node``."""
    top = node
    for p in ctx.ancestors(node):
        if p is ctx.tree:
            break
        top = p
    return top


def _string_definition(ctx, node) -> ast.Assign | None:
    """``NAME = "cuda"`` or ``NAME = "cuda" if torch.cuda.is_available() else "cpu"``: the statement,
    when ``node`` (the ``"cuda"``) or the availability idiom around it is the whole value of a
    one-name assignment."""
    value, parent = node, ctx.parent(node)
    if isinstance(parent, ast.IfExp) and node is parent.body:
        if not (is_availability(ctx, parent.test) and isinstance(parent.orelse, ast.Constant)
                and parent.orelse.value == "cpu"):
            return None
        value = parent
    stmt = ctx.parent(value)
    if (isinstance(stmt, ast.Assign) and stmt.value is value and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return stmt
    return None


def plan_inline_definition(ctx, hit, node):
    """A variable that *is* the module's (or class's) device string, where no shared device can be
    used -- the variable is named ``DEVICE`` itself, or the module binds that name elsewhere: its
    value becomes the current accelerator's type, written out (``"cpu"`` without one)."""
    stmt = _string_definition(ctx, node)
    if stmt is None:
        return None
    name = stmt.targets[0].id
    if name != DEVICE_VAR:
        choice, _ = ctx.device_choice(node)
        if choice:
            return None  # the shared device serves: `name = DEVICE.type`
    if not ctx.allows("2.6"):
        return None
    at_import = ctx.at_module_level(stmt) or runs_at_import(ctx, stmt)
    branch = ctx.parent(stmt)
    # in the branch of an availability test (DeepFilterNet's `if torch.cuda.is_available():
    # TORCH_DEVICE = "cuda"`) there is an accelerator: its type, without asking again
    guarded = isinstance(branch, ast.If) and stmt in branch.body and is_availability(ctx, branch.test)
    if (at_import and not guarded and not isinstance(stmt.value, ast.IfExp) and picks_visible_devices(ctx)
            and not chosen_before(ctx, _top_statement(ctx, stmt))):
        # IGEV's demo_video.py: `DEVICE = 'cuda'`, then `os.environ['CUDA_VISIBLE_DEVICES'] = '0'` (read set 87)
        ctx.note(hit, f"not rewritten: {VISIBLE_LATER}")
        return None
    test = stmt.value.test if isinstance(stmt.value, ast.IfExp) else None
    kept = test is not None and kept_placement(ctx, test, moves_things, cuda_only_code)
    if kept:  # DIS's `device = 'cuda' if torch.cuda.is_available() else 'cpu'` beside a kept placement
        ctx.note(hit, f"not rewritten: {kept}")
        return None
    library = at_import and not ctx.is_script and not is_test_file(ctx)
    message = "Define the device string with `torch.accelerator`" + (
        " (this library module then probes the device when it is imported)" if library else "")
    kind = "IfExp" if isinstance(stmt.value, ast.IfExp) else "SimpleString"
    return ctx.propose(hit, stmt.value, kind, message, {"mode": "inline", "name": name, "guarded": guarded},
                       applicability="unsafe" if library else None, fixer="device_string")


def device_call_arm(ctx, node):
    """``torch.device("cuda")`` (one string argument): that string, else None."""
    if (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
            and ctx.qualname(node.func) == "torch.device"):
        return node.args[0]
    return None


def guarded_device_call(ctx, node) -> ast.IfExp | None:
    """``torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")``: the ``IfExp``
    when ``node`` is that ``"cuda"``, else None (it is the current device, like the string idiom)."""
    call = ctx.parent(node)
    guard = ctx.parent(call)
    if not (isinstance(guard, ast.IfExp) and guard.body is call and device_call_arm(ctx, call) is node
            and is_availability(ctx, guard.test)):
        return None
    cpu = device_call_arm(ctx, guard.orelse)
    return guard if cpu is not None and cpu.value == "cpu" else None


def plan_guard(ctx, hit, node, guard: ast.IfExp, kind: str, message: str, fixer: str | None = None):
    """``"cuda" if torch.cuda.is_available() else "cpu"``: the guard and what it decides go together.
    So does ``torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")``, which
    becomes the device itself (``node`` is then the ``"cuda"`` in the first arm)."""
    negated = isinstance(guard.test, ast.UnaryOp)
    cuda_arm, other = (guard.orelse, guard.body) if negated else (guard.body, guard.orelse)
    called = not negated and kind == "plain" and device_call_arm(ctx, cuda_arm) is node
    if node is not cuda_arm and not called:
        ctx.note(hit, f"not rewritten: `{short(ctx, guard)}` picks CUDA when CUDA is missing; fix it by hand")
        return None
    typed = (typed_data_note(ctx, guard.test, region_nodes) or imported_device_note(ctx)
             or (not negated and kept_placement(ctx, guard.test, moves_things, cuda_only_code)))
    if typed:
        ctx.note(hit, f"not rewritten: {typed}")
        return None
    data = device_data(ctx, hit, guard)
    if data is None:
        return None
    whole = called or ctx.neuron or (kind == "plain" and cpu_fallback_chain(ctx, other))
    return ctx.propose(hit, guard, "IfExp", message + " (the availability check goes with it)",
                       {**data, "mode": "guard", "whole": whole, "negated": negated,
                        "as_device": called or first_arg_of_to(ctx, guard), "called": called}, fixer=fixer)


def rewrite_guard(rx, original, updated, data):
    """``"cuda" if torch.cuda.is_available() else "cpu"`` -> ``DEVICE.type`` (or ``DEVICE`` in ``.to()``
    and for ``torch.device("cuda") if ... else torch.device("cpu")``);
    any other fallback keeps its arm and gets ``torch.accelerator.is_available()`` as the test."""
    import libcst as cst

    from .nodes import parenthesised_like

    negated = data.get("negated", False)
    cuda_arm = updated.orelse if negated else updated.body
    if data.get("called") and isinstance(cuda_arm, cst.Call) and len(cuda_arm.args) == 1:
        cuda_arm = cuda_arm.args[0].value  # `torch.device("cuda")`: the device itself replaces it all
    if cst_literal_kind(cuda_arm) is None:
        raise Decline("the code here is not the planned availability check")
    if data.get("whole"):
        if data.get("device") == "neuron":
            new = word(cuda_arm)
        else:
            new = convert(rx, original, cuda_arm, data, data.get("as_device", False))
        return parenthesised_like(new, updated)
    new_arm = convert(rx, original, cuda_arm, data, False)
    test = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
    if negated:
        test = updated.test.with_changes(expression=test)
        return updated.with_changes(test=test, orelse=new_arm)
    return updated.with_changes(test=test, body=new_arm)


def rewrite_inline(rx, original, updated, data):
    """``"cuda"`` / ``"cuda" if torch.cuda.is_available() else "cpu"`` -> the string idiom."""
    import libcst as cst

    from .nodes import attribute, quote_of

    literal = updated.body if isinstance(updated, cst.IfExp) else updated
    if cst_literal_kind(literal) != "plain":
        raise Decline("the code here is not the planned CUDA device string")
    if data.get("guarded"):
        return attribute(cst.Call(func=rx.dotted("torch.accelerator.current_accelerator", original)), "type")
    return device_idiom(rx, original, data.get("name", "device"), as_string=quote_of(literal))


def device_idiom(rx, original, name: str, as_string: str = ""):
    """``torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")``,
    in parentheses over four lines (as ``ruff format`` prints it) when one line would pass the
    project's line length.
    With ``as_string`` (a quote character): the device type, ``current_accelerator().type ... else "cpu"``."""
    import libcst as cst

    from .nodes import attribute

    body = cst.Call(func=rx.dotted("torch.accelerator.current_accelerator", original))
    test = cst.Call(func=rx.dotted("torch.accelerator.is_available", original))
    if as_string:
        body = attribute(body, "type")
        orelse = cst.SimpleString(f"{as_string}cpu{as_string}")
    else:
        orelse = cst.Call(func=rx.dotted("torch.device", original), args=[cst.Arg(cst.SimpleString('"cpu"'))])
    one_line = cst.IfExp(test=test, body=body, orelse=orelse)
    pos = rx.position(original)
    column = pos.start.column if pos is not None else len(name) + 3
    if column + len(rx.module.tree.code_for_node(one_line)) <= line_length():
        return one_line
    indent = rx.module.tree.default_indent

    def broken(last: str):
        return cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace(last))

    assign = rx.parent(original)
    at = rx.position(assign) if isinstance(assign, cst.Assign) else None
    if at is not None and at.start.column + len(indent) + len(rx.module.tree.code_for_node(one_line)) <= line_length():
        # the value alone fits on a line of its own: in parentheses on that line, as ruff format
        # splits the right-hand side first (DeepFilterNet's `TORCH_DEVICE = ...` at line length 100)
        return one_line.with_changes(lpar=[cst.LeftParen(whitespace_after=broken(indent))],
                                     rpar=[cst.RightParen(whitespace_before=broken(""))])
    return one_line.with_changes(
        lpar=[cst.LeftParen(whitespace_after=broken(indent))],
        rpar=[cst.RightParen(whitespace_before=broken(""))],
        whitespace_before_if=broken(indent),
        whitespace_before_else=broken(indent),
    )
