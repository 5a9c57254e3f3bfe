"""The ``enabled`` of an autocast or GradScaler a fix moves off CUDA: kept off on a CPU-only host, as
CUDA's were there."""

from __future__ import annotations


def _off_without_cuda(value) -> bool:
    """Is ``enabled=<value>`` already false where CUDA is missing: one of its ``and`` terms asks
    whether a device is CUDA's (``device.type == "cuda"``, FastVideo's Flux stages), or whether it
    is not the CPU (how NRN211 rewrites that test)?"""
    import libcst as cst

    pending, terms = [value], []
    while pending:
        v = pending.pop()
        if isinstance(v, cst.BooleanOperation) and isinstance(v.operator, cst.And):
            pending += [v.left, v.right]
        else:
            terms.append(v)
    for term in terms:
        for t in term.comparisons if isinstance(term, cst.Comparison) else ():
            said = t.comparator.evaluated_value if isinstance(t.comparator, cst.SimpleString) else None
            if isinstance(said, str) and (isinstance(t.operator, cst.Equal) and said.split(":")[0] == "cuda"
                                          or isinstance(t.operator, cst.NotEqual) and said == "cpu"):
                return True
    return False


def off_on_cpu(args: list, dev_type, off, enabled_at: int | None) -> list:
    """Keep the object off on a CPU-only host, as the CUDA one was there: ``torch.cuda.amp.autocast()``,
    ``GradScaler()`` and ``torch.autocast("cuda")`` switch themselves off where CUDA is missing, but
    ``torch.autocast("cpu")`` would run the model in bfloat16 and ``GradScaler("cpu")`` would scale.
    ``enabled`` becomes ``off``, ``<device type> != "cpu"`` (``<given> and <device type> != "cpu"``;
    :meth:`RewriteContext.on_an_accelerator`); ``enabled_at``: the position of a positional ``enabled``."""
    import libcst as cst

    from .decline import Decline
    from .nodes import keyword

    if isinstance(dev_type, cst.SimpleString):  # "neuron" (`--device neuron`): never the CPU
        return args
    if any(a.star == "**" for a in args):
        raise Decline("`**kwargs` may hold `enabled`, which has to keep the CPU off")
    positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
    for n, a in enumerate(args):
        if (a.keyword is not None and a.keyword.value == "enabled") or (
                a.keyword is None and enabled_at is not None and n in positional and positional.index(n) == enabled_at):
            v = a.value
            if isinstance(v, cst.Name) and v.value == "False":
                return args  # off everywhere already
            if isinstance(v, cst.Name) and v.value == "True":
                args[n] = a.with_changes(value=off)
                return args
            if _off_without_cuda(v):
                return args
            if not (v.lpar or isinstance(v, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))):
                v = v.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            args[n] = a.with_changes(value=cst.BooleanOperation(left=v, operator=cst.And(), right=off))
            return args
    new = keyword("enabled", off)
    if args and isinstance(args[-1].comma, cst.Comma):  # a trailing comma: the new argument takes it
        before = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))
        new = new.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=before)
    return [*args, new]
