"""NRN701: remove an import of ``torch_xla`` that nothing in the module uses any more.

The plan (on the ``ast``) removes one import alias when no name it binds is read anywhere in the
module and no XLA device or backend string is left (``"xla"``, ``"xla:0"``, ``"xla://"``,
``"openxla"``): a side-effect import such as ``torch_xla.distributed.xla_backend`` registers the
``xla`` process-group backend, so it stays while ``init_process_group("xla")`` does. Fix passes
run to a fixed point, so an import becomes removable in the pass after the other NRN7xx fixes
rewrote its last use.
"""

from __future__ import annotations

import ast
import re

_XLA_STRINGS = re.compile(r"^(xla(:\d*)?|xla://.*|openxla(_eval)?|aot_torchxla_\w+)$")


def xla_strings_left(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _XLA_STRINGS.match(n.value)
               for n in ast.walk(tree))


def names_read(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}


def _is_xla(module: str) -> bool:
    return module.split(".")[0] == "torch_xla"


class XlaImport:
    name = "xla_import"

    def plan(self, ctx, hit):
        node = hit.node
        stmt = ctx.parent(node) if isinstance(node, ast.alias) else node
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return None
        if isinstance(stmt, ast.Import):
            aliases = [a for a in stmt.names if _is_xla(a.name)]
            bound = {a.asname or a.name.split(".")[0] for a in aliases}
        else:
            aliases = [a for a in stmt.names]
            bound = {a.asname or a.name for a in aliases}
            if "*" in bound:
                ctx.note(hit, "not removed: a star import may bind anything")
                return None
        cache = ctx.__dict__.setdefault("_xla_import_cache", {})
        if "read" not in cache:
            cache["read"] = names_read(ctx.tree)
            cache["strings"] = xla_strings_left(ctx.tree)
        used = sorted(bound & cache["read"])
        if used:
            ctx.note(hit, f"not removed yet: the module still uses `{used[0]}`; remove the import once the "
                          "code that uses it is ported")
            return None
        if cache["strings"]:
            ctx.note(hit, "not removed yet: an `\"xla\"` device or backend string is still in the module, "
                          "and this import may be what registers it")
            return None
        kind = "Import" if isinstance(stmt, ast.Import) else "ImportFrom"
        names = [a.name for a in aliases] if isinstance(stmt, ast.Import) else []
        return ctx.propose(hit, stmt, kind, "Remove the unused PyTorch/XLA import", {"names": names})

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        if isinstance(updated, cst.ImportFrom):
            return cst.RemovalSentinel.REMOVE
        drop = set(data.get("names") or ())

        def dotted(n):
            return n.value if isinstance(n, cst.Name) else f"{dotted(n.value)}.{n.attr.value}"

        keep = [a for a in updated.names if dotted(a.name) not in drop]
        if not keep:
            return cst.RemovalSentinel.REMOVE
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(names=keep)


FIXER = XlaImport()
