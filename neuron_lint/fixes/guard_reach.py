"""How far a device guard reaches beyond the branch it opens (used by :mod:`.guards`).

- the same test in another ``if`` of the function (or of another method of its class): the two
  are rewritten together or not at all;
- an ``assert``: everything after it in its function runs only when it holds;
- ``if device_type == "cuda": assert torch.cuda.is_available()``: the check of a requested CUDA
  device, right on every machine as it is;
- ``map_location = None if torch.cuda.is_available() else "cpu"``: ``None`` is where the tensors were
  saved, CUDA for a GPU checkpoint, so the CUDA test is the right one there;
- ``else: args.gpu_index = -1``: a value only the branch without CUDA sets, read later by a call
  (``torch.cuda.device(args.gpu_index)``, a no-op for -1): that call is decided by the guard too;
- another availability test of the same function (or module) that picks a CUDA tensor type for the
  data: that test stays, so this one must too, or the data and the models part ways;
- for a device string stored in a variable, not a guard itself: the tests of that variable against
  CUDA's name whose branch places things go with it (:func:`compared_as_cuda`);
- for a device string chosen by a flag set from an availability test (``"cuda" if use_cuda else
  "cpu"``), or set in the branch of one: that test goes with it (:func:`chosen_by_flag`); a device
  string cut by length (``self.device[:4]``) stays (:func:`sliced_note`);
- the same test in the conditional arguments of one call is one choice (:func:`same_tests`).
"""

from __future__ import annotations

import ast
import re

from .device_maps import indexed_cuda
from .load_locations import loads_with

_CUDA_TENSOR_TYPE = re.compile(r"torch\.cuda\.[A-Za-z]*Tensor")


def runs_after(ctx, stmt: ast.stmt) -> list:
    """What runs after ``stmt`` in its function (or module): an assert lets all of it run (ConvNeXt's
    ``assert has_apex and torch.cuda.is_available()`` stands before apex's fused optimizers)."""
    out: list = []
    while stmt is not None and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        block = ctx.block_of(stmt) or []
        i = next((j for j, s in enumerate(block) if s is stmt), len(block))
        out += block[i + 1:]
        stmt = ctx.statement_of(ctx.parent(stmt)) if ctx.parent(stmt) is not None else None
    return out


def checks_requested_cuda(ctx, check: ast.Assert) -> bool:
    """``if device_type == "cuda": assert torch.cuda.is_available(), ...`` (or ``"cuda" in device``,
    ``device.startswith("cuda")``): the assert is all the branch does, and the branch is taken only
    when the caller asked for CUDA by name."""
    branch = ctx.parent(check)
    if not (isinstance(branch, ast.If) and check in branch.body and not branch.orelse):
        return False
    if not all(isinstance(stmt, ast.Assert) for stmt in branch.body):
        return False
    test = branch.test
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith":
        return bool(test.args) and isinstance(test.args[0], ast.Constant) and test.args[0].value == "cuda"
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In):
        # OpenVoice: `if 'cuda' in device: assert torch.cuda.is_available()` (device='cuda:0')
        return isinstance(test.left, ast.Constant) and test.left.value == "cuda"
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and any(isinstance(side, ast.Constant) and side.value == "cuda"
                    for side in (test.left, *test.comparators)))


def same_tests(ctx, guard) -> list:
    """The same guard in the other ``if`` statements of its function (or module) whose test is
    the same as the one holding ``guard``: detr's ``MetricLogger`` builds a format string with a
    ``{memory}`` field under ``if torch.cuda.is_available():`` and fills it under a second such
    test, so the two are rewritten together or not at all (one alone raised ``KeyError`` on
    Trainium)."""
    node = guard
    for p in ctx.ancestors(guard):
        if isinstance(p, (ast.If, ast.IfExp)) and p.test is node:
            branch = p
            break
        if not isinstance(p, (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Attribute)):
            return []
        node = p
    else:
        return []
    if isinstance(branch, ast.IfExp):
        return _same_in_call(ctx, branch, guard)
    scope = _home(ctx, branch)
    test = ast.dump(branch.test)
    at = next(i for i, n in enumerate(ast.walk(branch.test)) if n is guard)
    peers = []
    for n in ctx.walk(scope):
        if isinstance(n, ast.If) and n is not branch and ast.dump(n.test) == test and _home(ctx, n) is scope:
            peers.append(list(ast.walk(n.test))[at])
        elif branch.test is guard and isinstance(n, (ast.keyword, ast.Call)):
            # the same test handed to a call as an argument (Amphion's speaker similarity: `if
            # torch.cuda.is_available(): device = ...`, then `embed(model, ..., gpu=torch.cuda.is_available())`,
            # which moves the inputs by it; read set 106): one choice, made twice
            same = [v for v in ([n.value] if isinstance(n, ast.keyword) else n.args)
                    if _like(v, guard) and ast.dump(v) == test]
            if same and _home(ctx, n) is scope:
                peers += same
    return peers


def _like(node: ast.AST, guard: ast.AST) -> bool:
    """Is ``node`` a call of the same attribute as ``guard`` (cheap, before comparing the two whole)?"""
    return (isinstance(node, ast.Call) and isinstance(guard, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(guard.func, ast.Attribute) and node.func.attr == guard.func.attr)


def _same_in_call(ctx, branch: ast.IfExp, guard) -> list:
    """The same guard in the other conditional arguments of the call ``branch`` is an argument of:
    GPT-SoVITS's ``Trainer(accelerator="gpu" if torch.cuda.is_available() else "cpu", devices=-1 if
    torch.cuda.is_available() else 1, strategy=...)`` is one choice, made three times."""
    call = ctx.parent(branch)
    call = ctx.parent(call) if isinstance(call, ast.keyword) else call
    if not isinstance(call, ast.Call):
        return []
    test = ast.dump(branch.test)
    at = next(i for i, n in enumerate(ast.walk(branch.test)) if n is guard)
    return [list(ast.walk(v.test))[at] for v in [*call.args, *(k.value for k in call.keywords)]
            if isinstance(v, ast.IfExp) and v is not branch and ast.dump(v.test) == test]


def _home(ctx, node):
    """Where the same test must agree: the class of a method (nanotron's timer starts under one
    test in ``start()`` and stops under it in ``end()``), else the function, else the module."""
    function = ctx.enclosing_function(node)
    if function is None:
        return ctx.tree
    for p in ctx.ancestors(function):
        if isinstance(p, ast.ClassDef):
            return p
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
    return function


def maps_to_where_saved(ctx, choice: ast.IfExp, negated: bool) -> bool:
    """``map_location = None if torch.cuda.is_available() else "cpu"`` (deep-person-reid's
    ``load_checkpoint``): the arm CUDA takes is ``None``, and the value is a ``map_location``, given
    directly or through a name. ``None`` loads tensors onto the device they were saved on: CUDA, for
    a checkpoint from a GPU, which on Trainium fails where the CPU arm loads."""
    arm = choice.orelse if negated else choice.body
    if not (isinstance(arm, ast.Constant) and arm.value is None):
        return False
    holder = ctx.parent(choice)
    if isinstance(holder, ast.keyword):
        return holder.arg == "map_location"
    if not (isinstance(holder, ast.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0], ast.Name)):
        return False
    return loads_with(ctx, holder, holder.targets[0].id)


def maps_to_where_saved_branch(ctx, if_: ast.If, negated: bool) -> bool:
    """The statement form (first-order-model's ``load_cpk``): ``if torch.cuda.is_available():
    map_location = None`` / ``else: map_location = 'cpu'``, then ``torch.load(path, map_location)``."""
    arm = if_.orelse if negated else if_.body
    if not (len(arm) == 1 and isinstance(arm[0], ast.Assign) and len(arm[0].targets) == 1
            and isinstance(arm[0].targets[0], ast.Name)
            and isinstance(arm[0].value, ast.Constant) and arm[0].value.value is None):
        return False
    return loads_with(ctx, if_, arm[0].targets[0].id)


def _targets(body) -> set[str]:
    """The names and dotted attributes the statements of ``body`` assign, as text."""
    out = set()
    for stmt in body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, (ast.AnnAssign, ast.AugAssign)) else []
        out.update(ast.unparse(t) for t in targets if isinstance(t, (ast.Name, ast.Attribute)))
    return out


def cpu_markers(ctx, branch: ast.If) -> list:
    """The calls that read, after ``branch``, a value only its CUDA-less arm sets (SimCLR's
    ``else: args.gpu_index = -1`` read by ``torch.cuda.device(args.gpu_index)``): on Trainium, once the
    test passes there, they get the value meant for CUDA."""
    markers = _targets(branch.orelse) - _targets(branch.body)
    if not markers:
        return []
    after = runs_after(ctx, branch)
    calls = []
    for top in after:
        for n in ctx.walk(top):
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) \
                    and ast.unparse(n) in markers and isinstance(ctx.parent(n), ast.Call) \
                    and n in ctx.parent(n).args:
                calls.append(ctx.parent(n))
    return calls



def typed_data_note(ctx, guard, region) -> str:
    """Why ``guard`` stays when another ``torch.cuda.is_available()`` of its function, class or
    module decides code (``region(ctx, test)``, :func:`.guards.region_nodes`) that names a CUDA
    tensor type, else ``""``. PyTorch-GAN's esrgan puts its
    models on ``torch.device("cuda" if torch.cuda.is_available() else "cpu")`` and makes its data
    with ``Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.Tensor``. The type
    has no device-agnostic spelling, so that test stays; with this one rewritten alone, Trainium
    would get the models on its device and the data on the CPU."""
    from .device_choice import is_availability

    home = _home(ctx, guard)
    walked = ctx.walk(home)
    typed = ctx.__dict__.setdefault("_nrn_typed_homes", {})  # asked for each guard of the same home
    if id(home) not in typed:
        typed[id(home)] = "Tensor" in ctx.text and any(
            isinstance(n, ast.Attribute) and _CUDA_TENSOR_TYPE.fullmatch(ctx.qualname(n) or "") for n in walked)
    if not typed[id(home)]:
        return ""
    for n in walked:
        if n is guard or not is_availability(ctx, n) or _home(ctx, n) is not home:
            continue
        nodes, _ = region(ctx, n)
        if any(isinstance(m, ast.Attribute) and _CUDA_TENSOR_TYPE.fullmatch(ctx.qualname(m) or "")
               for top in nodes or () if isinstance(top, ast.AST) for m in ctx.walk(top)):
            return (f"the same test on line {n.lineno} picks a CUDA tensor type for the data, which stays; "
                    "rewritten alone, this one would put what it decides on Trainium's device and leave the "
                    "data on the CPU. Port the two together")
    return ""


def kept_placement(ctx, guard, moves, cuda_only) -> str:
    """Why ``guard``, whose decided code moves tensors or modules, stays when another ``if`` of its
    module testing the same availability places something under it and stays for CUDA-only code it
    runs (``cuda_only(ctx, body, test)``, :func:`.guards.cuda_only_code`), else ``""``. DIS's IS-Net
    script loads and places its network under ``if torch.cuda.is_available(): net.load_state_dict(
    torch.load(path)); net.cuda()`` (a checkpoint loaded without ``map_location``, which stays) and
    moves its batches under the same test in ``train()``: rewritten alone, that one put the batches on
    Trainium's device beside a network left on the CPU (read set 104)."""
    from .device_choice import is_availability

    if not is_availability(ctx, guard):
        return ""
    kept = ctx.__dict__.setdefault("_nrn_kept_placements", {})  # per test, as it is written
    key = ast.dump(guard)
    if key not in kept:
        kept[key] = next(((n, what) for n in ctx.walk(ctx.tree) if isinstance(n, ast.If) and ast.dump(n.test) == key
                          and moves(ctx, n.body, n.test) for what in [cuda_only(ctx, n.body, n.test)] if what), None)
    if kept[key] is None or any(p is kept[key][0] for p in ctx.ancestors(guard)):  # that test itself
        return ""
    placed, what = kept[key]
    return (f"the same test on line {placed.lineno} stays (the code it decides calls {what}) and places what it "
            "decides there, which Trainium leaves on the CPU; rewritten alone, this one would move what goes "
            "with it to the accelerator. Port the two together")


def _holder(ctx, literal) -> tuple[str, ast.AST] | None:
    """The variable ``literal`` is stored in (through a conditional's arm, ``torch.device(...)``, an
    f-string or ``"cuda:" + str(i)``), as written, and where it is read: its function (a name), class (``self.x``) or module."""
    node, parent = literal, ctx.parent(literal)
    while isinstance(parent, ast.IfExp) and node is not parent.test or isinstance(parent, ast.JoinedStr) or (
            isinstance(parent, ast.Call) and node in parent.args and ctx.qualname(parent.func) == "torch.device") or (
            isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add) and parent.left is node):
        node, parent = parent, ctx.parent(parent)
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0], (ast.Name, ast.Attribute))):
        return None
    target = parent.targets[0]
    if isinstance(target, ast.Name):
        scope = ctx.enclosing_function(parent) or ctx.tree
    elif isinstance(target.value, ast.Name) and target.value.id == "self":
        scope = next((p for p in ctx.ancestors(parent) if isinstance(p, ast.ClassDef)), ctx.tree)
    else:
        scope = ctx.tree
    return ast.unparse(target), scope


def sliced_as_cuda(ctx, literal) -> ast.Subscript | None:
    """A slice of the variable ``literal`` is stored in (LivePortrait's ``torch.autocast(device_type=
    self.device[:4])`` of ``self.device = f"cuda:{self.device_id}"``): it reads the type off CUDA's
    name by its length, which `neuron:0` or `cpu:0` would not give back."""
    holder = _holder(ctx, literal)
    if holder is None:
        return None
    held, scope = holder
    return next((n for n in ctx.walk(scope) if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice)
                 and ast.unparse(n.value) == held), None)


def sliced_note(ctx, literal) -> str:
    """The note for :func:`sliced_as_cuda`, or ``""``."""
    cut = sliced_as_cuda(ctx, literal)
    return (f"the variable it is stored in is cut to `{ast.unparse(cut)}` (line {cut.lineno}), which reads "
            "CUDA's name by its length; with another device's name it would not give a device type. Take "
            "the type with `torch.device(...).type` first") if cut is not None else ""


def compared_as_cuda(ctx, literal) -> list:
    """The tests that compare the variable ``literal`` is stored in with CUDA's name (``X ==
    "cuda"``, ``X.type == "cuda"``, ``"cuda" in X``) to decide where things go: 3D-ResNets sets
    ``opt.device = torch.device('cpu' if opt.no_cuda else 'cuda')`` and, under ``opt.device.type ==
    'cuda'``, gives each process its GPU (``torch.device(f'cuda:{index}')``). With the current device in
    the variable, Trainium would fail that test and skip the placement, so the string goes only with
    it. A test whose branch only does CUDA's own things (petals: NF4 quantization, a default index)
    is right to send Trainium the other way and does not count. Looked for in the variable's
    function (a name), class (``self.x``) or module (another attribute)."""
    holder = _holder(ctx, literal)
    if holder is None:
        return []
    held, scope = holder
    names = (held, f"{held}.type", f"str({held})")
    found = []
    for n in ctx.walk(scope):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Eq, ast.NotEq, ast.In)):
            left, right = n.left, n.comparators[0]
            pairs = [(left, right)] if isinstance(n.ops[0], ast.In) else [(left, right), (right, left)]
            if any(_names_cuda(c) and ast.unparse(other) in names for c, other in pairs) and _places(ctx, n):
                found.append(n)
    return found


def _names_cuda(node) -> bool:
    """``"cuda"``, or a CUDA device written with its index (:func:`.device_maps.indexed_cuda`: the
    model-parallel blocks of Hugging Face's older models compare ``"cuda:" + str(k) !=
    self.last_device``, CodeGen's among them, read set 69)."""
    return (isinstance(node, ast.Constant) and node.value == "cuda") or indexed_cuda(node)


def _places(ctx, test) -> bool:
    """Does the ``if`` whose test holds ``test`` place things on CUDA in its body: a CUDA device
    string, a ``.cuda()`` call, ``device_ids``?"""
    branch = next((p for p in ctx.ancestors(test) if isinstance(p, ast.If)), None)
    if branch is None or not any(n is test for n in ast.walk(branch.test)):
        return False
    return any((isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda"))
               or (isinstance(n, ast.Attribute) and n.attr == "cuda" and isinstance(ctx.parent(n), ast.Call))
               or (isinstance(n, ast.keyword) and n.arg == "device_ids")
               for stmt in branch.body for n in ast.walk(stmt))


def chosen_by_flag(ctx, literal) -> list:
    """The availability tests a flag holds when ``literal`` is the arm it picks: wavenet_vocoder's
    ``use_cuda = torch.cuda.is_available()`` then ``torch.device("cuda" if use_cuda else "cpu")``.
    While the test stays CUDA's, the flag is false on Trainium and the string never used there:
    rewritten alone it would change nothing, so it goes only with the test."""
    from .device_choice import is_availability

    parent = ctx.parent(literal)
    if not (isinstance(parent, ast.IfExp) and parent.body is literal
            and isinstance(parent.test, (ast.Name, ast.Attribute))):
        return _in_available_branch(ctx, literal)
    flag = ast.unparse(parent.test)
    known = ctx.__dict__.setdefault("_nrn_flag_tests", {})  # once per flag and module
    if flag not in known:
        known[flag] = [n for a in ctx.walk(ctx.tree) if isinstance(a, ast.Assign)
                       and any(ast.unparse(t) == flag for t in a.targets)
                       for n in ast.walk(a.value) if isinstance(n, ast.Call) and is_availability(ctx, n)]
        known[flag] += _refused_with(ctx, flag)
    return known[flag]


def _refused_with(ctx, flag: str) -> list:
    """The availability tests of the module's ``if <flag> and not torch.cuda.is_available(): raise``
    (pytorch/examples' ``--cuda`` in ignite's copy): where such a test stays CUDA's, the program stops
    on Trainium before the flag picks anything."""
    from .device_choice import is_availability

    found = []
    for n in ctx.walk(ctx.tree):
        if (isinstance(n, ast.If) and isinstance(n.test, ast.BoolOp) and isinstance(n.test.op, ast.And)
                and any(ast.unparse(v) == flag for v in n.test.values) and _stops(n.body)):
            found += [v.operand for v in n.test.values if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not)
                      and is_availability(ctx, v.operand)]
    return found


def _stops(body) -> bool:
    """Does ``body`` end the program: a ``raise``, or ``exit()``/``sys.exit()``?"""
    last = body[-1]
    if isinstance(last, ast.Raise):
        return True
    call = last.value if isinstance(last, ast.Expr) else None
    return isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", "")) in ("exit", "_exit")


def _in_available_branch(ctx, literal) -> list:
    """The availability test of the ``if`` whose body holds ``literal`` (DeepCTR-Torch's tests:
    ``device = 'cpu'`` then ``if torch.cuda.is_available(): device = 'cuda:0'``): there, the current
    device is CUDA's wherever the test stays CUDA's, so the string goes only with the test."""
    from .device_choice import is_availability

    child = literal
    for p in ctx.ancestors(literal):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return []
        if isinstance(p, ast.If) and any(s is child for s in p.body):
            tests = p.test.values if isinstance(p.test, ast.BoolOp) and isinstance(p.test.op, ast.And) else [p.test]
            found = [t for t in tests if is_availability(ctx, t)]
            if found:
                return found
        child = p
    return []
