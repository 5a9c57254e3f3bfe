"""Device guards: a ``torch.cuda.is_available()`` test is rewritten only with everything it decides.

Rewriting ``if torch.cuda.is_available():`` into ``torch.accelerator.is_available()`` makes the
guarded code run on Trainium. That is right only when the guarded code is device-agnostic after
the same fix run; otherwise the guard must stay (the program keeps its CPU path there).

:func:`decided_region` (planning, on the ast) finds what a guard decides -- the branch it opens,
the rest of an ``and`` chain, the uses of a variable it is assigned to -- and the CUDA-specific
sites in it. :func:`.guard_settle.settle` (after every finding of the file is planned) keeps a guard's fix
only when each of those sites has a fix at least as safe; else the guard gets a note naming the site.
"""

from __future__ import annotations

import ast

from .cuda_only import SAYING
from .device_dispatch import later_device_branch
from .guard_reach import (
    checks_requested_cuda,
    cpu_markers,
    kept_placement,
    maps_to_where_saved,
    maps_to_where_saved_branch,
    runs_after,
    same_tests,
    typed_data_note,
)
from .guard_skips import (
    GENERIC_SKIP_WORDS,
    LEAVING,
    after_stopping_else,
    float64_test,
    is_skip,
    named_skip_elsewhere,
    only_stops,
    raised_reason,
    skip_call,
    skip_reason,
    skip_statement,
    stops,
)
from .guard_subjects import (
    cpu_build_choice,
    cuda_key_branch,
    extension_build,
    gpu_path_test,
    toolkit_test,
)
from .name_words import cuda_keyed, names_gpu, string_picks_gpu

#: Keyword arguments a guard's value may feed without deciding device-specific code.
HARMLESS_KEYWORDS = frozenset({"pin_memory"})
_MAP_LOCATION_NOTE = ("on CUDA it gives `map_location=None`, which loads tensors onto the device they were saved "
                      "on: CUDA, for a checkpoint from a GPU, which Trainium does not have (the other arm loads it "
                      "there). Keep the test, or map to the device itself")


def _site(ctx, node) -> list:
    """A CUDA site as plan data: its span, and its text for the note."""
    text = ctx.segment(node).splitlines()[0] if ctx.segment(node) else ""
    return [*ctx.span(node), text[:60]]


def region_nodes(ctx, node, depth: int = 0, negated: bool = False) -> tuple[list | None, str]:
    """The nodes whose running ``node`` (a boolean; false means "CUDA" when ``negated``) decides, or (None, why)."""
    child, parent = node, ctx.parent(node)
    region: list = []
    while parent is not None:
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
            negated = not negated
        elif isinstance(parent, ast.BoolOp):
            region += [v for v in parent.values if v is not child]
        elif isinstance(parent, (ast.If, ast.While)) and parent.test is child:
            if isinstance(parent, ast.If) and maps_to_where_saved_branch(ctx, parent, negated):
                return None, _MAP_LOCATION_NOTE
            seeds = _seeds_every_device(ctx, parent.body if negated else getattr(parent, "orelse", []))
            if seeds:
                return None, (f"without CUDA it calls `torch.manual_seed` (line {seeds}), which seeds the CPU and "
                              "every device, Trainium's too; rewritten, Trainium would seed its device alone")
            if not negated:
                return region + list(parent.body) + after_stopping_else(ctx, parent) + cpu_markers(ctx, parent), ""
            if not (only_stops(parent.body) or _picks_the_cpu(ctx, parent)):
                return None, ("the branch it takes without CUDA sets up the CPU path, which Trainium would then "
                              "skip; decide by hand what Trainium needs there")
            rest = list(parent.orelse)
            if parent.body and (isinstance(parent.body[-1], LEAVING) or stops(parent.body[-1])):
                block = ctx.block_of(parent) or []
                i = next((j for j, s in enumerate(block) if s is parent), len(block))
                rest += block[i + 1:]
            return region + rest, ""
        elif isinstance(parent, ast.IfExp) and parent.test is child:
            if maps_to_where_saved(ctx, parent, negated):
                return None, _MAP_LOCATION_NOTE
            arms = (parent.body, parent.orelse)
            if not (all(_constant(v) for v in arms) or any(_constant(v, (int, float)) for v in arms)):
                return region + [parent.orelse if negated else parent.body], ""
            # `half = True if torch.cuda.is_available() else False`: a flag, decided where it is used; so is
            # a value with a sentinel beside it (gluonts' `cuda_device if is_available() else -1`, then
            # `if self.cuda_device >= 0: model.cuda(self.cuda_device)`, read set 91)
            region += [parent.orelse if negated else parent.body]
        elif isinstance(parent, ast.Assert):
            if checks_requested_cuda(ctx, parent):
                return None, ("it checks that the CUDA device the caller asked for is there, which is the right "
                              "check on every machine (a `neuron` or `cpu` request skips it)")
            return region + runs_after(ctx, parent), ""
        elif isinstance(parent, ast.keyword) and parent.arg in HARMLESS_KEYWORDS:
            return region, ""
        elif _message(ctx, child) or (isinstance(parent, ast.FormattedValue) and _message(ctx, ctx.parent(parent))):
            return region, ""  # jukebox's `print(f'Using cuda {use_cuda}')`: said, not decided
        elif isinstance(parent, ast.keyword) and isinstance(ctx.parent(parent), ast.Call):
            library = _library_call(ctx, ctx.parent(parent))
            if library:
                return None, (f"its value goes to `{library}`, another library's code, given no device: it picks "
                              "its device itself (most often with its own CUDA test), so on Trainium it may run on "
                              "the CPU with the settings meant for the GPU; pass it the device too, or keep the test")
            return region + [ctx.parent(parent)], ""  # `autocast(..., enabled=<test>)`: the call is decided
        elif (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "range"
              and isinstance(ctx.parent(parent), (ast.For, ast.AsyncFor)) and ctx.parent(parent).iter is parent):
            return region + list(ctx.parent(parent).body), ""  # once per device: the body is decided
        elif isinstance(parent, ast.Call) and child in parent.args and is_skip(parent) and depth == 0:
            decorated = ctx.parent(parent)  # `@skipIf(<test>, ...)` decides whether the test runs
            if isinstance(decorated, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return region + [decorated], ""
            return None, "neuron-lint cannot see what this skip decides"
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            if depth:
                return None, "its value decides code neuron-lint cannot follow"
            return _variable_region(ctx, parent, parent.targets[0].id, region)
        elif isinstance(parent, ast.Return):
            return None, "its value is returned, so the callers decide what it guards; rewrite them together"
        elif not isinstance(parent, (ast.Compare,)) or isinstance(parent, ast.stmt):
            return None, "neuron-lint cannot see what its value decides"
        child, parent = parent, ctx.parent(parent)
    return None, "neuron-lint cannot see what its value decides"


def _constant(node, kinds: tuple = ()) -> bool:
    """A constant that is no string (a flag's ``True``, an index's ``-1``), of one of ``kinds`` if given."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return (isinstance(node, ast.Constant) and not isinstance(node.value, str)
            and (not kinds or isinstance(node.value, kinds) and not isinstance(node.value, bool)))


def _library_call(ctx, call: ast.Call) -> str:
    """The name of ``call`` when it calls another library than torch or the project (GFPGAN's
    ``RealESRGANer(..., half=half)``, with ``half = True if torch.cuda.is_available() else False``)
    and passes it no device, else ``""``."""
    from .first_party import is_first_party

    name = ctx.qualname(call.func) or ""
    module = name.rpartition(".")[0]
    if not module or module.split(".")[0] in ("torch", "builtins") or is_first_party(module):
        return ""
    if any("device" in (k.arg or "") for k in call.keywords):
        return ""
    return name.rpartition(".")[2]


def _picks_the_cpu(ctx, stmt: ast.If) -> bool:
    """``if not torch.cuda.is_available(): device = torch.device('cpu') else: device = ...``: the branch
    without CUDA only names the CPU device where the other branch names the GPU (ijepa's train.py),
    a device choice like ``"cuda" if ... else "cpu"``."""
    names = set()
    for s in stmt.body:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
            return False
        value = s.value
        if isinstance(value, ast.Call) and ctx.qualname(value.func) == "torch.device" and len(value.args) == 1 \
                and not value.keywords:
            value = value.args[0]
        if not (isinstance(value, ast.Constant) and value.value == "cpu"):
            return False
        names.add(s.targets[0].id)
    assigned = {t.id for s in stmt.orelse if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    return bool(names) and names <= assigned


def _cpu_path(ctx) -> int:
    """The line of a test of the module that stays because its branch without CUDA sets up the CPU
    path (DeepSpeedExamples' imagenet ``main.py``: ``if not torch.cuda.is_available(): device = cpu;
    model.to(device)``), or 0: Trainium takes that path, and the module's other tests must agree."""
    found = ctx.__dict__.get("_nrn_cpu_path")
    if found is None:
        found = ctx.__dict__["_nrn_cpu_path"] = next(
            (n.lineno for n in ctx.walk(ctx.tree) if isinstance(n, ast.If) and isinstance(n.test, ast.UnaryOp)
             and isinstance(n.test.op, ast.Not) and isinstance(n.test.operand, ast.Call)
             and ctx.qualname(n.test.operand.func) == "torch.cuda.is_available"
             and not (only_stops(n.body) or _picks_the_cpu(ctx, n))), 0)
    return found


def moves_things(ctx, nodes, guard) -> bool:
    """Does the decided code move tensors or modules (``.cuda(...)``, ``.to(...)``, a ``"cuda"`` device),
    before or after a fix's first pass rewrote them?"""
    return any((isinstance(n, ast.Call) and getattr(n.func, "attr", "") in ("cuda", "to")) or (
        isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda"))
        for top in nodes for n in _walk_decided(ctx, top, guard))


def _seeds_every_device(ctx, body) -> int:
    """The line of a ``torch.manual_seed(...)`` call among the statements of ``body`` (the branch
    taken without CUDA: EfficientDet's ``else: torch.manual_seed(42)``), or 0."""
    return next((n.lineno for s in body for n in ast.walk(s) if isinstance(n, ast.Call)
                 and ctx.qualname(n.func) == "torch.manual_seed"), 0)


def _variable_region(ctx, assign: ast.Assign, name: str, region: list) -> tuple[list | None, str]:
    """``use_cuda = ... torch.cuda.is_available()``: what every use of ``use_cuda`` decides."""
    scope = ctx.enclosing_function(assign) or ctx.tree
    # `log_timings = log_timings and torch.cuda.is_available()` (jepa's gpu_timer): the name read on
    # the right is the value before the test, which decides nothing here
    own = {id(n) for n in ast.walk(assign.value)}
    uses = [n for n in ctx.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            and id(n) not in own]
    if ctx.bound.get(name, 0) != 1 and scope is ctx.tree:
        return None, f"`{name}` is bound more than once; neuron-lint cannot see what it decides"
    for use in uses:
        more, why = region_nodes(ctx, use, depth=1)
        if more is None and why.startswith("its value goes to"):
            return None, f"`{name}` (line {use.lineno}): {why}"
        if more is None:
            return None, f"`{name}` is used where neuron-lint cannot see what it decides (line {use.lineno})"
        region += more
    return region, ""


def _walk_decided(ctx, top, guard):
    """The nodes of decided code ``top``, less the decorator that holds ``guard`` (a skip's own test)."""
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        own = [d for d in top.decorator_list if any(n is guard for n in ast.walk(d))]
        if own:
            held = {id(n) for d in own for n in ast.walk(d)}
            return (n for n in ctx.walk(top) if id(n) not in held)
    return ctx.walk(top)


def _per_top(ctx, key: str, top, guard, compute):
    """``compute`` of the nodes of decided code ``top`` (:func:`_walk_decided`), kept per module under
    ``key`` for each top and the decorator left out: a module's guards often decide the same code."""
    own = ()
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        own = tuple(id(d) for d in top.decorator_list if any(n is guard for n in ast.walk(d)))
    memo = ctx.__dict__.setdefault(key, {})
    found = memo.get((id(top), own), memo)
    if found is memo:
        found = memo[(id(top), own)] = compute(_walk_decided(ctx, top, guard))
    return found


def _cuda_sites(ctx, nodes, guard=None) -> list:
    """CUDA-specific sites in the decided code: names under torch.cuda, `.cuda()`, `.is_cuda`, "cuda"/"nccl"."""
    return [site for top in nodes for site in _per_top(ctx, "_nrn_cuda_sites", top, guard,
                                                       lambda walked: _sites_in(ctx, walked))]


def _sites_in(ctx, walked) -> list:
    """The CUDA-specific sites among ``walked`` (see :func:`_cuda_sites`)."""
    sites = []
    for n in walked:
        if isinstance(n, ast.Attribute):
            q = ctx.qualname(n)
            if n.attr in ("cuda", "is_cuda") and q is None or n.attr == "cuda" and q and q.split(".")[0] != "torch":
                # `.cuda()` on an object, a flag named for CUDA (`args.cuda`), or another library's
                # CUDA (Genesis's `gs.cuda` backend in torchrl's `if t == "cuda": return gs.cuda`,
                # read set 63; `ti.cuda`, `cupy.cuda`)
                sites.append(n)
                continue
            if q and (q.startswith("torch.cuda.") or q == "torch.cuda") and not isinstance(ctx.parent(n), ast.Attribute):
                sites.append(n)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and (
                n.value.split(":")[0].lower() in ("cuda", "nccl")
                or cuda_keyed(n.value, isinstance(ctx.parent(n), ast.Compare))):
            if not _message(ctx, n):
                sites.append(n)
    return sites


def _message(ctx, node) -> bool:
    """Is the string ``node`` what a ``print`` or a log call says (LAVIS's openpose: ``print('cuda')``
    after the move), not a device?"""
    call = ctx.parent(node)
    func = call.func if isinstance(call, ast.Call) and node in call.args else None
    return (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) in SAYING


def decided_region(ctx, call: ast.AST | None, negated: bool = False) -> tuple[list | None, str]:
    """The spans of the CUDA-specific sites a guard decides (``[]``: none), or (None, why not)."""
    if call is None:
        return None, "`torch.cuda.is_available` is not called here"
    later = later_device_branch(ctx, call)
    if later:
        return None, (f"a later branch of this `if` (line {later}) handles another device; a device-agnostic "
                      "test here would take that branch's place there")
    nodes, why = region_nodes(ctx, call, negated=negated)
    if nodes is None:
        return None, why
    for peer in same_tests(ctx, call):
        more, why = region_nodes(ctx, peer, negated=negated)
        if more is None:
            return None, f"the same test on line {peer.lineno} is left ({why}), and the two must agree"
        nodes = nodes + more
    typed = typed_data_note(ctx, call, region_nodes)
    if typed:
        return None, typed
    placed = not negated and moves_things(ctx, nodes, call) and kept_placement(ctx, call, moves_things,
                                                                                cuda_only_code)
    if placed:
        return None, placed
    own = {id(n) for n in ast.walk(call)}  # the test's own `"cuda"` (`enabled=device.type == "cuda"`) is no site
    sites = [_site(ctx, s) for s in _cuda_sites(ctx, nodes, call) if id(s) not in own]
    kept = not negated and moves_things(ctx, nodes, call) and _cpu_path(ctx)
    if kept:
        return None, (f"the test on line {kept} stays (without CUDA it sets up the CPU path: Trainium takes it), so "
                      "here Trainium must take the CPU path too; rewritten, it would move data to the accelerator "
                      "while the rest stays on the CPU. Rewrite them together by hand")
    skip = skip_call(ctx, call) or skip_statement(ctx, call)
    if skip is not None and not sites:
        return None, ("the test it skips has no CUDA-specific code neuron-lint rewrites, so what needs CUDA there "
                      "(a kernel, an extension, another module) is out of sight; decide by hand whether Trainium runs it")
    kernel = cuda_only_code(ctx, nodes, call)
    if kernel:
        return None, (f"the code it decides calls {kernel}; on Trainium the guard would let it run. Keep the CUDA "
                      "test there (the CUDA path keeps working, other devices keep the other path)")
    key = cuda_key_branch(ctx, call)
    if key:
        return None, (f"it is in the branch for a name of a CUDA device ({key}): the code handles CUDA's "
                      "devices by name (a checkpoint's `cuda:0` RNG state), which no other device has. Keep it")
    toolkit = toolkit_test(ctx, call)
    if toolkit:
        return None, (f"it is asked together with `{toolkit}` (where the CUDA toolkit is installed): the test "
                      "decides whether CUDA code is built, which Trainium has no use for. Keep it")
    chosen = gpu_path_test(ctx, call)
    if chosen:
        return None, (f"it is asked together with `{chosen}`: the test is for the GPU path the project chose, "
                      "CUDA's (NVIDIA DALI's `gpu` pipeline, a `gpu` backend), which Trainium does not have. Keep it")
    built = extension_build(ctx, call)
    if built:
        return None, (f"the code it decides builds CUDA code ({built}): the test asks whether nvcc can compile "
                      "the extension's CUDA sources, and Trainium needs the CPU build. Keep it")
    build = cpu_build_choice(ctx, call)
    if build:
        return None, (f"without CUDA it picks {build}, a CPU build of another package: the test chooses which "
                      "build of that software to install or load, and Trainium needs its CPU build too. Keep it")
    gpu = _gpu_choice(ctx, nodes, call)
    if gpu:
        return None, (f"the code it decides picks {gpu}, which names the GPU or CUDA-only machinery: in this "
                      "project that is likely its CUDA path (composer's `DeviceGPU`, with NCCL and CUDA's "
                      "GradScaler), which Trainium would then take. Keep the CUDA test there, or give Trainium "
                      "its own branch")
    named = _cuda_named_value(ctx, nodes, call)
    if named:
        return None, f"the code it decides {named}. Keep the CUDA test there"
    raised = raised_reason(ctx, call)
    if raised:
        return None, (f"the error it raises without CUDA ({raised[:60]!r}) names what needs CUDA; decide by hand "
                      "whether Trainium has it before letting it through")
    if skip is not None:
        reason = skip_reason(skip)
        if GENERIC_SKIP_WORDS.sub(" ", reason.lower()).strip():
            return None, (f"the skip's reason ({reason[:60]!r}) names what needs CUDA; decide by hand whether "
                          "Trainium has it before the test runs there")
        float64 = float64_test(ctx, (n for top in nodes for n in _walk_decided(ctx, top, call)))
        if float64:
            return None, (f"the test it skips uses {float64}; Trainium computes float64 as float32, so the test "
                          "would fail there; decide by hand whether it should run on Trainium")
        named = named_skip_elsewhere(ctx, skip)
        if named:
            return None, (f"another CUDA skip in this module says what needs CUDA ({named[:60]!r}, line "
                          f"{named.lineno}); the code under test here likely needs it too; decide by hand whether "
                          "Trainium runs it")
    # The decided code itself: any CUDA-specific finding inside it (DataParallel, a CUDA extension...)
    # must be fixed too. Marked by an empty text.
    return sites + [[*ctx.span(n), ""] for n in nodes if hasattr(n, "lineno")], ""


def _looked_up_or_asked(ctx, node) -> bool:
    """Is the string ``node`` compared, a key looked up (asteroid's ``conf["use_gpu"]``,
    ``opts.get("gpu")``) or an environment variable's default (LLaMA-Factory's
    ``os.getenv("LOCAL_RANK", "0")``), rather than a value picked?"""
    parent = ctx.parent(node)
    return isinstance(parent, (ast.Compare, ast.Subscript)) or (
        isinstance(parent, ast.Call) and getattr(parent.func, "attr", "") in ("get", "pop") and node in parent.args[:1]
    ) or (isinstance(parent, ast.Call) and ctx.qualname(parent.func) in ("os.getenv", "os.environ.get"))


def _gpu_choice(ctx, nodes, guard) -> str:
    """What in the decided code picks the project's GPU path: a ``"gpu"`` string (composer's
    ``device="gpu"``), GPU indices as a string (yolov7's ``select_device('0' if
    torch.cuda.is_available() else 'cpu')``, whose ``'0'`` asserts CUDA), a package built for CUDA
    (yolov5's ``check_requirements("onnxruntime-gpu" if cuda else "onnxruntime")``) or a call of
    something named for the GPU (``DeviceGPU()``), or ``""``."""
    for top in nodes:
        for n in _walk_decided(ctx, top, guard):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and string_picks_gpu(n.value) and (
                    not _looked_up_or_asked(ctx, n)):  # picked, not asked about
                return f"`{n.value!r}` (line {n.lineno})"
            if isinstance(n, ast.Call):
                name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                if name and names_gpu(name):
                    return f"`{name}(...)` (line {n.lineno})"
    return ""


_DEVICE_WORDS = frozenset({"device", "devices", "id", "ids", "index", "gpu", "gpus"})
_VERSIONS = frozenset({"torch.version.cuda", "torch.version.hip"})


def _cuda_named_value(ctx, nodes, guard) -> str:
    """What in the decided code is CUDA's whatever the device, as the note says it, or ``""``: a
    variable or argument named for a CUDA device that it sets (allennlp's ``cuda_device = 0`` then
    ``.cuda(cuda_device)``; flair handing ``cuda_device`` to allennlp's ELMo), or a read of the CUDA
    or ROCm version (speechbrain's environment report: both are None on other builds)."""
    from .name_words import name_words

    for top in nodes:
        for n in _walk_decided(ctx, top, guard):
            if isinstance(n, ast.Attribute) and n.attr in ("cuda", "hip") and ctx.qualname(n) in _VERSIONS:
                return f"reads `{ctx.qualname(n)}` (line {n.lineno}), which is None on other builds"
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
            names = [t.id if isinstance(t, ast.Name) else t.attr for t in targets if isinstance(t, (ast.Name, ast.Attribute))]
            if isinstance(n, ast.keyword) and n.arg:
                names.append(n.arg)
            for name in names:
                words = name_words(name)
                if "cuda" in words and _DEVICE_WORDS & set(words):
                    return (f"sets `{name}` (line {getattr(n, 'lineno', 0) or ctx.parent(n).lineno}), named for "
                            "CUDA: what reads it expects a CUDA device (allennlp's `.cuda(cuda_device)`)")
    return ""


def cuda_only_code(ctx, nodes, guard) -> str:
    """Code in the decided code that only CUDA runs (a kernel, a compiled extension, a custom
    operator, an optional import: :func:`.cuda_only.cuda_only_node`), as the note names it, or ``""``.
    ``.cuda()`` is not one: NRN201 rewrites it."""
    from .callees import cuda_only_callee
    from .cuda_only import cuda_only_node

    for top in nodes:
        what = _per_top(ctx, "_nrn_cuda_only_code", top, guard,
                        lambda walked: next((w for n in walked if (w := cuda_only_node(ctx, n))), ""))
        if what:
            return what
    for top in nodes:  # then what the module's own functions called there run (svox2's `self.accelerate()`)
        what = _per_top(ctx, "_nrn_cuda_only_callee", top, guard, lambda walked: next(
            (w for n in walked if isinstance(n, ast.Call) and (w := cuda_only_callee(ctx, n))), ""))
        if what:
            return what
    return ""
