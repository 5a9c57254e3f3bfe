"""Python matchers that belong to one rule each, kept next to that rule's logic.

Each module registers its matchers in :data:`neuron_lint.matchers.MATCHERS` when imported;
:mod:`neuron_lint.matchers` imports them all.
"""

from . import device_comparison  # noqa: E402,F401  (registers its matcher)
from . import xla  # noqa: E402,F401  (registers the legacy-XLA matchers)
