"""What a module uses that TorchNeuron's beta cannot hold on the device, so that its device test
keeps sending Trainium to the CPU.

The launch lists ``torch.sparse`` and ``torch.nested`` as unsupported in the beta, sparse embeddings
raise ``NotImplementedError`` in the pre-release, and ``torch.compile(dynamic=True)`` is rejected
when it compiles (torchneuron-facts.md §0, §2, §4). Those are layouts and modes, not operators: the
CPU fallback that keeps an unsupported operator running may not cover them (inferred: the facts
say nothing either way). A module using one
behind ``"cuda" if torch.cuda.is_available() else "cpu"`` runs on the CPU on Trainium today, and
works there; the device-agnostic test would send that code to the Neuron device (PyG's sparse
examples, set 58). ``torch.distributions``, ``torch.func`` and forward-mode autograd, also listed,
are operators the fallback may run (slowly), so they do not hold a device test back (reinforcement
learning code samples from distributions everywhere). NRN101, NRN103 and NRN401 report the uses.
"""

from __future__ import annotations

import ast

#: Qualified names (and their prefixes, up to a dot or underscore) of the unsupported APIs.
_UNSUPPORTED = ("torch.sparse", "torch.nested", "torch.optim.SparseAdam",
                # PyG's sparse adjacency (torch_sparse's SparseTensor, or torch.sparse layouts)
                "torch_geometric.transforms.ToSparseTensor", "torch_geometric.typing.SparseTensor",
                "torch_sparse")
_SPARSE_METHODS = frozenset({"to_sparse", "to_sparse_csr", "to_sparse_coo", "to_sparse_csc", "to_sparse_bsr"})
_WORDS = ("sparse", "nested", "dynamic")


def unsupported_note(ctx) -> str:
    """The note for a device test in a module that uses what the beta may not run, or ``""``."""
    found = ctx.__dict__.get("_nrn_unsupported")
    if found is None:
        found = ctx.__dict__["_nrn_unsupported"] = _first_use(ctx) if any(w in ctx.text for w in _WORDS) else ""
    if not found:
        return ""
    return (f"not rewritten: the module uses {found}, which TorchNeuron's beta may not run (the launch lists "
            "sparse and nested tensors and dynamic shapes as unsupported); this test sends Trainium down the CPU "
            "path, where it runs. Rewritten, that code would go to the Neuron device. Port it first (see the "
            "NRN101, NRN103 and NRN401 findings)")


def chooses_device(ctx, node: ast.AST) -> bool:
    """Is ``node`` (or the test it is in) a choice of the device: ``"cuda" if <test> else "cpu"``,
    or an ``if <test>:`` that assigns a device? A test that only guards ``synchronize()`` or a
    memory statistic moves nothing: where the module's tensors go is decided elsewhere."""
    inner = [n for n in ast.walk(node) if isinstance(n, ast.IfExp)] if isinstance(node, ast.expr) else []
    for p in (*inner, node, *ctx.ancestors(node)):
        if isinstance(p, ast.IfExp):
            return any(_names_device(ctx, v) for v in (p.body, p.orelse))
        if isinstance(p, ast.If):
            return any(isinstance(s, ast.Assign) and (_names_device(ctx, s.value) or any(
                "device" in ctx.segment(t).lower() for t in s.targets)) for s in p.body)
        if isinstance(p, ast.stmt):
            return False
    return False


def _names_device(ctx, value: ast.AST) -> bool:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value.split(":")[0] in ("cuda", "cpu")
    return isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.device"


def _first_use(ctx) -> str:
    for n in ctx.walk(ctx.tree):
        if isinstance(n, (ast.Attribute, ast.Name)) and not isinstance(ctx.parent(n), ast.Attribute):
            q = ctx.qualname(n) or ""
            if any(q == u or q.startswith((u + ".", u + "_")) for u in _UNSUPPORTED):
                return f"`{q}` (line {n.lineno})"
        elif isinstance(n, ast.Call):
            if isinstance(n.func, ast.Attribute) and n.func.attr in _SPARSE_METHODS:
                return f"`.{n.func.attr}()` (line {n.lineno})"
            flag = next((k.arg for k in n.keywords if k.arg in ("sparse", "dynamic")
                         and isinstance(k.value, ast.Constant) and k.value.value is True), None)
            name = ctx.qualname(n.func) or ""
            if flag == "sparse" and name.split(".")[-1] in ("Embedding", "EmbeddingBag", "embedding", "embedding_bag"):
                return f"`{name.split('.')[-1]}(sparse=True)` (line {n.lineno})"
            if flag == "dynamic" and name == "torch.compile":
                return f"`torch.compile(dynamic=True)` (line {n.lineno})"
    return ""
