"""NRN711 (unsafe): delete a statement that sets or unsets a PJRT/XLA environment variable."""

from __future__ import annotations

from ..xla_common import plan_env_delete


class XlaEnv:
    name = "xla_env"

    def plan(self, ctx, hit):
        if hit.match.kind != "matcher" or "xla_env_var" not in hit.match.patterns:
            ctx.note(hit, "not rewritten: replace it with the native setting by hand")
            return None
        return plan_env_delete(ctx, hit, "Delete the PJRT/XLA runtime setting", None)

    def rewrite(self, rx, original, updated, data):
        import libcst as cst

        return cst.RemovalSentinel.REMOVE


FIXER = XlaEnv()
