"""CUDA library switches (NRN209): device-agnostic equivalents where there are any, else a note.

Decided per flag (checked against torch 2.13):

- ``torch.backends.cuda.sdp_kernel(enable_flash=..., enable_math=..., enable_mem_efficient=...,
  enable_cudnn=...)`` -> ``sdpa_kernel([SDPBackend.FLASH_ATTENTION, ...])`` listing the enabled
  backends in the same order. In 2.13 ``sdp_kernel`` is itself implemented as exactly that call
  (each True appends its backend), so the rewrite is the same everywhere: **safe**. Needs literal
  True/False arguments.
- ``torch.backends.cuda.matmul.allow_tf32 = True``/``False`` ->
  ``torch.set_float32_matmul_precision("high")``/``("highest")``. Same cuBLAS state on CUDA
  (``allow_tf32`` and ``cuda.matmul.fp32_precision``), but the function also sets the CPU
  (oneDNN) matmul precision, which the flag leaves alone: **unsafe**.
- ``torch.backends.cudnn.deterministic = True`` is left, with a note. Deleting it would leave a
  program that says it is deterministic and is not; replacing it by
  ``torch.use_deterministic_algorithms(True, warn_only=True)`` (until 2026-12-07) was wrong twice over:
  other code reads the flag (classy_vision's ``copy_model_to_gpu``, called by every vissl run,
  turns the cuDNN autotuner on when it is False, so a reproducible run became one that picks its
  kernels per run), and the switch is global and much stricter than the author's (every op,
  uninitialised memory filled; on Trainium it turns off the fusion of queued eager operations),
  on every default run of a trainer that sets the flag with its seed (mmf). The note says how to
  ask every device by hand.
- ``torch.backends.cudnn.benchmark = True`` is left, with a note: it switches on the cuDNN
  autotuner, which makes GPU runs faster, and no device-agnostic switch does that (removing it, as
  0.1 did, slowed CUDA training down and changed its kernel choice).
- ``torch.backends.cudnn.allow_tf32 = True``: PyTorch's default, removed (**unsafe**: on CUDA it
  undoes a ``False`` set before it, by a caller or a library), unless that would empty its block, it
  shares its line, or a comment line sits right above it, and not when the module sets the cuDNN
  convolution precision anywhere else (detectron2's if/else).
- ``torch.backends.cudnn.benchmark = False`` is the default too, but it is left: it turns off an
  autotuner switched on earlier, and with cuDNN determinism it keeps cuDNN to its one default
  algorithm (with the autotuner on it times the deterministic ones and may pick another per run).
- The matmul mapping is not offered under a flag named for CUDA (stable-baselines3's ``if
  using_cuda:``: the call would change CUDA runs and never run elsewhere), nor in a function that
  reads the flag to put it back (Fooocus's ``tf32_mode``: the precision would not be restored).
- Everything else -- ``cudnn.allow_tf32 = False`` (convolutions: no device-agnostic switch),
  ``cudnn.deterministic = False``, ``enable_flash_sdp(...)`` and the other global SDPA switches
  (``sdpa_kernel`` is a context manager, not a global setting), reads -- is left as it is, with a
  note: it is harmless on Trainium.
"""

from __future__ import annotations

import ast
import re

from ...io.positions import split_lines
from ..keyword_args import module_comments
from ..line_length import DEFAULT_LINE_LENGTH
from ..project_scan import first_in_project, pattern_index

_SDP_PARAMS = ("enable_flash", "enable_math", "enable_mem_efficient", "enable_cudnn")
#: sdp_kernel's own order of appending backends.
_SDP_BACKENDS = (("enable_flash", "FLASH_ATTENTION"), ("enable_mem_efficient", "EFFICIENT_ATTENTION"),
                 ("enable_math", "MATH"), ("enable_cudnn", "CUDNN_ATTENTION"))
_SDP_SWITCHES = {"enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp", "enable_cudnn_sdp"}
_HARMLESS = "it is harmless on Trainium (CUDA library settings likely have no effect there); keep it for GPU runs"


def _bool(node) -> bool | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, bool) else None


#: Settings of the cuDNN convolution precision that ``cudnn.allow_tf32 = True`` could undo.
_CONV_PRECISION = ("torch.backends.cudnn.allow_tf32", "torch.backends.cudnn.fp32_precision",
                   "torch.backends.cudnn.conv.fp32_precision", "torch.backends.fp32_precision")


def _other_conv_precision(ctx, assign: ast.Assign):
    """Another assignment in the module that may turn cuDNN's convolution TF32 off (the node of its
    target: any value but ``True`` / ``"tf32"``), or None."""
    for n in ctx.walk(ctx.tree):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n is not assign:
            value = getattr(n, "value", None)
            if isinstance(n, ast.Assign) and isinstance(value, ast.Constant) and value.value in (True, "tf32"):
                continue
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Attribute) and ctx.qualname(t) in _CONV_PRECISION:
                    return t
    return None


_CONV_TF32_OFF = re.compile(rb"cudnn\.allow_tf32\s*=\s*False\b")
pattern_index("conv_tf32_off", _CONV_TF32_OFF, b"allow_tf32")


def _project_turns_conv_tf32_off(path: str) -> str:
    """``path:line`` of the project's first ``cudnn.allow_tf32 = False`` (FastVideo's parity tests
    and its StableAudio pipeline; a later test module's ``= True`` puts it back in the same pytest
    run), or ``""``."""
    return first_in_project(path, "conv_tf32_off")


def _block_of(ctx, stmt):
    parent = ctx.parent(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return parent, block
    return parent, None


#: The flag mapped to a device-agnostic call.
_MAPPED = ("torch.backends.cuda.matmul.allow_tf32",)


def _cuda_flag(ctx, stmt) -> ast.If | None:
    """The ``if`` around ``stmt`` whose test is a flag named for CUDA rather than an availability
    test (stable-baselines3's ``if using_cuda:``, set from ``device.type == "cuda"``), or None."""
    for p in ctx.ancestors(stmt):
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        if isinstance(p, ast.If) and any(s is stmt or stmt in ast.walk(s) for s in p.body):
            text = ctx.segment(p.test).lower()
            # a name of the program's (`using_cuda`, `args.cuda`), not torch's (`torch.version.cuda`)
            # nor a string (`hasattr(torch.backends, "cuda")`, diffusers' tests)
            named = any("cuda" in (n.id if isinstance(n, ast.Name) else n.attr).lower()
                        and not (ctx.qualname(n) or "").startswith("torch.")
                        for n in ast.walk(p.test) if isinstance(n, (ast.Name, ast.Attribute)))
            asks = "is_available" in text or "device_count" in text
            if named and not asks:
                return p
    return None


def _kept_mapping(ctx, assign: ast.Assign, qual: str) -> str:
    """Why a flag with a device-agnostic mapping keeps its line (the note's words), or ``""``."""
    flag = _cuda_flag(ctx, assign) if qual in _MAPPED else None
    if flag is not None:
        return (f"it runs only where `{ctx.segment(flag.test)}` holds (line {flag.lineno}), a flag for CUDA: the "
                "device-agnostic call would change CUDA runs and never run on Trainium")
    if qual == "torch.backends.cuda.matmul.allow_tf32":
        # read in the same function or, for a value that is not a literal (one put back), in another
        # one of the module (torchrl's `_maybe_enable_tf32` saves it, `_restore_tf32(prev)`: read set 63)
        scope = ctx.tree if _bool(assign.value) is None else ctx.enclosing_function(assign) or ctx.tree
        read = next((n for n in ctx.walk(scope)
                     if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and ctx.qualname(n) == qual), None)
        if read is not None:
            return (f"the flag is read on line {read.lineno} (saved to be put back); the matmul precision it would "
                    "become is set and restored as a pair or not at all")
    return ""


#: Values that can be the test of ``"high" if <value> else "highest"`` as they are written.
_CHOOSABLE = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Compare, ast.UnaryOp)


class BackendFlags:
    name = "backend_flags"

    # ------------------------------------------------------------------ plan
    def plan(self, ctx, hit):
        node = hit.node
        qual = ctx.qualname(node) or ""
        parent = ctx.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            if qual == "torch.backends.cuda.sdp_kernel":
                return self._plan_sdp_kernel(ctx, hit, parent)
            if qual.rsplit(".", 1)[-1] in _SDP_SWITCHES:
                ctx.note(hit, "not rewritten: a global switch of the CUDA attention kernels; `torch.nn.attention."
                              "sdpa_kernel` is a context manager, not a global setting, so no line is equivalent; "
                              f"{_HARMLESS} (or wrap the attention calls in `with sdpa_kernel(...)`)")
                return None
            if not isinstance(ctx.parent(parent), ast.Expr):
                ctx.note(hit, "not rewritten: it queries a CUDA library; left as it is")
                return None
            ctx.note(hit, f"not rewritten: no device-agnostic equivalent; {_HARMLESS}")
            return None
        if isinstance(parent, ast.Assign) and node in parent.targets:
            if len(parent.targets) != 1:
                ctx.note(hit, "not rewritten: one assignment sets several names; split it first")
                return None
            return self._plan_assignment(ctx, hit, parent, qual)
        if isinstance(getattr(node, "ctx", None), ast.Store):
            ctx.note(hit, f"not rewritten: not a plain assignment; {_HARMLESS}")
            return None
        ctx.note(hit, "not rewritten: it reads a CUDA library setting; left as it is")
        return None

    def _plan_assignment(self, ctx, hit, assign: ast.Assign, qual: str):
        value = _bool(assign.value)
        kept = _kept_mapping(ctx, assign, qual)
        if kept:
            ctx.note(hit, f"not rewritten: {kept}; {_HARMLESS}")
            return None
        if qual == "torch.backends.cuda.matmul.allow_tf32":
            if value is None and not isinstance(assign.value, _CHOOSABLE):
                ctx.note(hit, "not rewritten: the value is not a literal True/False or a plain expression; write "
                              "`torch.set_float32_matmul_precision(\"high\" if ... else \"highest\")` by hand")
                return None
            # DiT's `allow_tf32 = args.tf32`: `"high" if args.tf32 else "highest"`, as the flag would be
            precision = "high" if value is None or value else "highest"
            own = next((n for n in ctx.walk(ctx.tree) if isinstance(n, ast.Call)
                        and ctx.qualname(n.func) == "torch.set_float32_matmul_precision"), None)
            if own is not None:  # RWKV-v8: `...matmul.allow_tf32=True; ...; torch.set_float32_matmul_precision('high')`
                ctx.note(hit, f"not rewritten: the module sets the matmul precision itself (line {own.lineno}); "
                              "a second call would repeat or contradict it. Keep one of the two by hand")
                return None
            return ctx.propose(
                hit, assign, "Assign",
                "Use `torch.set_float32_matmul_precision({})` (also sets the CPU matmul precision)".format(
                    '"high" if ... else "highest"' if value is None else f'"{precision}"'),
                {"call": "torch.set_float32_matmul_precision", "args": [precision], "chosen": value is None},
                applicability="unsafe")
        if qual == "torch.backends.cudnn.deterministic":
            if value is not True:
                ctx.note(hit, f"not rewritten: it only turns cuDNN determinism off (the default); {_HARMLESS}")
                return None
            ctx.note(hit, "not rewritten: other code may read the flag (classy_vision's `copy_model_to_gpu` turns the "
                          "cuDNN autotuner on when it is False), and the every-device switch, "
                          "`torch.use_deterministic_algorithms(True, warn_only=True)`, is global and much stricter "
                          "(every op; on Trainium it turns off the fusion of queued eager operations). Keep the flag, "
                          "and add that call by hand where runs must be reproducible on every device; "
                          f"{_HARMLESS}")
            return None
        if qual == "torch.backends.cudnn.benchmark":
            if value is not True:
                ctx.note(hit, "not removed: `benchmark = False` is the default, but it also switches off an "
                              "autotuner turned on earlier (by this program or a library), and with cuDNN "
                              "determinism it keeps cuDNN to its one default algorithm, so removing it could "
                              f"change which kernels run on CUDA; there is no device-agnostic switch; {_HARMLESS}")
                return None
            ctx.note(hit, "not removed: the cuDNN autotuner makes CUDA convolutions faster (and picks its kernels per "
                          "run); there is no device-agnostic switch, and removing it would slow GPU runs down; "
                          f"{_HARMLESS}")
            return None
        if qual == "torch.backends.cudnn.allow_tf32":
            if value is True:
                other = _other_conv_precision(ctx, assign)
                if other is not None:
                    ctx.note(hit, f"not removed: `True` is PyTorch's default, but this module also sets `{ctx.segment(other)}` "
                                  f"(line {other.lineno}), which this line may undo on CUDA; {_HARMLESS}")
                    return None
                off = _project_turns_conv_tf32_off(getattr(ctx, "path", "") or "")
                if off:
                    ctx.note(hit, f"not removed: `True` is PyTorch's default, but the project turns it off ({off}), "
                                  f"which this line may undo on CUDA in the same process (a test run); {_HARMLESS}")
                    return None
                return self._plan_removal(
                    ctx, hit, assign, "Remove `cudnn.allow_tf32 = True`: it restates PyTorch's default (TF32 "
                                      "for cuDNN convolutions); unsafe: on CUDA it would undo a `False` set elsewhere")
            ctx.note(hit, "not rewritten: it sets TF32 for cuDNN convolutions; `torch.set_float32_matmul_precision` "
                          f"covers matrix multiplications only, so there is no device-agnostic equivalent; {_HARMLESS}")
            return None
        ctx.note(hit, f"not rewritten: no device-agnostic equivalent; {_HARMLESS}")
        return None

    def _plan_removal(self, ctx, hit, stmt: ast.stmt, message: str):
        parent, block = _block_of(ctx, stmt)
        if block is None:
            return None
        if len(block) == 1 and not isinstance(parent, ast.Module):
            ctx.note(hit, f"not removed: it is alone in its block, which would be left empty; {_HARMLESS}")
            return None
        if any(s is not stmt and (s.lineno <= stmt.end_lineno and stmt.lineno <= (s.end_lineno or s.lineno))
               for s in block):
            ctx.note(hit, "not removed: it shares its line with other statements")
            return None
        line = stmt.lineno
        text_line = ctx.lines.line(line - 1) if line > 1 else ""
        if line > 1 and any(c_line == line - 1 and not text_line[: col - 1].strip()
                            for c_line, col, _ in module_comments(ctx)):
            ctx.note(hit, "not removed: the comment above it would be lost or left describing other code; remove it by hand")
            return None
        if stmt is block[-1]:  # nothing below to keep the comments above it
            since = (block[-2].end_lineno or block[-2].lineno) if len(block) > 1 else 0
            if any(since < c_line < line for c_line, _, _ in module_comments(ctx)):
                ctx.note(hit, "not removed: the comment above it would be lost; remove it by hand")
                return None
        kind = "Module" if isinstance(parent, ast.Module) else "IndentedBlock"
        return ctx.propose(hit, stmt, kind, message, {"remove_line": line}, applicability="unsafe")

    def _plan_sdp_kernel(self, ctx, hit, call: ast.Call):
        if not ctx.allows("2.5"):
            ctx.note(hit, "not rewritten: `torch.nn.attention.sdpa_kernel` with SDPBackend.CUDNN_ATTENTION needs "
                          "PyTorch 2.5; raise --min-torch")
            return None
        if len(call.args) > len(_SDP_PARAMS) or any(isinstance(a, ast.Starred) for a in call.args):
            ctx.note(hit, "not rewritten: the arguments are not spelled out")
            return None
        flags = dict.fromkeys(_SDP_PARAMS, True)
        given = list(zip(_SDP_PARAMS, call.args))
        for kw in call.keywords:
            if kw.arg not in _SDP_PARAMS:
                ctx.note(hit, "not rewritten: the arguments are not spelled out" if kw.arg is None
                         else f"not rewritten: unknown argument `{kw.arg}=`")
                return None
            given.append((kw.arg, kw.value))
        for name, value in given:
            flag = _bool(value)
            if flag is None:
                ctx.note(hit, f"not rewritten: `{name}` is not a literal True/False; list the backends by hand "
                              "in `torch.nn.attention.sdpa_kernel([...])`")
                return None
            flags[name] = flag
        backends = [backend for param, backend in _SDP_BACKENDS if flags[param]]
        bindings = ctx.import_bindings
        importable = all(ctx.bound.get(n, 0) == 0 or bindings.get(n) == f"torch.nn.attention.{n}"
                         for n in ("sdpa_kernel", "SDPBackend"))
        data = {"backends": backends, "names": "import" if importable else "dotted"}
        if isinstance(call.func, ast.Name):
            data["unimport"] = call.func.id
        return ctx.propose(hit, call, "Call", "Use `torch.nn.attention.sdpa_kernel` (the same backends)", data,
                           applicability="safe")

    # ------------------------------------------------------------------ rewrite
    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        from ..decline import Decline

        if "backends" in data:
            return self._rewrite_sdp_kernel(rx, original, updated, data)
        if "call" in data:
            args = [cst.Arg(value=cst.SimpleString(f'"{a}"')) for a in data["args"]]
            if data.get("chosen"):  # the flag's own value picks the precision
                args = [cst.Arg(value=cst.IfExp(test=updated.value, body=cst.SimpleString('"high"'),
                                                orelse=cst.SimpleString('"highest"')))]
            call = cst.Call(func=rx.dotted(data["call"], original), args=args)
            return cst.Expr(value=call, semicolon=updated.semicolon)
        if "remove_line" in data:
            body = list(updated.body)
            index = next((i for i, s in enumerate(original.body)
                          if (p := rx.position(s)) is not None and p.start.line == data["remove_line"]), None)
            if index is None:
                raise Decline("the statement is not in this block any more")
            # ``updated`` is the block after the fixes of its children: one of them may have removed
            # or added a statement (a duplicate seed call goes), so the index into ``original`` is
            # not one into ``updated``. The statement itself is untouched (nothing else targets a flag
            # line); find its copy among the statements that are still equal to theirs.
            index = _same_statement(original.body, body, index)
            if index is None:
                raise Decline("the block changed around it in this pass; retried on the next")
            removed = body.pop(index)
            leading = list(getattr(removed, "leading_lines", ()))
            if index < len(body) and hasattr(body[index], "leading_lines"):
                # The blank lines and section comments above it (a blank line apart) stay where they were.
                body[index] = body[index].with_changes(leading_lines=[*leading, *body[index].leading_lines])
            elif any(line.comment is not None for line in leading):
                raise Decline("a comment above it would be lost")
            if not body and not isinstance(updated, cst.Module):
                raise Decline("the block would be empty")
            return updated.with_changes(body=body)
        raise Decline("nothing to rewrite")

    def _rewrite_sdp_kernel(self, rx, original, updated, data):
        import libcst as cst
        from libcst.codemod.visitors import AddImportsVisitor

        from ..nodes import attribute

        if data["names"] == "import":
            AddImportsVisitor.add_needed_import(rx.codemod, "torch.nn.attention", "SDPBackend")
            AddImportsVisitor.add_needed_import(rx.codemod, "torch.nn.attention", "sdpa_kernel")
            func: cst.BaseExpression = cst.Name("sdpa_kernel")
            enum: cst.BaseExpression = cst.Name("SDPBackend")
        else:
            func = rx.dotted("torch.nn.attention.sdpa_kernel", original)
            enum = rx.dotted("torch.nn.attention.SDPBackend", original)
        if data.get("unimport"):
            rx.remove_import_if_unused("torch.backends.cuda", data["unimport"])
        members = [attribute(enum, b) for b in data["backends"]]
        one_line = updated.with_changes(func=func, args=[cst.Arg(value=_list(members))])
        # Keep within the line length (black's layout): the list on its own line, then one per line.
        pos = rx.position(original)
        lines = split_lines(rx.module.tree.code)
        first, last = lines[pos.start.line - 1], lines[pos.end.line - 1]
        head, tail = first[: pos.start.column], last[pos.end.column:]
        if len(head) + len(rx.code(one_line)) + len(tail) <= DEFAULT_LINE_LENGTH:
            return one_line
        indent = first[: len(first) - len(first.lstrip())]
        inner = indent + "    "
        listed = _list(members)
        if len(inner) + len(rx.code(listed)) > DEFAULT_LINE_LENGTH:
            listed = _list(members, inner + "    ", inner)
        return updated.with_changes(
            func=func,
            whitespace_before_args=_newline(inner),
            args=[cst.Arg(value=listed, whitespace_after_arg=_newline(indent))],
        )


def _newline(indent: str):
    import libcst as cst

    return cst.ParenthesizedWhitespace(first_line=cst.TrailingWhitespace(), empty_lines=[], indent=False,
                                       last_line=cst.SimpleWhitespace(indent))


def _list(members, item_indent: str | None = None, close_indent: str = ""):
    """``[a, b, c]``, or one element per line (with a trailing comma) at ``item_indent``."""
    import libcst as cst

    if item_indent is None:
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        return cst.List(elements=[cst.Element(value=m, comma=comma if i < len(members) - 1 else cst.MaybeSentinel.DEFAULT)
                                  for i, m in enumerate(members)])
    elements = [cst.Element(value=m, comma=cst.Comma(whitespace_after=_newline(item_indent if i < len(members) - 1
                                                                              else close_indent)))
                for i, m in enumerate(members)]
    return cst.List(elements=elements, lbracket=cst.LeftSquareBracket(whitespace_after=_newline(item_indent)))


FIXER = BackendFlags()


def _same_statement(before, after, index: int):
    """The index in ``after`` (a block after its children were transformed) of ``before[index]``,
    or None when it cannot be told: the k-th statement equal to it in ``before`` is the k-th in
    ``after`` only when both hold as many equal ones."""
    target = before[index]
    same_before = [i for i, s in enumerate(before) if s.deep_equals(target)]
    same_after = [i for i, s in enumerate(after) if s.deep_equals(target)]
    if len(same_before) != len(same_after):
        return None
    return same_after[same_before.index(index)]
