"""A finding's message and suggestion, from its rule and the match that fired."""

from __future__ import annotations


def finding_text(rule, match, subject: str) -> tuple[str, str]:
    """The match's own message and suggestion (else the rule's), with ``{name}`` set to ``subject``.

    ``rule`` and ``match`` are a :class:`~neuron_lint.catalog.loading.Rule` and one of its ``Match``es.
    """
    message = (match.message or rule.message).replace("{name}", subject)
    suggestion = (match.suggestion or rule.suggestion).replace("{name}", subject)
    return message, suggestion
