"""Every rule's own examples are tests: each `bad` snippet produces the rule, no `good` one does.

The docs (`neuron-lint rule CODE`) show the same snippets, so the docs and the tests are one thing.
"""

import pytest

from neuron_lint.api import check_source
from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings

CATALOG = load_catalog()
ALL = Settings(extend_select=("NRN",))


def _cases(kind):
    for rule in CATALOG.rules:
        if rule.manifest_only:
            continue  # manifest text, not Python: tests/test_manifests.py runs these examples
        for i, snippet in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, snippet, id=f"{rule.code}-{kind}-{i}")


@pytest.mark.parametrize("rule,snippet", list(_cases("bad")))
def test_bad_example_is_flagged(rule, snippet):
    codes = [f.code for f in check_source(snippet, "example.py", ALL)]
    assert rule.code in codes, f"{rule.file}: bad example not flagged:\n{snippet}"


def _spanned():
    for rule in CATALOG.rules:
        for i, (snippet, span) in enumerate(zip(rule.bad, rule.bad_spans)):
            if span is not None:
                yield pytest.param(rule, snippet, span, id=f"{rule.code}-bad-{i}")


@pytest.mark.parametrize("rule,snippet,span", list(_spanned()))
def test_bad_example_is_flagged_where_it_says(rule, snippet, span):
    """A `bad` example that states its span (`{ code = ..., span = "L:C-L:C" }`) is flagged there."""
    spans = [(f.line, f.col, f.end_line, f.end_col) for f in check_source(snippet, "example.py", ALL)
             if f.code == rule.code]
    assert span in spans, f"{rule.file}: expected {rule.code} at {span}, found it at {spans}:\n{snippet}"


def test_enough_bad_examples_state_their_span():
    """The rules whose finding could land on more than one part of a line say which part."""
    assert sum(span is not None for rule in CATALOG.rules for span in rule.bad_spans) >= 8


@pytest.mark.parametrize("rule,snippet", list(_cases("good")))
def test_good_example_is_not_flagged(rule, snippet):
    findings = [f for f in check_source(snippet, "example.py", ALL) if f.code == rule.code]
    assert not findings, f"{rule.file}: good example flagged: {findings[0].message}\n{snippet}"


@pytest.mark.parametrize("rule,snippet", list(_cases("bad")))
def test_prefilter_keeps_every_bad_example(rule, snippet):
    """The text prefilter must never hide a real finding."""
    from neuron_lint.catalog.index import build_index
    from neuron_lint.catalog.prefilter import may_match

    index = build_index(CATALOG, frozenset({rule.code}))
    assert may_match(snippet, index)


def test_every_family_has_rules():
    families = {r.family for r in CATALOG.rules}
    assert {"1", "2", "3"} <= families
