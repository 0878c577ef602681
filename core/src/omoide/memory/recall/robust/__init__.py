"""The robust read engine: channels, rank fusion and an evidence gate.

1. The query copy is canonical (NFKC) with fillers and trailing marks stripped,
   so 「週末の予定覚えてる?」, 「…？」 and 「…」 are one query; its reading (katakana)
   and sound key (:mod:`omoide.memory.language.phonetic`) are taken too
   (:mod:`.query`).
2. Channels (:mod:`.channels`): dense (the embedder's query form vs the documents),
   lexical (Sudachi content words, readings and kanji; idf-weighted), sound (the
   person's own words heard approximately in the query: 数末 for 週末, セミ for ゼミ),
   entity (the names among them), temporal (the query's relative dates resolved
   against now, matched against each memory's dates; weekday habits for
   today/tomorrow; spoken date words also found by sound).
3. Gate (:mod:`.gate`), on evidence rather than one cosine, by what the utterance is
   (:mod:`omoide.memory.recall.intent`):

   - a command or a question about the world gets nothing;
   - a reference to the user's own memories (覚えてる, 〜だっけ, 予定, 私の…) gets the
     memories in the query's date range (narrowed by shared words when there are
     any), else those sharing words with it (exactly or by sound); dense evidence
     alone injects one memory only when it stands clearly apart (``dense_only_ratio``);
     「週末」 with nothing this weekend means the nearest weekend with a plan;
   - anything else about the user's life (contextual recall: 「箱根って寒いかな」
     「金曜日何時に帰れるかな」) gets the memories sharing a noun with it exactly,
     or dated within a few days it names.

4. Candidates are ordered by reciprocal-rank fusion of the channels (:mod:`.fusion`;
   newer first on ties); superseded memories never appear, nor do memories already in
   the profile block; at most ``max_results``. A candidate a newer memory replaced (the
   same slot of the same someone, or a change said: :mod:`omoide.memory.facts.validity`)
   gives its place to the current one, unless the utterance asks about before
   (:mod:`.currency`).

:func:`~.read.robust_read` runs these steps and says why in a
:class:`~.explanation.ReadExplanation` (the ``details`` of traces, ``/v1/turns`` and
``omoide eval --misses``). :class:`~.engine.RobustEngine` is this read path as the
``robust`` memory engine: it reads the core's per-person index and returns the
person's profile (lasting facts, every turn) with the episodic memories.

The modules import one another in that order (query, explanation, channels, gate,
fusion, currency, read, engine); none imports this package.
"""

from omoide.memory.recall.robust.channels import explain, weekend_fallback
from omoide.memory.recall.robust.engine import WARM_UP_QUERY, RobustEngine
from omoide.memory.recall.robust.explanation import ReadExplanation
from omoide.memory.recall.robust.fusion import MAX_POOL
from omoide.memory.recall.robust.gate import wants_embedding
from omoide.memory.recall.robust.query import PreparedQuery, heard_date_words, prepare
from omoide.memory.recall.robust.read import RobustResult, robust_read

__all__ = ["MAX_POOL", "WARM_UP_QUERY", "PreparedQuery", "ReadExplanation", "RobustEngine",
           "RobustResult", "explain", "heard_date_words", "prepare", "robust_read",
           "wants_embedding", "weekend_fallback"]
