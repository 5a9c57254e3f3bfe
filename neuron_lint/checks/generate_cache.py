"""NRN407: Hugging Face ``generate()`` without a static cache."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from ..catalog.registry import matcher

if TYPE_CHECKING:
    from ..engine.semantic import SemanticModel


#: Keywords only Hugging Face's `generate()` takes in practice; one must be present.
_HF_GENERATE_KEYWORDS = frozenset({"max_new_tokens", "do_sample", "num_beams", "top_p", "num_return_sequences"})

#: Keywords that choose (or may carry) the cache: the call is then left alone.
_CACHE_KEYWORDS = frozenset({"cache_implementation", "generation_config", "past_key_values", "compile_config"})


@matcher(ast.Call)
def hf_generate_without_static_cache(model: SemanticModel, node: ast.Call) -> Iterable[tuple[ast.AST, str]]:
    """``model.generate(..., max_new_tokens=...)`` in a file using transformers, with no cache choice."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr != "generate":
        return
    names = {kw.arg for kw in node.keywords}
    if not names & _HF_GENERATE_KEYWORDS or names & _CACHE_KEYWORDS:
        return
    if model.qualname(func) is not None or not model.binds_package("transformers"):
        return  # `module.generate(...)` is a function, not a model method
    yield func, "generate"
