"""``torch.cuda.manual_seed(_all)(s)`` where ``torch.manual_seed(s)`` already seeds every device: the
duplicate is removed, not rewritten (``torch.manual_seed`` seeds CUDA's generators and Trainium's)."""

from __future__ import annotations

import ast

from .keyword_args import module_comments

SEEDS = ("torch.cuda.manual_seed", "torch.cuda.manual_seed_all")
_TORCH_SEEDS = ("torch.manual_seed", "torch.random.manual_seed")


def duplicate_seed(ctx, call: ast.Call) -> ast.stmt | None:
    """The statement to remove when ``torch.cuda.manual_seed(_all)(s)`` sits next to
    ``torch.manual_seed(s)`` (within three statements, or earlier in the function) with no random
    number drawn between: the call's own, or, when it is all an ``if torch.cuda.is_available():``
    does (fairseq's ``set_torch_seed``), that ``if``. (CUDA numbers drawn between would come
    out otherwise once the second seeding is gone.)"""
    stmt = ctx.parent(call)
    if not (isinstance(stmt, ast.Expr) and stmt.value is call and len(call.args) == 1 and not call.keywords):
        return None
    guard = _seed_guard(ctx, stmt)
    if guard is not None:
        stmt = guard
    block = next((b for b in (getattr(ctx.parent(stmt), f, None) for f in ("body", "orelse", "finalbody"))
                  if isinstance(b, list) and any(s is stmt for s in b)), None)
    if block is None or len(block) < 2:
        return None
    i = next(j for j, s in enumerate(block) if s is stmt)
    seed = _seed_key(call.args[0])
    for j in range(max(0, i - 3), min(len(block), i + 4)):
        if j != i and _seeds_torch(ctx, block[j], seed) and all(
                _quiet(s, seed) for s in block[min(i, j) + 1:max(i, j)]):
            return stmt
    return stmt if _seeded_earlier(ctx, stmt, seed) else None


def _seeds_torch(ctx, stmt: ast.stmt, seed: str) -> bool:
    """Is ``stmt`` ``torch.manual_seed(<seed>)``, alone or kept (``g = torch.manual_seed(seed)``)?"""
    v = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    return (isinstance(v, ast.Call) and ctx.qualname(v.func) in _TORCH_SEEDS and len(v.args) == 1
            and not v.keywords and _seed_key(v.args[0]) == seed)


def _seed_key(node: ast.expr) -> str:
    """The seed ``node`` gives, for comparing two seedings: ``str(seed)`` and ``int(seed)`` give
    ``seed``'s (``manual_seed`` takes the number either way: detectron2's ``seed_all_rng`` seeds with
    ``torch.manual_seed(seed)``, then ``torch.cuda.manual_seed_all(str(seed))``)."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "str")
            and len(node.args) == 1 and not node.keywords):
        node = node.args[0]
    return ast.dump(node)


def _seeded_earlier(ctx, stmt: ast.stmt, seed: str) -> bool:
    """Does the same function seed with ``torch.manual_seed(<seed>)`` before ``stmt`` (in its block or
    a block around it, through ``if``s but no loop), with only quiet code between: other libraries'
    seeds, flags and environment variables, which draw no random number on a device? (ActionFormer's
    ``fix_random_seed``: ``rng = torch.manual_seed(seed)`` first, then ``if include_cuda:`` flags
    and the CUDA seeds, InternVideo, read set 109.)"""
    while True:
        holder = ctx.parent(stmt)
        block = next((b for b in (getattr(holder, f, None) for f in ("body", "orelse"))
                      if isinstance(b, list) and any(s is stmt for s in b)), None)
        if block is None:
            return False
        for other in reversed(block[:next(j for j, s in enumerate(block) if s is stmt)]):
            if _seeds_torch(ctx, other, seed):
                return True
            if not _quiet(other, seed):
                return False
        if not (isinstance(holder, ast.If) and _quiet(holder.test, seed)):
            return False  # a function's top, a loop, a `with` or `try`: looked no further
        stmt = holder


#: Calls that draw no random number on a device and leave the seed as it is.
_QUIET_CALLS = frozenset({"seed", "manual_seed", "str", "int", "print", "info", "debug"})


def _quiet(node: ast.AST, seed: str) -> bool:
    """Code between two seedings that neither draws on a device's generator nor changes the seed."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) not in _QUIET_CALLS:
                return False
            if _torch_root(func) and not (func.attr in ("manual_seed", "manual_seed_all") and len(n.args) == 1
                                          and _seed_key(n.args[0]) == seed):
                return False  # torch's own `seed()`, or a seeding with another seed, changes the generators
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(ast.dump(t) == seed.replace("Load()", "Store()") for t in targets):
                return False
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.While, ast.With)):
            return False
    return True


def _torch_root(func: ast.expr) -> bool:
    """Is ``func`` written as an attribute of ``torch`` (``torch.cuda.seed``, ``torch.manual_seed``)?"""
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id == "torch"


def _seed_guard(ctx, stmt: ast.stmt) -> ast.If | None:
    """``if torch.cuda.is_available(): <stmt>`` with nothing else in it (no ``else``, no comment
    that removing it would lose), or None."""
    guard = ctx.parent(stmt)
    if not (isinstance(guard, ast.If) and any(s is stmt for s in guard.body) and not guard.orelse
            and _seeds_only(ctx, guard.body)):
        return None
    test = guard.test
    if not (isinstance(test, ast.Call) and not test.args and not test.keywords
            and ctx.qualname(test.func) == "torch.cuda.is_available"):
        return None
    lines = range(guard.lineno, (guard.end_lineno or guard.lineno) + 1)
    if any(line in lines or line == guard.lineno - 1 for line, _, _ in module_comments(ctx)):
        return None
    return guard


def seed_guard_of(ctx, call: ast.Call) -> ast.If | None:
    """The ``if`` that ``call`` (``torch.cuda.is_available()``) tests, when the duplicate seed it
    guards goes with it."""
    guard = ctx.parent(call)
    if not (isinstance(guard, ast.If) and guard.test is call and _seeds_only(ctx, guard.body)):
        return None
    return guard if duplicate_seed(ctx, guard.body[0].value) is guard else None


def _seeds_only(ctx, body: list[ast.stmt]) -> bool:
    """Is ``body`` one or two ``torch.cuda.manual_seed(_all)(s)`` calls, all with the same seed
    (stanza's ``set_random_seed`` calls both)?"""
    calls = [s.value for s in body if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)]
    return (0 < len(body) <= 2 and len(calls) == len(body)
            and all(ctx.qualname(c.func) in SEEDS and len(c.args) == 1 and not c.keywords for c in calls)
            and len({ast.dump(c.args[0]) for c in calls}) == 1)
