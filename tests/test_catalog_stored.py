"""The parsed rule catalog kept between runs (``catalog/stored.py``): a changed rule file is read
again, and a stored copy that is broken, foreign or turned off is never used."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from neuron_lint.catalog.loading import CatalogError, load_catalog_from, rules_dir

RULES = ["NRN101-torch-sparse.toml", "NRN201-cuda-call.toml"]


@pytest.fixture
def rules(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir()
    for name in RULES:
        shutil.copy(rules_dir() / name, folder / name)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("NEURON_LINT_NO_CACHE", raising=False)
    return folder


def _stored(rules: Path) -> list[Path]:
    return sorted((rules.parent / "cache" / "neuron-lint").glob("catalog-*.json"))


def _edit_message(path: Path, message: str) -> None:
    text = path.read_text(encoding="utf-8")
    start = text.index("\nmessage = ")
    end = text.index("\n", start + 1)
    path.write_text(text[:start] + f"\nmessage = {json.dumps(message)}" + text[end:], encoding="utf-8")


def test_second_load_uses_the_stored_copy_and_gives_the_same_rules(rules):
    first = load_catalog_from(rules)
    assert len(_stored(rules)) == 1
    assert load_catalog_from(rules) == first


def test_a_changed_rule_file_is_read_again(rules):
    load_catalog_from(rules)
    _edit_message(rules / RULES[0], "sparse tensors are not supported (edited)")
    assert load_catalog_from(rules).get("NRN101").message == "sparse tensors are not supported (edited)"


def test_invalid_toml_is_reported_after_a_good_load(rules):
    load_catalog_from(rules)
    (rules / RULES[1]).write_text("code = \n", encoding="utf-8")
    with pytest.raises(CatalogError, match=RULES[1]):
        load_catalog_from(rules)


@pytest.mark.parametrize("damage", ["garbage", "wrong shape", "others may write"])
def test_a_broken_or_foreign_stored_copy_is_not_used(rules, damage):
    good = load_catalog_from(rules)
    (stored,) = _stored(rules)
    if damage == "garbage":
        stored.write_bytes(b"\x00not json")
    else:
        data = json.loads(stored.read_text())
        data[0]["message"] = "planted"
        stored.write_text(json.dumps(data if damage != "wrong shape" else data[:1]))
        if damage == "others may write":
            os.chmod(stored, 0o666)
    assert load_catalog_from(rules) == good


def test_no_stored_copy_with_the_cache_turned_off(rules, monkeypatch):
    monkeypatch.setenv("NEURON_LINT_NO_CACHE", "1")
    load_catalog_from(rules)
    assert _stored(rules) == []
