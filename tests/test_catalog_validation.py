"""A malformed rule file is reported with its file name and the key at fault."""

import re

import pytest

from neuron_lint.catalog.loading import CatalogError, load_catalog_from, rules_dir

GOOD = (rules_dir() / "NRN103-torch-nested.toml").read_text()


def _load_with(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return load_catalog_from(tmp_path)


@pytest.mark.parametrize(
    "mutate,key",
    [
        (lambda t: t.replace('code = "NRN103"', 'code = "NRN13"'), "code"),
        (lambda t: t.replace('name = "torch-nested"', 'name = "Torch_Nested"'), "name"),
        (lambda t: t.replace('category = "unsupported"', 'category = "numerics"'), "category"),
        (lambda t: t.replace('confidence = "confirmed"', 'confidence = "maybe"'), "confidence"),
        (lambda t: t.replace('effort = "medium"', 'effort = "auto"'), "effort"),
        (lambda t: t.replace("[[match]]\nnames", "[[match]]\nnamez"), "match[0].namez"),
        (lambda t: t.replace('suggestion = ', 'sugestion = '), "sugestion"),
        (lambda t: t + '\n[fix]\nfixer = "cuda_call"\nsafety = "sometimes"\n', "fix.safety"),
        # A fixer or matcher that does not exist fails loading, instead of silently losing the fix.
        (lambda t: t + '\n[fix]\nfixer = "cuda_cal"\nsafety = "safe"\n', "fix.fixer"),
        # A bad example's stated span must read LINE:COL-END_LINE:END_COL.
        (lambda t: t.replace("bad = [\n", "bad = [\n{ code = 'x = torch.nested.nested_tensor(a)', span = '1:5' },\n", 1),
         "examples.bad[0].span"),
        (lambda t: t.replace("bad = [\n", "bad = [\n{ code = 'x = 1', where = '1:1-1:2' },\n", 1), "examples.bad[0]"),
        (lambda t: re.sub(r"\[\[match\]\]\nnames = \[[^\]]*\]", '[[match]]\nmatcher = "no_such_matcher"\ntrigger = ["x"]', t, count=1), "match[0].matcher"),
    ],
)
def test_mistakes_name_file_and_key(tmp_path, mutate, key):
    with pytest.raises(CatalogError) as exc:
        _load_with(tmp_path, "NRN103-torch-nested.toml", mutate(GOOD))
    assert "NRN103-torch-nested.toml" in str(exc.value)
    assert f"'{key}'" in str(exc.value)


def test_invalid_toml_names_the_file(tmp_path):
    with pytest.raises(CatalogError, match="NRN103-torch-nested.toml: not valid TOML"):
        _load_with(tmp_path, "NRN103-torch-nested.toml", GOOD + "\n[[[oops\n")


def test_too_few_examples(tmp_path):
    text = GOOD.replace("good = [\n'''\nnested", "good = [\n'''\nnested", 1)
    text = text[: text.index("good = [")] + "good = ['x = 1']\n"
    with pytest.raises(CatalogError, match="examples.good"):
        _load_with(tmp_path, "NRN103-torch-nested.toml", text)


def test_duplicate_codes_are_rejected(tmp_path):
    (tmp_path / "NRN103-torch-nested.toml").write_text(GOOD)
    (tmp_path / "NRN103-other.toml").write_text(GOOD.replace('name = "torch-nested"', 'name = "other"'))
    with pytest.raises(CatalogError, match="also used by"):
        load_catalog_from(tmp_path)


def test_shipped_catalog_loads():
    catalog = load_catalog_from(rules_dir())
    assert len(catalog.rules) >= 7
    assert all(r.source and r.rationale for r in catalog.rules)
