"""NRN708: unwrap ``pl.MpDeviceLoader`` and move each batch with ``.to(device)``.

``loader = pl.MpDeviceLoader(train_loader, device)`` -> ``loader = train_loader``, and each
``for x, y in loader:`` / ``for i, (x, y) in enumerate(loader):`` of the same function gets
``x, y = x.to(device), y.to(device)`` as its first statement (``device`` is the loader's own device
argument). ``for x, y in pl.MpDeviceLoader(loader, device):`` is handled the same way. The plan
requires that the wrapped loader's name is bound once and read only by such loops (or ``len()``),
so no batch escapes without its move. The fix targets the enclosing function (or module) so that
both edits are one rewrite.
"""

from __future__ import annotations

import ast

from ..xla_common import drop_import, import_of


def _loop_names(target) -> list[str] | None:
    """``x, y`` of ``for x, y in ...`` / ``for i, (x, y) in enumerate(...)``: the batch element names."""
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts) and len(target.elts) >= 1:
        return [e.id for e in target.elts]
    return None


def _iterates(ctx, loop: ast.For, name: str | None, call: ast.AST | None):
    """(element names, enumerated) when ``loop`` iterates the loader, else None."""
    it = loop.iter
    enumerated = False
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args:
        it, enumerated = it.args[0], True
    hit = (call is not None and it is call) or (name is not None and isinstance(it, ast.Name) and it.id == name)
    if not hit:
        return None
    target = loop.target
    if enumerated:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return False
        target = target.elts[1]
    return _loop_names(target) or False


class XlaLoader:
    name = "xla_loader"

    def plan(self, ctx, hit):
        if not hit.subject.endswith(".MpDeviceLoader"):
            ctx.note(hit, "not rewritten: iterate the DataLoader and move batches with `.to(device)` by hand")
            return None
        call = ctx.enclosing_call(hit.node)
        if call is None or len(call.args) != 2 or any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            ctx.note(hit, "not rewritten: only `MpDeviceLoader(loader, device, ...)`")
            return None
        scope = ctx.enclosing_function(call) or ctx.tree
        parent = ctx.parent(call)
        name = None
        loops: list[ast.For] = []
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            name = parent.targets[0].id
            if ctx.bound.get(name, 0) != 1:
                ctx.note(hit, f"not rewritten: `{name}` is bound more than once in the module")
                return None
        elif not isinstance(parent, ast.For) or parent.iter is not call:
            ctx.note(hit, "not rewritten: the loader is neither assigned to a name nor iterated directly")
            return None
        for node in ctx.walk(scope):
            if isinstance(node, ast.For):
                found = _iterates(ctx, node, name, call)
                if found is False:
                    ctx.note(hit, "not rewritten: a loop takes whole batches (a dict or a tensor?); move them with "
                                  "`.to(device)` by hand")
                    return None
                if found:
                    loops.append(node)
        if not loops:
            ctx.note(hit, "not rewritten: no loop over the loader in the same function")
            return None
        if name is not None:
            allowed = {id(l.iter) for l in loops} | {id(l.iter.args[0]) for l in loops if isinstance(l.iter, ast.Call)}
            for node in ctx.walk(scope):
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and id(node) not in allowed:
                    p = ctx.parent(node)
                    if not (isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "len"):
                        ctx.note(hit, f"not rewritten: `{name}` is used outside the loops over it")
                        return None
        sampler = any(isinstance(n, (ast.Name, ast.Attribute)) and (getattr(n, "id", None) or getattr(n, "attr", None)) == "DistributedSampler"
                      for n in ctx.walk(ctx.tree))
        applicability = None if sampler else "unsafe"
        if not sampler:
            ctx.note(hit, "no DistributedSampler in the module: each rank iterates the whole dataset (MpDeviceLoader "
                          "did not shard either); add `DistributedSampler(dataset)` to the DataLoader")
        kind = "Module" if scope is ctx.tree else type(scope).__name__
        node = scope if scope is not ctx.tree else call
        data = {"name": name, "func": ast.unparse(call.func), "loader": ast.unparse(call.args[0]),
                "lines": [l.lineno for l in loops], "imp": import_of(ctx, call.func)}
        if kind == "Module":
            ctx.note(hit, "not rewritten: the loader is built at module level")
            return None
        return ctx.propose(hit, node, kind, "Iterate the DataLoader itself and move each batch with `.to(device)`",
                           data, applicability)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import attribute

        func_code, name = data["func"], data.get("name")
        module = rx.module.tree
        found = {"device": None}

        def code(node):
            return module.code_for_node(node)

        class Unwrap(cst.CSTTransformer):
            def leave_Call(self, o, u):
                if code(u.func) == func_code and len(u.args) >= 2 and found["device"] is None:
                    found["device"] = u.args[1].value
                    return u.args[0].value
                return u

        class Move(cst.CSTTransformer):
            def leave_For(self, o, u):
                it = u.iter
                if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate" and it.args:
                    inner = it.args[0].value
                    target = u.target.elements[1].value if isinstance(u.target, cst.Tuple) and len(u.target.elements) == 2 else None
                else:
                    inner, target = it, u.target
                loader_code = data["loader"]
                if not ((name is not None and isinstance(inner, cst.Name) and inner.value == name)
                        or (name is None and code(inner) == loader_code and getattr(self, "direct", False))):
                    return u
                if not isinstance(target, cst.Tuple):
                    return u
                names = [e.value for e in target.elements]
                dev = found["device"]
                lhs = cst.Tuple([cst.Element(cst.Name(n.value)) for n in names], lpar=[], rpar=[])
                rhs = cst.Tuple([cst.Element(cst.Call(func=attribute(n.value, "to"), args=[cst.Arg(dev)])) for n in names], lpar=[], rpar=[])
                if len(names) == 1:
                    lhs, rhs = cst.Name(names[0].value), rhs.elements[0].value
                assign = cst.SimpleStatementLine([cst.Assign(targets=[cst.AssignTarget(lhs)], value=rhs)])
                body = u.body
                return u.with_changes(body=body.with_changes(body=[assign, *body.body]))

        new = updated.visit(Unwrap())
        if found["device"] is None:
            from ..decline import Decline

            raise Decline("the MpDeviceLoader call was not found")
        mover = Move()
        mover.direct = name is None
        new = new.visit(mover)
        drop_import(rx, data)
        return new


FIXER = XlaLoader()
