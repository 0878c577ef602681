"""A typed facade over the broadcast and observer hooks.

pluggy's call sites are untyped (``pm.hook.prompt_sections(context=...)`` returns a
list of whatever each plugin returned); the core calls hooks only through this class,
which flattens, type-checks and isolates failures.
"""

from __future__ import annotations

import logging

import pluggy

from omoide.pipeline.prompt import PromptContext, PromptSection
from omoide.pipeline.turn import CompletedTurn

log = logging.getLogger("omoide.hooks")


class Hooks:
    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm

    def prompt_sections(self, context: PromptContext) -> list[PromptSection]:
        """Every plugin's sections for this turn, sorted by ``order`` then name.

        A contribution that is not a list of :class:`PromptSection` is dropped with a
        warning naming nothing secret.
        """
        sections: list[PromptSection] = []
        for contributed in self.pm.hook.prompt_sections(context=context):
            if contributed is None:
                continue
            for section in contributed:
                if isinstance(section, PromptSection):
                    sections.append(section)
                else:
                    log.warning("ignoring a prompt section of type %s", type(section).__name__)
        return sorted(sections, key=lambda s: (s.order, s.name))

    def turn_completed(self, turn: CompletedTurn) -> None:
        """Tell every observer; one failing observer does not stop the others."""
        for impl in reversed(self.pm.hook.on_turn_completed.get_hookimpls()):
            try:
                impl.function(turn=turn)
            except Exception:
                log.exception("on_turn_completed observer %s failed", impl.plugin_name)
