"""One module per fixer, named after it; each defines ``FIXER`` (see :mod:`neuron_lint.fixes`).

Fixer modules import LibCST inside ``rewrite`` only: ``check`` plans fixes on every file and
must not pay LibCST's import time (about 0.4 s) for that.
"""
