"""CUDA device strings in their four forms, on both trees, and the current device's form of each.

``"cuda"`` (plain), ``"cuda:1"`` (indexed), ``f"cuda:{i}"`` (fstring), ``"cuda:{}".format(i)``,
``"cuda:%d" % i`` and ``"cuda:" + str(i)`` (format): :func:`literal_kind` tells them on the ``ast`` (planning),
:func:`cst_literal_kind` on LibCST (rewriting). :func:`convert` writes the current device's form of
one, :func:`word` the ``--device neuron`` form (only the word changes).
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize

from ..checks.device_strings import CUDA_FORMATS, CUDA_PERCENTS, cuda_concatenation
from .decline import Decline

#: ``"cuda"``, ``"cuda:3"``
_INDEXED = re.compile(r"^cuda:(\d+)$")
#: the device strings ``.format(i)`` and ``% i`` may build: "cuda:N"
_FORMATS, _PERCENTS = CUDA_FORMATS, CUDA_PERCENTS


def is_cuda_value(value) -> bool:
    return isinstance(value, str) and (value == "cuda" or bool(_INDEXED.match(value)))


def _kind(form: str, text) -> str | None:
    """The kind of a device string from its form and the literal text that decides it: the string
    itself (``"text"``), the leading text of an f-string (``"fstring"``), the string ``.format`` is
    called on (``"format"``) or the left operand of ``%`` (``"percent"``). Shared by both trees."""
    if not isinstance(text, str):
        return None
    if form == "text":
        return "plain" if text == "cuda" else ("indexed" if _INDEXED.match(text) else None)
    if form == "fstring":
        return "fstring" if text.startswith("cuda:") else None
    return "format" if text in (_FORMATS if form == "format" else _PERCENTS) else None


def literal_kind(node) -> str | None:
    """``"plain"`` (``"cuda"``), ``"indexed"`` (``"cuda:1"``), ``"fstring"`` (``f"cuda:{i}"``),
    ``"format"`` (``"cuda:{}".format(i)`` / ``"cuda:%d" % i``), or None."""
    form, text = "", None
    if isinstance(node, ast.Constant):
        form, text = "text", node.value
    elif _bare_fstring(node):  # `f"cuda"` (guided-diffusion's `dist_util.dev()`, copied into many projects)
        return "plain"
    elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        form, text = "fstring", node.values[0].value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
          and isinstance(node.func.value, ast.Constant)):
        form, text = "format", node.func.value.value
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        form, text = "percent", node.left.value
    elif cuda_concatenation(node):
        return "format"
    return _kind(form, text)


def _bare_fstring(node) -> bool:
    """``f"cuda"``: an f-string with nothing to format, CUDA's plain name."""
    return isinstance(node, ast.JoinedStr) and len(node.values) == 1 and isinstance(node.values[0], ast.Constant) \
        and node.values[0].value == "cuda"


_CST_KIND = {"plain": "SimpleString", "indexed": "SimpleString", "fstring": "FormattedString"}


def cst_kind(node) -> str:
    kind = literal_kind(node)
    if isinstance(node, ast.JoinedStr):
        return "FormattedString"
    if kind in _CST_KIND:
        return _CST_KIND[kind]
    return "Call" if isinstance(node, ast.Call) else "BinaryOperation"


def one_literal(ctx, node) -> bool:
    """Is the node's source one string literal (not ``"cu" "da"``, implicitly concatenated)?"""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(ctx.segment(node)).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        return False
    if sys.version_info >= (3, 12) and tokens and tokens[0].type == tokenize.FSTRING_START:
        depth = 0
        for i, t in enumerate(tokens):
            depth += t.type == tokenize.FSTRING_START
            depth -= t.type == tokenize.FSTRING_END
            if depth == 0:
                return i == len(tokens) - 1
        return False
    return len(tokens) == 1 and tokens[0].type == tokenize.STRING


def cst_literal_kind(node) -> str | None:
    """The CST counterpart of :func:`literal_kind`. (Plain type tests, not ``libcst.matchers``,
    whose import costs half a second in each process that rewrites a device string.)"""
    import libcst as cst

    if isinstance(node, cst.SimpleString):
        return _kind("text", node.evaluated_value)
    if isinstance(node, cst.FormattedString):
        if len(node.parts) == 1 and isinstance(node.parts[0], cst.FormattedStringText) and node.parts[0].value == "cuda":
            return "plain"  # f"cuda"
        if node.parts and isinstance(node.parts[0], cst.FormattedStringText):
            return _kind("fstring", node.parts[0].value)
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.SimpleString) \
            and node.func.attr.value == "format":
        return _kind("format", node.func.value.evaluated_value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.left, cst.SimpleString) and isinstance(node.operator, cst.Modulo):
        return _kind("percent", node.left.evaluated_value)
    if (isinstance(node, cst.BinaryOperation) and isinstance(node.left, cst.SimpleString) and isinstance(node.operator, cst.Add)
            and node.left.evaluated_value == "cuda:" and _str_call(node.right) is not None):
        return "format"
    return None


def _str_call(node):
    """The argument of ``str(x)`` (CST), or None."""
    import libcst as cst

    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "str"
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star):
        return node.args[0].value
    return None


def _swap_word(node):
    """``"cuda..."`` -> ``"neuron..."`` inside one string literal node (prefix and quotes kept)."""
    import libcst as cst

    if isinstance(node, cst.FormattedString):  # f"cuda": the word alone, as a plain string
        return cst.SimpleString(f"{node.end}neuron{node.end}")
    raw = node.raw_value
    if not raw.startswith("cuda"):
        raise Decline("the string does not start with `cuda`")
    return cst.SimpleString(f"{node.prefix}{node.quote}neuron{raw[4:]}{node.quote}")


def word(node):
    """With ``--device neuron``: only the word changes (``"cuda:1"`` -> ``"neuron:1"``)."""
    import libcst as cst

    kind = cst_literal_kind(node)
    if kind in ("plain", "indexed"):
        return _swap_word(node)
    if kind == "fstring":
        first = node.parts[0]
        return node.with_changes(parts=[first.with_changes(value="neuron" + first.value[4:]), *node.parts[1:]])
    if kind == "format":
        if isinstance(node, cst.Call):
            return node.with_changes(func=node.func.with_changes(value=_swap_word(node.func.value)))
        return node.with_changes(left=_swap_word(node.left))
    raise Decline("not a CUDA device string")


def _format_argument(node):
    """The index a ``"cuda:{}".format(i)`` / ``"cuda:%d" % i`` inserts."""
    import libcst as cst

    if isinstance(node, cst.Call):
        args = node.args
        if len(args) != 1 or args[0].keyword is not None or args[0].star:
            raise Decline("`.format(...)` takes something other than one index")
        return args[0].value, node.func.value
    if isinstance(node.operator, cst.Add):  # "cuda:" + str(i)
        return _str_call(node.right), node.left
    right = node.right
    if isinstance(right, cst.Tuple):
        if len(right.elements) != 1 or isinstance(right.elements[0], cst.StarredElement):
            raise Decline("`%` takes something other than one index")
        right = right.elements[0].value
    return right, node.left


def _embeddable(rx, expr, quote: str):
    """``(quote, expr)`` for an f-string holding ``expr``: the module's ``quote`` outside, with the
    string literals of ``expr`` turned to the other quote where they use it (what ruff format
    writes: LLaMA-Factory's ``"cuda:{}".format(os.getenv("LOCAL_RANK", "0"))`` becomes
    ``f"{...}:{os.getenv('LOCAL_RANK', '0')}"``); ``("", expr)`` when it cannot (a backslash, a
    comment, a line break, both quotes in one literal, or parentheses needed there)."""
    import libcst as cst

    if isinstance(expr, (cst.Lambda, cst.NamedExpr, cst.Dict, cst.Set, cst.DictComp, cst.SetComp)):
        return "", expr
    code = rx.code(expr)
    if any(c in code for c in "\\\n\r#") or code.lstrip().startswith("{"):
        return "", expr
    if quote not in code:
        return quote, expr
    other = "'" if quote == '"' else '"'

    class _Turn(cst.CSTTransformer):
        ok = True

        def visit_FormattedString(self, node) -> bool:
            self.ok = False  # an f-string inside: left as written
            return False

        def leave_SimpleString(self, original_node, updated_node):
            body = updated_node.value.lstrip("rRbBuU")
            if body[:1] != quote or body[:3] == quote * 3:
                return updated_node
            if other in body[1:-1]:
                self.ok = False
                return updated_node
            prefix = updated_node.value[: len(updated_node.value) - len(body)]
            return updated_node.with_changes(value=f"{prefix}{other}{body[1:-1]}{other}")

    turn = _Turn()
    turned = expr.visit(turn)
    if turn.ok and quote not in rx.code(turned):
        return quote, turned
    return (other, expr) if other not in code else ("", expr)


def convert(rx, site, node, data: dict, as_device: bool = False):
    """One CUDA device literal (CST ``node``) -> the current device's form."""
    import libcst as cst

    from .nodes import quote_of

    if data.get("device") == "neuron" or data.get("mode") == "word":
        return word(node)
    kind = cst_literal_kind(node)
    if kind == "plain":
        return rx.device(site, data) if as_device else rx.device_type(site, data)
    indexed = _with_index(rx, site, node, data, kind)
    if not data.get("load_location"):
        return indexed
    # `torch.load` restores nothing to "cpu:0" (it knows the CPU only as "cpu"): on a CPU-only host the
    # indexed form would fail to load, so the CPU gets its plain name and every accelerator its index
    quote = quote_of(node) if kind != "format" else '"'
    cpu = cst.SimpleString(f"{quote}cpu{quote}")
    test = cst.Comparison(rx.device_type(site, data), [cst.ComparisonTarget(cst.Equal(), cpu)])
    return cst.IfExp(test=test, body=cpu, orelse=indexed)


def _with_index(rx, site, node, data: dict, kind: str):
    """``"cuda:1"`` -> ``f"{DEVICE.type}:1"``, ``f"cuda:{i}"`` and its ``.format``/``%`` forms ->
    ``f"{DEVICE.type}:{i}"``."""
    import libcst as cst

    from .nodes import device_string_with_index, fstring, quote_of

    dev_type = rx.device_type(site, data)
    if kind == "indexed":
        return device_string_with_index(dev_type, node.evaluated_value[5:], quote_of(node))
    if kind == "fstring":
        first = node.parts[0]
        rest = [cst.FormattedStringText(first.value[4:]), *node.parts[1:]]
        return node.with_changes(parts=[cst.FormattedStringExpression(expression=dev_type), *rest])
    if kind == "format" and isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        # "cuda:" + str(i): only the literal changes, so the index keeps its own quotes (an f-string
        # around `d.get("gpu_id")` would take quotes ruff format turns round: TorchServe's handlers)
        return node.with_changes(left=fstring([dev_type, ":"], quote_of(node.left)))
    if kind == "format":
        index, base = _format_argument(node)
        quote, index = _embeddable(rx, index, quote_of(base))
        if not quote:
            raise Decline("the index cannot be written inside an f-string as it is")
        return fstring([dev_type, ":", index], quote)
    raise Decline("not a CUDA device string")


def rewrite_decided(rx, original, updated, data):
    """``"cuda" if "cuda" in device else "cpu"`` -> ``DEVICE.type if DEVICE.type in device else "cpu"``."""
    import libcst as cst

    def conv(node):
        return convert(rx, original, node, data, False)

    class _Tests(cst.CSTTransformer):
        def _operand(self, node):
            if cst_literal_kind(node) in ("plain", "indexed"):
                return conv(node)
            if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
                elements = [e.with_changes(value=conv(e.value)) if cst_literal_kind(e.value) in ("plain", "indexed") else e
                            for e in node.elements]
                return node.with_changes(elements=elements)
            return node

        def leave_Comparison(self, original_node, updated_node):
            ops = (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)
            if not all(isinstance(t.operator, ops) for t in updated_node.comparisons):
                return updated_node
            return updated_node.with_changes(
                left=self._operand(updated_node.left),
                comparisons=[t.with_changes(comparator=self._operand(t.comparator)) for t in updated_node.comparisons],
            )

        def leave_Call(self, original_node, updated_node):
            func = updated_node.func
            if (not updated_node.args and isinstance(func, cst.Attribute) and func.attr.value == "is_available"
                    and isinstance(func.value, cst.Attribute) and func.value.attr.value == "cuda"
                    and rx.code(func.value.value) == (rx.module.torch or "torch")):
                return updated_node.with_changes(func=rx.dotted("torch.accelerator.is_available", original))
            if (isinstance(func, cst.Attribute) and func.attr.value == "startswith" and len(updated_node.args) == 1
                    and cst_literal_kind(updated_node.args[0].value) in ("plain", "indexed")):
                arg = updated_node.args[0]
                return updated_node.with_changes(args=[arg.with_changes(value=conv(arg.value))])
            return updated_node

    body, orelse = updated.body, updated.orelse
    if cst_literal_kind(body) is not None:
        body = conv(body)
    if cst_literal_kind(orelse) is not None:
        orelse = conv(orelse)
    return updated.with_changes(body=body, orelse=orelse, test=updated.test.visit(_Tests()))


def index_of_kept_name(ctx, call) -> str:
    """The CUDA device name ``call`` is formatted into (``"cuda:{}".format(torch.cuda.current_device())``,
    ``f"cuda:{...}"``, ``"cuda:%d" % ...``) when no rule rewrites that name (pytext's ``device()``
    returns it: a string no device position holds), as written; else ``""``."""
    if call is None:
        return ""
    node, parent = call, ctx.parent(call)
    if isinstance(parent, ast.FormattedValue):
        node, parent = parent, ctx.parent(parent)
    elif isinstance(parent, ast.Tuple) and isinstance(ctx.parent(parent), ast.BinOp):
        node, parent = parent, ctx.parent(parent)
    held = isinstance(parent, ast.JoinedStr) or (
        isinstance(parent, ast.Call) and any(a is node for a in parent.args) and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "format") or (isinstance(parent, ast.BinOp) and parent.right is node)
    if not held or literal_kind(parent) not in ("fstring", "format") or id(parent) in ctx.flagged:
        return ""
    return ctx.segment(parent)[:50]
