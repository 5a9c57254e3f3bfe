"""The exception a fixer's ``rewrite`` raises to leave a site as it is.

Its own module so that everything on the rewrite side (:mod:`.rewrite`, :mod:`.scope`, the fixers
and their helpers) can raise it without importing the transformation that catches it.
"""

from __future__ import annotations


class Decline(Exception):
    """Raised by a fixer's ``rewrite`` that finds, on the concrete tree, that it cannot proceed."""
