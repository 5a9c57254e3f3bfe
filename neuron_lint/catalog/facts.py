"""What the shipped catalog says about names, for the matchers that need it (given to them by the walker).

The checks never import the catalog (the catalog imports them to validate matcher names): the walker
hands this knowledge to the semantic model, see :meth:`neuron_lint.engine.semantic.SemanticModel.named_by_other_rule`.
"""

from __future__ import annotations

from .index import DottedIndex
from .loading import load_catalog

_SPECIFIC_CUDA_INDEX: DottedIndex | None = None


def specific_cuda_rule(qual: str) -> bool:
    """Does another rule of the catalog (enabled or not) name this ``torch.cuda`` member?

    The general finding (NRN212) is for what no specific rule knows: a user who ignores NRN203 for
    ``torch.cuda.is_available()`` does not get it back as NRN212.
    """
    global _SPECIFIC_CUDA_INDEX
    if _SPECIFIC_CUDA_INDEX is None:
        index = DottedIndex()
        for rule in load_catalog().rules:
            if rule.code == "NRN212":
                continue
            for m in rule.matches:
                if m.kind == "names":
                    for pattern in m.patterns:
                        if pattern.startswith("torch.cuda"):
                            index.add(pattern, (rule, m))
        _SPECIFIC_CUDA_INDEX = index
    return bool(_SPECIFIC_CUDA_INDEX.lookup(qual))
