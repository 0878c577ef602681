"""The current version wins: a candidate a newer memory replaced (its job, home, habit,
medication, a plan moved or called off; :mod:`omoide.memory.facts.validity`) gives its
place to the memory that holds now, unless the utterance asks about before
(前は, 昔, 以前, もともと, 去年は, 〜してた頃), when the old one is what it asks for: then
a candidate that replaced others brings them in (:func:`earlier_versions`).
"""

from __future__ import annotations

import re

from omoide.memory.index.person_index import UserIndex
from omoide.memory.recall.robust.query import PreparedQuery

_BEFORE = re.compile(
    r"(?<!この)(?<!その)(?<!こないだ)(?:前|まえ)(?:は|って|まで|に(?:は|さ))|(?:^|[はがって、\s])前の|"
    r"(?<!寝)[るすくむぶつうぐぬ]前(?:の|は|、|\s|(?=どこ|何|なに|いつ|誰))|"
    r"^(?:前|まえ)に?(?=[一-龥])(?![回日半年月週後者])|"
    r"以前|昔|むかし|もともと|元々|当時|去年は|昨年は|最初は|初めは|はじめは|"
    r"(?:てた|でた|だった|いた)(?:頃|ころ)")
"""A question about how things were before (not この前 "the other day"; 引っ越す前の家,
上京する前、どこで… and 前住んでた… are, 寝る前に is a time of day, 前回 the last time)."""


def asks_about_before(q: PreparedQuery) -> bool:
    """Whether ``q`` asks how things were before they changed (「前はどこに住んでたっけ」)."""
    return bool(_BEFORE.search(q.text))


def current_versions(index: UserIndex, q: PreparedQuery, candidates: set[str],
                     fused: dict[str, float], live: set[str] | None = None,
                     ) -> tuple[set[str], dict[str, float], dict[str, str]]:
    """The candidates with each replaced memory swapped for the one that holds now (which
    takes the better of the two scores), and which were swapped (old id -> current id).

    Nothing is swapped when ``q`` asks about before. ``live``: when given, a current
    version outside it (forgotten, or not indexed) is not brought in.
    """
    replaced = index.validity()
    if not replaced or asks_about_before(q) or not candidates & replaced.keys():
        return candidates, fused, {}
    out = set(candidates)
    scores = dict(fused)
    swapped: dict[str, str] = {}
    for c in sorted(candidates & replaced.keys()):
        now = index.current_version(c)
        if now == c or (live is not None and now not in live):
            continue
        out.discard(c)
        out.add(now)
        scores[now] = max(scores.get(now, 0.0), scores.pop(c, 0.0))
        swapped[c] = now
    return out, scores, swapped


def earlier_versions(index: UserIndex, q: PreparedQuery, candidates: set[str],
                     fused: dict[str, float]) -> tuple[set[str], dict[str, float], dict[str, str]]:
    """Asked about before (「前はどこで働いてたんだっけ」): each candidate that replaced
    other memories brings them in, and those they replaced in turn, ranked just above it,
    the nearer in the chain the higher (the answer is what it replaced: the new job's
    memory shares the words, the old one is asked for); and which were brought (old id
    -> the candidate that replaced it). Memories the extraction itself
    marked as replaced (corrections among them) are not brought back."""
    if not asks_about_before(q):
        return candidates, fused, {}
    replaced = index.validity()
    by_newer: dict[str, list[str]] = {}
    for old, validity in replaced.items():
        if validity.superseded_by is not None and old not in index.superseded:
            by_newer.setdefault(validity.superseded_by, []).append(old)
    out, scores, brought = set(candidates), dict(fused), {}
    for c in sorted(candidates & by_newer.keys()):
        # the whole chain, the one just before first (「上京する前」 may mean two jobs back)
        chain, depth, seen = list(by_newer[c]), 1, {c}
        while chain:
            older: list[str] = []
            for old in chain:
                if old in seen:
                    continue
                seen.add(old)
                out.add(old)
                scores[old] = max(scores.get(old, 0.0), scores[c] * (1.0 + 1e-6 / depth))
                brought[old] = c
                older.extend(by_newer.get(old, ()))
            chain, depth = older, depth + 1
    return out, scores, brought
