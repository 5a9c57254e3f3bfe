"""The user's cache folder for neuron-lint: ``$XDG_CACHE_HOME/neuron-lint`` (default
``~/.cache/neuron-lint``), outside every project. It holds the key that signs the project caches'
entries (:mod:`neuron_lint.engine.cache`) and the parsed rule catalog
(:mod:`neuron_lint.catalog.stored`)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path | None:
    """The folder (not created here), or None without a home."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "neuron-lint"
