"""``x.cuda()`` / ``model.cuda(i)`` / ``x.cuda(non_blocking=True)`` -> ``x.to(<current device>)``.

A storage's ``to`` takes the device by keyword only (``UntypedStorage.to(*, device, non_blocking)``
in torch 2.13), so a storage -- the first parameter of a ``map_location=lambda storage, loc: ...``,
or ``t.untyped_storage()`` -- gets ``.to(device=...)`` (fairscale's tests: ``storage.to("cuda:0")``
raised ``TypeError`` on CUDA).
"""

from __future__ import annotations

import ast

from ..device_holders import held_device_note
from ..project_scan import project_memo
from ..name_words import name_words

_INDEX_WORDS = ("rank", "idx", "index", "gpu", "_id", "ordinal")


def looks_like_index(node) -> bool:
    """An expression that is evidently a device index (``local_rank``, ``args.gpu``), not a device object."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, (ast.Name, ast.Attribute)):
        last = (node.id if isinstance(node, ast.Name) else node.attr).lower()
        return last != "device" and (last == "i" or any(w in last for w in _INDEX_WORDS))
    return False


def set_negative(ctx, arg: ast.AST) -> ast.stmt | None:
    """The assignment of a negative number to ``arg`` (a name or a dotted attribute) anywhere in the
    module: SimCLR's ``args.gpu_index = -1`` for "no GPU", which ``torch.cuda.device`` accepts."""
    if not isinstance(arg, (ast.Name, ast.Attribute)):
        return None
    text = ast.unparse(arg)
    for n in ctx.walk(ctx.tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.UnaryOp) and isinstance(n.value.op, ast.USub) \
                and isinstance(n.value.operand, ast.Constant) and any(ast.unparse(t) == text for t in n.targets):
            return n
    return None


_STORAGE_METHODS = frozenset({"storage", "untyped_storage", "_typed_storage"})


def _is_storage(ctx, receiver) -> bool:
    """Is ``receiver`` a storage: ``t.untyped_storage()``, or the first parameter of a function
    given as ``map_location`` (``torch.load`` calls it with each storage): by keyword, as
    ``torch.load``'s second argument, or kept in a name that says so first (sdfstudio's
    ``map_location = (lambda storage, loc: storage.cuda()) if ... else torch.device("cpu")``)?"""
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        return receiver.func.attr in _STORAGE_METHODS
    if not isinstance(receiver, ast.Name):
        return False
    fn = ctx.enclosing_function(receiver)
    if not isinstance(fn, ast.Lambda) or not fn.args.args or fn.args.args[0].arg != receiver.id:
        return False
    child, holder = fn, ctx.parent(fn)
    while isinstance(holder, (ast.IfExp, ast.BoolOp)):
        child, holder = holder, ctx.parent(holder)
    if isinstance(holder, ast.keyword):
        return holder.arg == "map_location"
    if isinstance(holder, ast.Call):
        return ctx.qualname(holder.func) == "torch.load" and holder.args[1:2] == [child]
    if isinstance(holder, (ast.Assign, ast.AnnAssign)):
        targets = holder.targets if isinstance(holder, ast.Assign) else [holder.target]
        return any("location" in (t.id if isinstance(t, ast.Name) else getattr(t, "attr", "")).lower()
                   for t in targets)
    return False


#: Calls that give the current device's index: ``.cuda(torch.cuda.current_device())`` is ``.cuda()``.
_CURRENT_INDEX = frozenset({"torch.cuda.current_device", "torch.accelerator.current_device_index"})


def _is_current_index(ctx, node) -> bool:
    return (isinstance(node, ast.Call) and not node.args and not node.keywords
            and ctx.qualname(node.func) in _CURRENT_INDEX)


def _holds_index(ctx, node) -> bool:
    """A local name whose every binding in its function is an index: pycls's ``cur_device =
    torch.cuda.current_device()`` before ``model.cuda(device=cur_device)``, or an integer."""
    from ..local_device import bindings

    fn = ctx.enclosing_function(node) if isinstance(node, ast.Name) else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    found = list(bindings(fn, node.id))
    return bool(found) and all(b is not None and (_is_current_index(ctx, b.value) or looks_like_index(b.value))
                               for b in found)


def _device_value(ctx, value) -> bool:
    """Is ``value`` a device object: ``torch.device(...)`` or another tensor's or module's ``.device``?"""
    return (isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.device") or (
        isinstance(value, ast.Attribute) and value.attr == "device")


def _holds_device(ctx, node) -> bool:
    """A name bound to a device object in its function (or, outside one, at the module's top level),
    whatever it is called: vicreg's ``gpu = torch.device(args.device)`` before ``model.cuda(gpu)``,
    which ``torch.device(type, gpu)`` would reject (an index must be an int)."""
    from ..local_device import bindings

    if not isinstance(node, ast.Name):
        return False
    fn = ctx.enclosing_function(node)
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        found = list(bindings(fn, node.id))
    elif fn is None:
        found = [s for s in ctx.tree.body if isinstance(s, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == node.id for t in s.targets)]
    else:
        return False
    return bool(found) and all(b is not None and _device_value(ctx, b.value) for b in found)


def _plain_chain(node) -> bool:
    """A name or a chain of attributes on one (``x``, ``self.feat``): reading it has no side effect."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _get_device_owner(ctx, index) -> ast.expr | None:
    """The tensor whose ``get_device()`` the index is: vid2vid's ``.cuda(image.get_device())``, or
    ``gpu_id = img_feat.get_device()`` before ``img_prev.cuda(gpu_id)``: moving to that tensor's
    ``.device`` is the same move on CUDA (for a CPU tensor, ``get_device()`` is -1, which ``.cuda()``
    rejects: only that raise goes), and also right on Trainium and on the CPU. None when it is not,
    when the tensor's name may be bound again between the two, or when the name is used only by such
    moves (rewritten, it would be left unused: ruff's F841)."""
    from ..local_device import bindings

    def owner(value) -> ast.expr | None:
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get_device"
                and not value.args and not value.keywords and _plain_chain(value.func.value)):
            return value.func.value
        return None

    if owner(index) is not None:
        return owner(index)
    fn = ctx.enclosing_function(index) if isinstance(index, ast.Name) else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    found = list(bindings(fn, index.id))
    if len(found) != 1 or found[0] is None or owner(found[0].value) is None:
        return None
    tensor = owner(found[0].value)
    nodes = ctx.walk(fn)
    moves = {id(a) for c in nodes if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
             and c.func.attr == "cuda" for a in [*c.args[:1], *(k.value for k in c.keywords if k.arg == "device")]}
    if not any(isinstance(n, ast.Name) and n.id == index.id and isinstance(n.ctx, ast.Load) and id(n) not in moves
               for n in nodes):
        return None
    root = tensor
    while isinstance(root, ast.Attribute):
        root = root.value
    names = {ast.unparse(tensor), root.id}
    for n in nodes:  # the tensor (or its name) set again after `get_device()` was asked
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        if targets and n.lineno > found[0].lineno and any(
                ast.unparse(part) in names for target in targets for part in ast.walk(target)
                if isinstance(part, (ast.Name, ast.Attribute))):
            return None
    return tensor


def _own_mover(ctx, call) -> str:
    """``self.cuda()`` in a class that defines its own ``cuda`` or ``to``: the method ``.to(...)``
    would reach, or ``""``. flux's TensorRT ``Engine.to`` calls ``self.cuda()``, its own engine
    loader: written ``self.to(...)``, it calls itself until ``RecursionError``."""
    receiver = call.func.value
    if not (isinstance(receiver, ast.Name) and receiver.id == "self"):
        return ""
    cls = next((p for p in ctx.ancestors(call) if isinstance(p, ast.ClassDef)), None)
    if cls is None:
        return ""
    own = {s.name for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))} & {"cuda", "to"}
    return f"{cls.name}.{sorted(own)[-1]}" if own else ""


@project_memo(16)
def _classes_with_own_cuda(root: str) -> frozenset[str]:
    """The project's classes that define their own ``cuda(self, ...)`` doing more than
    ``return self.to(...)`` (InstantID's pipelines: ``cuda(self, dtype=torch.float16,
    use_xformers=False)`` casts and moves its image projection model; pytorch3d's ``Meshes.cuda``
    is ``return self.to("cuda")``, which ``.to(device)`` does as well), read once per project."""
    from ..project_scan import python_files

    found = set()
    for _, data in python_files(root):
        if b"def cuda(self" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef) and any(isinstance(f, ast.FunctionDef) and f.name == "cuda"
                                                     and not _only_moves(f) for f in cls.body):
                found.add(cls.name)
    return frozenset(found)


def _only_moves(method: ast.FunctionDef) -> bool:
    """Is the method's body (its docstring aside) ``return self.to(...)``?"""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    value = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to"
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "self")


def _written(node) -> str:
    """``pipe`` or ``self.pipe``, whether read or assigned; ``""`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _built_by_own_cuda_class(ctx, receiver) -> str:
    """The project class with its own ``cuda()`` that made ``receiver`` in one of its assignments in
    its function or module (``self.pipe``'s in its class): ``pipe = Pipeline.from_pretrained(...)``
    then ``pipe.cuda()``; DrQA's ``self.reader = reader.DocReader.load(...)`` or ``model, epoch =
    DocReader.load_checkpoint(...)`` (``DocReader`` is no ``nn.Module``: it has ``cuda()``, not
    ``to()``), or ``""``. Made elsewhere (a parameter, a copy), a receiver named the way such a class's
    name ends is taken for one: the name with ``?`` after it."""
    from ..cuda_only import dotted
    from ..project_scan import project_root

    if isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Constant) \
            and isinstance(receiver.slice.value, str) and ctx.path:
        # an item of a batch (SparseConvNet's `batch['input'].cuda()`, an `InputLayerInput`, set 77):
        # made elsewhere, so only its key can say what it is
        return _named_like_own_class(ctx, receiver.slice.value)
    if isinstance(receiver, ast.Name):
        scope = ctx.enclosing_function(receiver) or ctx.tree
    elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
        scope = next((p for p in ctx.ancestors(receiver) if isinstance(p, ast.ClassDef)), None)
    else:
        return ""
    if scope is None or not ctx.path:
        return ""
    wanted = _written(receiver)
    made = [s.value for s in ctx.walk(scope) if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
            and any(_written(e) == wanted for t in s.targets
                    for e in (t.elts if isinstance(t, ast.Tuple) else [t]))]
    names = {n for call in made for n in dotted(call.func)}
    root = project_root(ctx.path)
    own = _classes_with_own_cuda(root) if root else frozenset()
    found = next((n for n in sorted(names) if n in own), "")
    if found or any(dotted(c.func)[-1:] not in (["copy"], ["deepcopy"]) for c in made):
        return found  # built by something else (a class without its own `cuda()`, `torch.from_numpy`)
    # made elsewhere (a parameter, a copy): a name that ends the way such a class's name ends
    # (XLM's `self.embedder = copy.deepcopy(self._embedder)`, a `SentenceEmbedder`, set 68)
    return _named_like_own_class(ctx, wanted.rpartition(".")[2], own)


def _named_like_own_class(ctx, name: str, own: frozenset[str] | None = None) -> str:
    """``"SentenceEmbedder?"`` when ``name`` ends the way the name of one of the project's classes
    with its own ``cuda()`` ends (``embedder``), else ``""``."""
    from ..project_scan import project_root

    if own is None:
        root = project_root(ctx.path)
        own = _classes_with_own_cuda(root) if root else frozenset()
    words = name_words(name)
    named = next((n for n in sorted(own) if words and name_words(n)[-len(words):] == words), "")
    return f"{named}?" if named else ""


def _into_cuda_only_call(ctx, call) -> str:
    """What makes the call that takes ``call``'s value as an argument CUDA-only code (PVT's
    ``apex.amp.initialize(model.cuda(), ...)``, a compiled extension's ``forward(x.cuda())``), or ``""``."""
    from ..cuda_only import cuda_only_call

    parent = ctx.parent(call)
    if isinstance(parent, ast.keyword):
        parent = ctx.parent(parent)
    if not isinstance(parent, ast.Call) or parent.func is call:
        return ""
    return cuda_only_call(ctx, parent)


def _entered_cuda_device(ctx, call) -> ast.expr | None:
    """``torch.cuda.device(i)`` of a ``with`` whose body holds ``call`` (PatchTST's FLOPs helper: ``with
    torch.cuda.device(0): model.cuda()``): it raises where CUDA is absent, so the move is rewritten
    only with it (else it would change nothing); None when there is none."""
    for p in ctx.ancestors(call):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        if isinstance(p, ast.With):
            for item in p.items:
                expr = item.context_expr
                if isinstance(expr, ast.Call) and ctx.qualname(expr.func) == "torch.cuda.device" and not (
                        expr.args and isinstance(expr.args[0], ast.Constant) and expr.args[0].value in (None, -1)):
                    return expr  # (`torch.cuda.device(None)` and `(-1)` enter nothing: they raise nowhere)
    return None


class CudaCall:
    name = "cuda_call"

    def plan(self, ctx, hit):
        call = hit.call
        if call is None or not isinstance(call.func, ast.Attribute):
            return None
        own = _own_mover(ctx, call)
        if own:
            ctx.note(hit, f"not rewritten: the class defines its own `{own.rsplit('.', 1)[1]}()` (`{own}`), "
                          "so `self.cuda()` and `self.to(...)` are the project's methods, not `nn.Module`'s; "
                          "rewritten, they could call each other without end")
            return None
        made = _built_by_own_cuda_class(ctx, call.func.value)
        if made:
            what = f"may be a `{made[:-1]}` (so it is named)" if made.endswith("?") else f"is a `{made}`"
            ctx.note(hit, f"not rewritten: the object {what}, a class of the project with its own `cuda()` "
                          "(which may cast, move other parts, or turn on CUDA-only features); `.to(...)` would "
                          "skip all that. Give the class a device-agnostic method and call it")
            return None
        into = _into_cuda_only_call(ctx, call)
        if into:
            ctx.note(hit, f"not rewritten: the moved value goes straight into {into}, which takes CUDA tensors "
                          "only; on Trainium it would get the Neuron device's. Port that call first")
            return None
        args, kws = call.args, call.keywords
        if len(args) > 2 or any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws):
            return None
        index = args[0] if args else None
        for k in kws:
            if k.arg == "device":
                if args:
                    return None
                index = k.value
            elif k.arg not in ("non_blocking", "memory_format"):
                return None
        tensor = _get_device_owner(ctx, index) if index is not None else None
        if tensor is not None:
            return ctx.propose(hit, call, "Call", "Move to that tensor's device with `.to(....device)`",
                               {"owner": ast.unparse(tensor)})
        if _holds_device(ctx, index):  # `.cuda(device)` with a device object: `.to(device)`, as it is
            return ctx.propose(hit, call, "Call", "Move to that device with `.to(...)`", {"as_is": True})
        held = index is not None and held_device_note(ctx, index, "torch.device(type, index)")
        if held:  # Amphion's `args.local_rank = torch.device("cuda")` (read set 106)
            ctx.note(hit, held)
            return None
        current = _is_current_index(ctx, index)
        if index is not None and not current and not (isinstance(index, ast.Constant) and index.value is None) \
                and not looks_like_index(index) and not _holds_index(ctx, index):
            ctx.note(hit, "not rewritten: the argument may be a device object rather than an index; write `.to(device)` by hand")
            return None
        data = ctx.device_or_note(hit, call)
        if data is None:
            return None
        if _is_storage(ctx, call.func.value):
            data = {**data, "storage": True}
        if current:
            data = {**data, "current": True}
        entered = _entered_cuda_device(ctx, call)
        if entered is not None:  # kept only with it (guard_settle.settle)
            data = {**data, "region": [[*ctx.span(entered), ctx.segment(entered)[:60]]]}
        return ctx.propose(hit, call, "Call", "Move to the current accelerator with `.to(...)`", data)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..nodes import (
            COMMA,
            device_string_with_index,
            is_none,
            quote_of,
            renamed_method,
            with_keyword,
        )

        args = list(updated.args)
        index_at = next((i for i, a in enumerate(args) if a.keyword is None or a.keyword.value == "device"), None)
        if index_at is not None and args[index_at].keyword is not None and args[index_at].keyword.value != "device":
            index_at = None
        if index_at is not None and data.get("current"):  # `.cuda(torch.cuda.current_device())` is `.cuda()`
            del args[index_at]
            index_at = None
        if data.get("owner"):  # `.cuda(x.get_device())` -> `.to(x.device)`
            target = rx.expression("{owner}.device", owner=rx.expression(data["owner"]))
        elif data.get("as_is"):
            target = args[index_at].value
        elif index_at is None or is_none(args[index_at].value):
            target = rx.device(original, data)
        elif isinstance(args[index_at].value, cst.Integer):  # `.cuda(1)` -> `.to(f"{DEVICE.type}:1")`
            value = args[index_at].value
            target = device_string_with_index(rx.device_type(original, data), value.value, quote_of(value))
        else:  # `torch.device(type, index)` takes None as `.cuda(index)` does (moco's `args.gpu`)
            target = cst.Call(func=rx.dotted("torch.device", original),
                              args=[cst.Arg(rx.device_type(original, data), comma=COMMA),
                                    cst.Arg(args[index_at].value)])
        if index_at is None:
            args.insert(0, cst.Arg(value=target))
        else:
            args[index_at] = args[index_at].with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT, value=target)
        if data.get("storage"):
            at = 0 if index_at is None else index_at
            args[at] = with_keyword(args[at], "device")
        # `.cuda(i, True)`: the second positional argument is non_blocking, which `.to` takes by keyword.
        if len(args) > 1 and args[1].keyword is None:
            args[1] = with_keyword(args[1], "non_blocking")
        return renamed_method(updated, "to").with_changes(args=args)


FIXER = CudaCall()
