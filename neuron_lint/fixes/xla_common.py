"""Helpers the legacy-XLA fixers (``fixers/xla_*.py``) share.

- :func:`import_of`: the import that binds the base name of a ``torch_xla`` reference, in the form
  ``rx.remove_import_if_unused`` takes, so a rewrite that removed the last use removes the import;
- :func:`env_int`: ``int(os.environ.get("RANK", 0))`` built with LibCST (adds ``import os``);
- :func:`dist_func`: ``dist.barrier`` written with the module's own ``torch.distributed`` alias.
"""

from __future__ import annotations

import ast

from ..io.positions import split_lines


def base_name(node) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def import_of(ctx, node) -> list | None:
    """``[module, obj, asname]`` of the module-level import binding ``node``'s base name to torch_xla."""
    name = base_name(node)
    if name is None:
        return None
    for stmt in ctx.walk(ctx.tree):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name.split(".")[0] != "torch_xla":
                    continue
                if a.asname == name:
                    return [a.name, None, a.asname]
                if a.asname is None and a.name.split(".")[0] == name:
                    return [a.name, None, None]
        elif isinstance(stmt, ast.ImportFrom) and not stmt.level and (stmt.module or "").split(".")[0] == "torch_xla":
            for a in stmt.names:
                if (a.asname or a.name) == name:
                    return [stmt.module, a.name, a.asname]
    return None


def drop_import(rx, data) -> None:
    imp = data.get("imp")
    if imp:
        rx.remove_import_if_unused(imp[0], imp[1], imp[2])


def dist_func(rx, data, attr: str, site):
    from .nodes import attribute

    alias = data.get("dist")
    if alias:
        return attribute(alias, attr)
    return rx.dotted(f"torch.distributed.{attr}", site)


def os_name(rx) -> str:
    """``os`` (``import os`` is added when the module does not import it)."""
    from libcst.codemod.visitors import AddImportsVisitor

    AddImportsVisitor.add_needed_import(rx.codemod, "os")
    return "os"


def env_int(rx, var: str, default: int, quote: str = '"'):
    """``int(os.environ.get("VAR", default))`` (``quote``: ``'`` inside a double-quoted f-string)."""
    return rx.expression(f'int({os_name(rx)}.environ.get({quote}{var}{quote}, {default}))')


def string_quote(ctx, node) -> str:
    """The quote a string literal written at ``node`` may use: the other one inside an f-string."""
    for p in ctx.ancestors(node):
        if isinstance(p, ast.JoinedStr):
            text = ctx.segment(p).lstrip("rRbBfFuU")
            return "'" if text.startswith('"') else '"'
        if isinstance(p, ast.stmt):
            break
    return '"'



def calls_init_process_group(ctx) -> bool:
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)):
            attr = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
            if attr == "init_process_group":
                return True
    return False


def wraps_model(ctx) -> str | None:
    """The DDP/FSDP wrapper the module visibly uses (a call of it), or None."""
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Call):
            q = ctx.qualname(n.func) or ""
            last = q.rsplit(".", 1)[-1] if q else (n.func.id if isinstance(n.func, ast.Name) else "")
            if last in ("DistributedDataParallel", "FullyShardedDataParallel", "fully_shard") and (
                q.startswith("torch.") or not q
            ):
                return last
    return None


_ENV_CALLS = {"os.environ.setdefault", "os.environ.pop", "os.putenv", "os.unsetenv", "os.environ.__setitem__"}


def plan_env_delete(ctx, hit, message: str, applicability: str | None = "unsafe"):
    """Delete the statement that sets or unsets one environment variable (``os.environ["X"] = "1"``,
    ``os.environ.setdefault("X", ...)``, ``del os.environ["X"]``); anything else keeps a note."""
    node = hit.node
    parent = ctx.parent(node)
    stmt = None
    if isinstance(parent, ast.Subscript) and ctx.qualname(parent.value) == "os.environ":
        holder = ctx.parent(parent)
        if isinstance(holder, ast.Assign) and holder.targets == [parent]:
            stmt, kind = holder, "Assign"
        elif isinstance(holder, ast.Delete) and holder.targets == [parent]:
            stmt, kind = holder, "Del"
    elif isinstance(parent, ast.Call) and parent.args and parent.args[0] is node and ctx.qualname(parent.func) in _ENV_CALLS:
        holder = ctx.parent(parent)
        if isinstance(holder, ast.Expr):
            stmt, kind = holder, "Expr"
    if stmt is None:
        ctx.note(hit, "not rewritten: only a statement that sets the variable (`os.environ[...] = ...`) is deleted")
        return None
    return ctx.propose(hit, stmt, kind, message, {"mode": "delete_env"}, applicability)


def line_limit(ctx) -> int:
    import os

    from .line_length import DEFAULT_LINE_LENGTH, line_length_of

    path = getattr(ctx, "path", "") or ""
    if path and os.path.isfile(path):
        return line_length_of(os.path.dirname(os.path.abspath(path)))
    return DEFAULT_LINE_LENGTH


def fits(ctx, hit, node, new_length: int, indent: int = 0) -> bool:
    """Would replacing ``node`` (one line) by ``new_length`` characters, ``indent`` columns deeper,
    keep its line within the project's line length (or not make an already long line count twice)?
    ``fix`` refuses a rewrite that makes a line too long; saying so at plan time saves it the trial."""
    lines = split_lines(ctx.text)
    first = node.lineno - 1
    if first >= len(lines) or (node.end_lineno or node.lineno) != node.lineno:
        return True
    line = lines[first]
    limit = line_limit(ctx)
    if len(line) > limit:
        return True
    old = len(ctx.segment(node))
    if len(line) - old + new_length + indent <= limit:
        return True
    ctx.note(hit, f"not rewritten: the line would grow past {limit} characters (the project's line length); "
                  "rewrite it by hand")
    return False
