"""Regional forms of aspect and the copula, said in the standard forms recall reads.

People talk to the robot in their own speech: 「今住んどるとこ、どこやっけ」 (western
Japan), 「今もランニングしよる？」 (Kyushu), 「何の仕事しとったかね」 (Nagoya). The readers of
intent, tense and slots know the standard forms (住んでいる, している, だっけ), so a query is
read after :func:`standard_forms` rewrites the few regional forms whose meaning is not in
doubt:

- the progressive and resultative ～とる / ～どる / ～とった (～ておる contracted) after a
  verb's te-stem: ～ている, ～ていた (住んどる, 行っとる, しとった, 覚えとる);
- Kyushu's progressive しよる / しよった: している / していた;
- the copula や before っけ and in やった + っけ / かな / かいな: だ (どこやっけ, 何型やったっけ).

A verb 取る (写真とる) or やる (宿題やった？) is left alone: the progressive needs a
te-stem before it, the copula a question ending after it.
"""

from __future__ import annotations

import re

_TE_STEM = "[っんいきぎしちにびみりえけげせぜてでねべめれ]"
_PROGRESSIVE = re.compile(rf"(?<={_TE_STEM})([とど])(る|った|ります|りました)")
_KYUSHU_PROGRESSIVE = re.compile(r"しよ(る|った)")
_COPULA = re.compile(r"や(っけ|ったっけ|ったかな|ったかいな|ったかね)")


def standard_forms(text: str) -> str:
    """``text`` with the regional forms above in their standard forms (see the module
    docstring); anything else unchanged."""
    text = _PROGRESSIVE.sub(_progressive, text)
    text = _KYUSHU_PROGRESSIVE.sub(lambda m: "している" if m.group(1) == "る" else "していた",
                                   text)
    return _COPULA.sub(lambda m: "だ" + m.group(1), text)


def _progressive(m: re.Match[str]) -> str:
    te = "て" if m.group(1) == "と" else "で"
    return te + {"る": "いる", "った": "いた", "ります": "います", "りました": "いました"}[
        m.group(2)]
