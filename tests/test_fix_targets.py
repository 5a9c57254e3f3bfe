"""Every PyTorch API a fix can write exists in a real torch==2.13.0 install (the `[test]` extra).

Targets come from the catalog (each `[fix.map]` entry) and from the fixed text of every example:
any `torch.x.y` written there must resolve in the installed torch.
"""

import ast
import inspect
import re

import pytest

from neuron_lint.catalog import load_catalog
from neuron_lint.fixes import version_tuple
from neuron_lint.fixes.device import IDIOM

torch = pytest.importorskip("torch")
CATALOG = load_catalog()


def _map_targets():
    for rule in CATALOG.rules:
        if rule.fix is None:
            continue
        for source, entry in rule.fix.map.items():
            if isinstance(entry, dict) and "target" in entry:
                yield pytest.param(source, entry, id=f"{rule.code}:{source}")


def _written_names():
    """Dotted torch names in every `fixed` / `after` text (aliases such as `th` mapped back to torch)."""
    names = set()
    for rule in CATALOG.rules:
        texts = list(rule.fixed) + [c["after"] for c in rule.fix_cases]
        for text in texts:
            tree = ast.parse(text)
            aliases = {a.asname or a.name: a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute):
                    parts = []
                    cur = node
                    while isinstance(cur, ast.Attribute):
                        parts.append(cur.attr)
                        cur = cur.value
                    if isinstance(cur, ast.Name) and aliases.get(cur.id, "").split(".")[0] == "torch":
                        names.add(".".join([aliases[cur.id], *reversed(parts)]))
    return sorted(names)


def resolve(dotted: str):
    obj = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("source,entry", list(_map_targets()))
def test_every_mapped_target_exists_and_is_callable(source, entry):
    target = entry["target"]
    value = eval(target, {"torch": torch})  # e.g. torch.get_device_module().stream
    assert callable(value), f"{target} is not callable"
    version_tuple(entry.get("since", "2.6"))
    assert version_tuple(entry.get("since", "2.6")) <= (2, 13), f"{target}: since {entry['since']} is newer than 2.13"


@pytest.mark.parametrize("dotted", _written_names())
def test_every_name_in_fixed_examples_exists(dotted):
    resolve(dotted)


def test_the_device_idiom_and_fixer_targets_run_on_this_cpu_host():
    device = eval(IDIOM.format(t="torch"), {"torch": torch})
    assert isinstance(device, torch.device)
    assert device.type == (torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu")
    # targets the fixers write themselves
    with torch.autocast(device.type, enabled=True, dtype=torch.bfloat16, cache_enabled=True):
        pass
    assert list(inspect.signature(torch.amp.GradScaler).parameters)[0] == "device"
    torch.amp.GradScaler(device.type, init_scale=1024)
    assert torch.distributed.get_default_backend_for_device(device) in ("gloo", "nccl", "neuron")
    assert torch.distributed.get_default_backend_for_device(torch.device("cuda")) == "nccl"


def test_written_names_are_collected():
    names = _written_names()
    assert "torch.accelerator.current_accelerator" in names and "torch.amp.GradScaler" in names
    assert re.search(r"torch\.accelerator\.synchronize", " ".join(names))
