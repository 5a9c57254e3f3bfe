"""Planning and rewriting one CUDA device string: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"`` -> the module's current device.

A string stays a string, so code that stores or formats it keeps working: ``"cuda"`` becomes
``DEVICE.type`` (``.to("cuda")`` becomes ``.to(DEVICE)``), ``"cuda:1"`` becomes
``f"{DEVICE.type}:1"``, and ``f"cuda:{rank}"``, ``"cuda:{}".format(rank)`` and ``"cuda:%d" % rank``
become ``f"{DEVICE.type}:{rank}"``. With ``--device neuron`` only the word changes.

What decides a literal is rewritten with it:

- the availability idiom ``"cuda" if torch.cuda.is_available() else "cpu"`` is replaced as a whole
  by the device (or its type): the guard and what it decides go together. When the other arm is
  not a plain CPU fallback, the guard becomes ``torch.accelerator.is_available()``;
- ``"cuda" if <device comparison> else "cpu"`` (``'cuda' in device``, ``device.type == "cuda"``):
  the ``"cuda"`` of the comparison is rewritten too (``DEVICE.type if DEVICE.type in device else
  'cpu'``). On a CUDA machine ``DEVICE.type`` is ``"cuda"``, so both read exactly as before; on
  Trainium the comparison and the literal both say ``neuron``;
- a literal inside ``if device == "cuda":`` (or in a loop over device choices whose body compares
  the device with ``"cuda"``) is left alone, with a note: the branch may hold CUDA-only code that
  must not start running elsewhere.

A module-level ``device = torch.device("cuda")`` becomes the idiom itself and the other sites
reuse it. Planning (:func:`plan_literal`) reads the ``ast`` only; the LibCST side
(:func:`rewrite_literal`) is used by the ``device_string`` fixer and also by the ``amp``,
``distributed`` and ``cuda_string_indirect`` fixers for their device-type literals. The forms of
the strings are in :mod:`.device_forms`, the tests that choose CUDA in :mod:`.device_choice`; the
availability idiom, device lists and parameter defaults have modules of their own.
"""

from __future__ import annotations

import ast

from .cuda_only import cuda_hardware_query
from .decline import Decline
from .device_choice import (
    cuda_test,
    decided_by_branch,
    device_data,
    first_arg_of_to,
    is_availability,
    is_test_file,
    short,
)
from .device_defaults import plan_default, rewrite_default
from .device_destinations import (
    amp_callee,
    asserted_by_test,
    assigned_checked_as_cuda,
    assigned_for_amp,
    default_checked_as_cuda,
    default_for_amp,
    option_dest,
    other_runtime_call,
    parametrize_value,
    sole_test_device,
)
from .device_dispatch import keyed_table
from .device_forms import (
    convert,
    cst_kind,
    cst_literal_kind,
    literal_kind,
    one_literal,
    rewrite_decided,
    word,
)
from .device_idiom import (
    device_call_arm,
    device_idiom,
    guarded_device_call,
    plan_guard,
    plan_inline_definition,
    rewrite_guard,
    rewrite_inline,
)
from .device_lists import rewrite_guard_list
from .guard_reach import chosen_by_flag, compared_as_cuda, kept_placement, sliced_note, typed_data_note
from .guards import cuda_only_code, moves_things, region_nodes
from .imported_device import imported_device_note
from .load_locations import load_location
from .module_kind import forks_workers
from .name_dispatch import dispatcher_note
from .own_extension import own_extension
from .visible_devices import VISIBLE_LATER, chosen_before, picks_visible_devices


def _queried_gpu(ctx, node) -> ast.Call | None:
    """The ``torch.cuda`` hardware query ``node`` names the GPU for, directly or through
    ``torch.device(...)``: ``torch.cuda.get_device_capability("cuda:0")``."""
    call = ctx.parent(node)
    if isinstance(call, ast.keyword):
        call = ctx.parent(call)
    if isinstance(call, ast.Call) and node is not call.func and ctx.qualname(call.func) == "torch.device":
        node, call = call, ctx.parent(call)
        if isinstance(call, ast.keyword):
            call = ctx.parent(call)
    if isinstance(call, ast.Call) and node is not call.func and cuda_hardware_query(ctx, call):
        return call
    return None


def plan_literal(ctx, hit, node, message: str = "Use the current accelerator instead of CUDA"):
    """Plan the rewrite of one CUDA device literal (shared by NRN202, NRN205 and NRN206)."""
    kind = literal_kind(node)
    if kind is None:
        return None
    if kind != "format" and not one_literal(ctx, node):
        ctx.note(hit, "not rewritten: the string is built from several literals")
        return None
    if kind == "format":
        base = node.func.value if isinstance(node, ast.Call) else node.left
        if not one_literal(ctx, base):
            ctx.note(hit, "not rewritten: the string is built from several literals")
            return None
    why = _kept_literal(ctx, node)
    if why:
        ctx.note(hit, f"not rewritten: {why}")
        return None
    # the module's own device variable: its definition becomes the idiom
    if not ctx.neuron and ctx.in_device_definition(node):
        if not ctx.allows("2.6"):
            ctx.note(hit, "not rewritten: `torch.accelerator` needs PyTorch 2.6 (raise --min-torch to use it)")
            return None
        value = ctx.defined_device.value
        tests = [n for n in ctx.walk(value) if is_availability(ctx, n)]
        typed = (typed_data_note(ctx, tests[0], region_nodes) or imported_device_note(ctx)
                 or kept_placement(ctx, tests[0], moves_things, cuda_only_code)) if tests else ""
        if typed:
            ctx.note(hit, f"not rewritten: {typed}")
            return None
        # `torch.device("cuda")` probes nothing; the idiom asks the driver when the module is imported,
        # which a library module must not do (on CUDA it initialises the driver, perhaps before a fork).
        # A script that picks the visible GPUs when it runs must not ask before it does (yolov5).
        message, unsafe = "Define the device with `torch.accelerator`", "unsafe"
        if not ctx.is_script and tests and ctx.at_module_level(tests[0]):
            # deep-text-recognition-benchmark's utils.py: the module asked `torch.cuda.is_available()`
            # when imported already; it asks the accelerator instead, and agrees with the scripts
            unsafe = None
        elif not ctx.is_script:
            message += " (this library module then probes the device when it is imported)"
        elif not tests and picks_visible_devices(ctx) and not chosen_before(ctx, ctx.defined_device):
            # IGEV's demo_video.py: `DEVICE = 'cuda'`, then `os.environ['CUDA_VISIBLE_DEVICES'] = '0'`; asked
            # there, the accelerator starts the CUDA driver first and the choice is ignored (read set 87)
            ctx.note(hit, f"not rewritten: {VISIBLE_LATER}")
            return None
        elif forks_workers(ctx):
            message += " (the module then probes the device when it is imported, before it forks its workers)"
        else:
            unsafe = None
        return ctx.propose(hit, value, type(value).__name__, message,
                           {"mode": "define", "name": ctx.defined_device.targets[0].id}, applicability=unsafe)
    test = None if moved_unless_there(ctx, node) else decided_by_branch(ctx, node)
    if test is None and not ctx.neuron and kind == "plain":
        inline = plan_inline_definition(ctx, hit, node)
        if inline is not None:
            return inline
    if test is not None:
        ctx.note(hit, f"not rewritten: this string is used only when `{short(ctx, test)}` holds; rewriting it "
                      "alone would leave that test choosing CUDA, and rewriting the test would run the whole "
                      "branch on other devices too: port the test and its branch together by hand")
        return None
    called = None if ctx.neuron or kind != "plain" else guarded_device_call(ctx, node)
    if called is not None:
        return plan_guard(ctx, hit, node, called, kind, message)
    parent = ctx.parent(node)
    if isinstance(parent, ast.IfExp) and node is not parent.test:
        planned = _plan_choice(ctx, hit, node, parent, kind, message)
        if planned is not False:
            return planned
    if not ctx.neuron and kind in ("plain", "indexed"):
        default = plan_default(ctx, hit, node)
        if default is not None or id(hit) in ctx.notes:
            return default
    data = device_data(ctx, hit, node, import_ok=is_test_file(ctx) and parametrize_value(ctx, node))
    if data is None:
        return None
    if ctx.neuron:
        return ctx.propose(hit, node, cst_kind(node), message, {"mode": "word"})
    call = ctx.parent(node)
    if (kind == "plain" and device_call_arm(ctx, call) is node and node.value == "cuda" and not data.get("local")
            and data.get("device") in ("script", "library")):
        # `torch.device("cuda")` is the device itself, not `torch.device(DEVICE.type)` (both without index)
        return ctx.propose(hit, call, "Call", message, {**data, "mode": "device_call"})
    compared = compared_as_cuda(ctx, node) + chosen_by_flag(ctx, node)
    if compared:  # kept only with those comparisons (guard_settle.settle): they decide the same device
        data = {**data, "region": [[*ctx.span(c), ctx.segment(c).splitlines()[0][:60]] for c in compared]}
    return ctx.propose(hit, node, cst_kind(node), message,
                       {**data, "mode": "literal", "as_device": first_arg_of_to(ctx, node),
                        "load_location": kind != "plain" and load_location(ctx, node)})


def _plan_choice(ctx, hit, node, parent: ast.IfExp, kind: str, message: str):
    """``node`` an arm of ``parent``: the plan (or None) where the choice's test asks for CUDA, else False."""
    compares, available, why = cuda_test(ctx, parent.test)
    if is_availability(ctx, parent.test) or (
        isinstance(parent.test, ast.UnaryOp) and isinstance(parent.test.op, ast.Not)
        and is_availability(ctx, parent.test.operand)
    ):
        return plan_guard(ctx, hit, node, parent, kind, message)
    if why:
        ctx.note(hit, f"not rewritten: the choice between CUDA and another device is made by "
                      f"`{short(ctx, parent.test)}` and {why}; port the test and the string together by hand")
        return None
    if not (compares or available):
        return False
    data = device_data(ctx, hit, parent)
    if data is None:
        return None
    data = {"mode": "word"} if ctx.neuron else {**data, "mode": "decided"}
    # the availability tests in the choice are their own findings' to rewrite: the string goes only
    # with them (ElegantRL's mcpg, read set 63: `f"cuda:{GPU_ID}" if torch.cuda.is_available() and
    # GPU_ID >= 0 else "cpu"` was rewritten while the test stayed, tied to another)
    tests = [n for n in ast.walk(parent.test) if isinstance(n, ast.Call) and is_availability(ctx, n)]
    if tests:
        data = {**data, "region": [[*ctx.span(c), ctx.segment(c).splitlines()[0][:60]] for c in tests]}
    return ctx.propose(hit, parent, "IfExp", message + " (with the device test that chooses it)",
                       {**data, "decided": True})


def _kept_literal(ctx, node) -> str:
    """Why a CUDA literal stays as it is, whatever device the file would get (the note), or ``""``."""
    query = _queried_gpu(ctx, node)
    if query is not None:
        return (f"it names the GPU that `{short(ctx, query.func)}` asks about, and that question stays "
                "CUDA-only (NRN204)")
    other = other_runtime_call(ctx, node)
    if other:
        return (f"it goes to `{other}`, which knows its own devices only (`cpu`, `cuda`, ...), not PyTorch's "
                "accelerators, and it would be handed `neuron` on Trainium. Choose its device by hand")
    table = keyed_table(ctx, node) or sliced_note(ctx, node)
    if table:
        return table
    sole = sole_test_device(ctx, node)
    if sole is not None:
        return (f"the test runs on CUDA alone (`{short(ctx, sole)}`, line {sole.lineno}): it is a CUDA test, "
                "with no CPU variant. Rewritten, a CPU-only host would run it on the CPU, and Trainium on "
                "`neuron`; decide by hand which tests Trainium runs")
    mapped = dispatcher_note(ctx)
    if mapped:
        return mapped
    choices = _listed_choice(ctx, node)
    if choices is not None:
        return (f"the option only accepts `{short(ctx, choices)}`; with the current device as its default, "
                "`--device neuron` would still be refused. Add the device to the choices, then the default")
    faked = _faked_device(ctx, node)
    if faked is not None:
        return (f"the test sets `{ctx.segment(faked)}` to CUDA's device without moving anything: it pretends "
                "to be on a GPU, and what follows is checked for that")
    pinned = _pinned_to_cuda(ctx, node)
    if pinned is not None:
        return (f"the test pins the device to CUDA (`{short(ctx, pinned.func)}(..., \"cuda\")`, line "
                f"{pinned.lineno}), so this CUDA device is the value it expects")
    kept = _picked_under_kept_check(ctx, node)
    if kept:
        return (f"it is what `{kept}` picks, and that check stays: the project's own operators run on the CPU "
                "and CUDA only, and the check sends Trainium to the CPU")
    expected = asserted_by_test(ctx, node)
    if expected is not None:
        return (f"the test checks that this string comes back as it is (`{short(ctx, expected)}`, line "
                f"{expected.lineno}); it is data, not the device the test runs on")
    compared = _compared_device(ctx, node)
    if compared is not None and not moved_unless_there(ctx, node):
        return (f"`{short(ctx, compared)}` asks whether a device is CUDA; with the current device's type it "
                "would also hold for the CPU on a CPU-only host. Compare with the current accelerator's type "
                "and `!= \"cpu\"` by hand")
    amp = default_for_amp(ctx, node) if not ctx.neuron else None
    if amp is not None:
        return (f"the parameter goes to `{amp_callee(ctx, amp)}` (line {amp.lineno}), which switches itself "
                "off on a host without CUDA; with the current device type it would run on the CPU there. Pass "
                "`enabled=<device type> != \"cpu\"` to it, then rewrite the default")
    amp = assigned_for_amp(ctx, node) if not ctx.neuron else None
    if amp is not None:
        return (f"the variable goes to `{amp_callee(ctx, amp)}` (line {amp.lineno}), which switches itself "
                "off on a host without CUDA; with the current device type it would run on the CPU there. Pass "
                "`enabled=<device type> != \"cpu\"` to it, then rewrite the string")
    checked = default_checked_as_cuda(ctx, node)
    if checked is not None:
        return (f"the function checks the parameter against CUDA's name (`{short(ctx, checked)}`, line "
                f"{checked.lineno}); with the current device's type as its default that check would see "
                "`neuron` on Trainium. Make the check device-agnostic, then the default")
    checked = assigned_checked_as_cuda(ctx, node)
    if checked is not None:
        return (f"the code asks whether the variable is CUDA's (`{short(ctx, checked)}`, line {checked.lineno}); "
                "with the current device's type in it, Trainium would answer no there while the rest moves to "
                "`neuron`. Make that question device-agnostic, then the string")
    return ""


def _picked_under_kept_check(ctx, node) -> str:
    """``if torch.cuda.is_available(): device = "cuda"`` in a project that builds its own CPU-and-CUDA
    operators, where that check is left as it is (stable-fast-3d's ``get_device``): the check as
    written, or ``""``. Rewritten alone, the string would answer a CUDA question with another device."""
    stmt = ctx.parent(node)
    if_ = ctx.parent(stmt) if isinstance(stmt, (ast.Assign, ast.Return)) and stmt.value is node else None
    if not (isinstance(if_, ast.If) and stmt in if_.body and is_availability(ctx, if_.test)):
        return ""
    return ctx.segment(if_.test) if own_extension(ctx.path) else ""


def _compared_device(ctx, node) -> ast.Compare | None:
    """The comparison ``node`` is an operand of, directly or as ``torch.device("cuda")`` or its
    ``.type`` (fairscale's OSS: ``torch.device("cuda").type == self._default_device.type`` before
    ``torch.cuda.synchronize``), or None."""
    child = node
    parent = ctx.parent(node)
    if isinstance(parent, ast.Call) and ctx.qualname(parent.func) == "torch.device" and parent.args and parent.args[0] is node:
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.Attribute) and parent.attr == "type" and parent.value is child:
        child, parent = parent, ctx.parent(parent)
    if isinstance(parent, ast.Compare) and child is not node and any(
            isinstance(op, (ast.Eq, ast.NotEq)) for op in parent.ops):
        return parent
    return None


def moved_unless_there(ctx, node) -> bool:
    """Is ``node`` one of the two ``"cuda"`` of ``if x.device != torch.device("cuda"): x =
    x.to(torch.device("cuda"))`` (stable-diffusion's samplers' ``register_buffer``)? Moving a
    tensor unless it is there already means the same for any device, so both follow the current one."""
    call = ctx.parent(node)
    if not (isinstance(call, ast.Call) and ctx.qualname(call.func) == "torch.device" and call.args == [node]
            and not call.keywords and isinstance(node, ast.Constant) and node.value == "cuda"):
        return False
    stmt = next((p for p in ctx.ancestors(node) if isinstance(p, ast.stmt)), None)
    test = stmt.test if isinstance(stmt, ast.If) else None
    if isinstance(stmt, ast.Assign):
        test = ctx.parent(stmt).test if isinstance(ctx.parent(stmt), ast.If) else None
        stmt = ctx.parent(stmt)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq)
            and isinstance(test.left, ast.Attribute) and test.left.attr == "device" and not stmt.orelse
            and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Assign)):
        return False
    move, held = stmt.body[0].value, ctx.segment(test.left.value)
    pair = [test.comparators[0], move.args[0] if isinstance(move, ast.Call) and len(move.args) == 1 else None]
    return (None not in pair and isinstance(move.func, ast.Attribute) and move.func.attr == "to"
            and ctx.segment(move.func.value) == held == ctx.segment(stmt.body[0].targets[0])
            and all(ctx.segment(p) == ctx.segment(call) for p in pair) and call in pair)


def _listed_choice(ctx, node) -> ast.AST | None:
    """The ``choices=[..., "cuda", ...]`` of the ``add_argument`` whose ``default`` is ``node``, or the
    list the module checks the option's value against (nnU-Net's ``assert args.device in ['cpu',
    'cuda', 'mps']``, set 81) when it names CUDA and not the Neuron device; or None."""
    keyword = ctx.parent(node)
    call = ctx.parent(keyword) if isinstance(keyword, ast.keyword) and keyword.arg == "default" else None
    if not (isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", "")) == "add_argument"):
        return None
    for k in call.keywords:
        if k.arg == "choices" and any(isinstance(n, ast.Constant) and isinstance(n.value, str)
                                      and n.value.split(":")[0] == "cuda" for n in ast.walk(k.value)):
            return k.value
    dest = option_dest(call, node)
    # the value kept in a name first: MiniCPM-V's `device = args.device`, `assert device in ['cuda', 'mps']`
    kept = {t.id for n in (ctx.walk(ctx.tree) if dest else ()) if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Attribute) and n.value.attr == dest for t in n.targets if isinstance(t, ast.Name)}
    for n in ctx.walk(ctx.tree) if dest else ():
        if (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In)
                and (isinstance(n.left, ast.Attribute) and n.left.attr == dest
                     or isinstance(n.left, ast.Name) and n.left.id in kept)
                and isinstance(n.comparators[0], (ast.List, ast.Tuple, ast.Set))):
            names = [e.value for e in n.comparators[0].elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if "cuda" in names and not any(name.startswith("neuron") for name in names):
                return n.comparators[0]
    return None


def _faked_device(ctx, node) -> ast.Attribute | None:
    """In a test module, the attribute of another object that ``node`` (or ``torch.device(node)``) is
    assigned to: stable-baselines3's ``model.device = th.device("cuda")  # Pretend to be on the GPU``."""
    value, parent = node, ctx.parent(node)
    if isinstance(parent, ast.Call) and ctx.qualname(parent.func) == "torch.device" and parent.args == [node]:
        value, parent = parent, ctx.parent(parent)
    if not (is_test_file(ctx) and isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1):
        return None
    target = parent.targets[0]
    ok = (isinstance(target, ast.Attribute) and "device" in target.attr
          and not (isinstance(target.value, ast.Name) and target.value.id in ("self", "cls")))
    return target if ok else None


_PATCHERS = frozenset({"setattr", "patch", "object", "dict", "setenv", "setitem"})


def _pinned_to_cuda(ctx, node) -> ast.Call | None:
    """In a test module, the ``monkeypatch.setattr(..., "cuda")`` (``mock.patch(..., "cuda")``,
    ``return_value="cuda"``...) of the function holding ``node``: the test fakes a CUDA machine and
    its CUDA strings are what it expects (torchtitan's ``get_local_device`` tests), else None."""
    if not is_test_file(ctx):
        return None
    function = ctx.enclosing_function(node)
    if function is None:
        return None
    for n in ctx.walk(function):
        if isinstance(n, ast.Call) and n is not node:
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _PATCHERS and any(
                    isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.split(":")[0] == "cuda"
                    for v in (*n.args, *(k.value for k in n.keywords))):
                return n
    return None


def plan_device_type(ctx, hit, node):
    """A device-type argument (``torch.autocast("cuda")``, ``init_device_mesh("cuda", ...)``,
    ``device_type="cuda"``), planned as a device string."""
    return plan_literal(ctx, hit, node, "Use the current accelerator's device type")


def rewrite_literal(rx, original, updated, data):
    mode = data.get("mode")
    if mode == "define":
        return device_idiom(rx, original, data.get("name", "device"))
    if mode == "inline":
        return rewrite_inline(rx, original, updated, data)
    if mode == "word":
        if data.get("decided"):
            return rewrite_decided(rx, original, updated, data)
        return word(updated)
    if mode == "literal":
        if cst_literal_kind(updated) is None:
            raise Decline("the code here is not the planned CUDA device string")
        return convert(rx, original, updated, data, data.get("as_device", False))
    if mode == "device_call":
        args = getattr(updated, "args", ())
        if len(args) != 1 or cst_literal_kind(args[0].value) is None:
            raise Decline("the code here is not the planned `torch.device(\"cuda\")`")
        return rx.device(original, data)
    if mode == "guard":
        return rewrite_guard(rx, original, updated, data)
    if mode == "guard_list":
        return rewrite_guard_list(rx, original, updated, data)
    if mode == "default":
        return rewrite_default(rx, original, updated, data)
    if mode == "decided":
        return rewrite_decided(rx, original, updated, data)
    raise Decline(f"unknown plan {mode!r}")
