"""A pushed moment journaled as an exchange: the robot spoke first.

A moment said to an idle robot is not part of any turn, so it is written here as one:
an exchange of the person's with nothing heard (``user_text`` empty) and the robot's
line as the reply, its id ``moment-<key>`` (the moment's key names its memory and kind:
why it was said; the console's feed shows it under the same id). Journaled like a
turn's exchange, it reaches what reads the journal — extraction, which reads it with
the person's answer after it — and the short-term history, so the answer right after
(「うん、雨みたいだけど」) is understood as one to the robot's line. A moment opening a
conversation needs none of this: it is the first words of that turn's reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from omoide.types import Exchange

if TYPE_CHECKING:
    from omoide.moments.delivery import Delivery
    from omoide.pipeline.history import ConversationHistory

EXCHANGE_PREFIX = "moment-"


def moment_exchange(delivery: Delivery) -> Exchange:
    """The exchange a pushed moment is journaled as (the same id every time: a moment
    journaled twice is one exchange)."""
    moment = delivery.moment
    return Exchange(f"{EXCHANGE_PREFIX}{moment.key}", moment.person, "", delivery.text,
                    delivery.at)


class ExchangeJournal(Protocol):
    """The memory service's part a pushed moment is written to
    (:class:`omoide.components.memory_types.MemoryService`)."""

    async def record_exchange(self, exchange: Exchange) -> None: ...

    def note_turn_completed(self, exchange: Exchange) -> None: ...


class MomentJournal:
    """Writes each pushed moment to the memory's journal (extraction is scheduled as
    after a turn) and to the assistant's short-term history."""

    def __init__(self, memory: ExchangeJournal | None,
                 history: ConversationHistory | None) -> None:
        self.memory = memory
        self.history = history

    async def __call__(self, delivery: Delivery) -> None:
        exchange = moment_exchange(delivery)
        if self.history is not None:
            self.history.add(exchange)
        if self.memory is not None:
            await self.memory.record_exchange(exchange)
            self.memory.note_turn_completed(exchange)
