"""The Japanese word classes: what each holds, how the narrow ones relate to the wide
ones, and that every reader takes its words from them (no literal list of them elsewhere)."""

from __future__ import annotations

import ast
import re
from datetime import datetime
from pathlib import Path

import pytest

from omoide.memory.facts.profile import Category, classify
from omoide.memory.language import word_classes as wc
from omoide.memory.language.lexicon import analyzer
from omoide.memory.recall.intent import detect
from omoide.types import Memory

ROOT = Path(__file__).resolve().parents[3]
CLASSES = {name: value for name, value in vars(wc).items()
           if name.isupper() and isinstance(value, tuple)}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_class_holds_each_word_once(name: str) -> None:
    words = CLASSES[name]
    assert len(set(words)) == len(words)


@pytest.mark.parametrize(("narrow", "wide"), [
    ("FIRST_PERSON_PRONOUNS", "FIRST_PERSON"),
    ("FIRST_PERSON_SEARCHED_ANYWHERE", "FIRST_PERSON_PRONOUNS"),
    ("FIRST_PERSON_LEMMAS", "FIRST_PERSON"),
    ("CLOSE_FAMILY", "FAMILY"),
    ("PARTNERS", "FAMILY"),
    ("CHILDREN", "FAMILY"),
    ("COMMON_PETS", "PETS"),
    ("WORKMATES", "PEOPLE_AROUND"),
    ("FRIENDS", "PEOPLE_AROUND"),
])
def test_a_narrow_class_is_part_of_its_wide_one(narrow: str, wide: str) -> None:
    assert set(CLASSES[narrow]) <= set(CLASSES[wide])


def test_first_person_is_the_pronouns_and_the_reflexive_self() -> None:
    assert (*wc.FIRST_PERSON_PRONOUNS, "自分") == wc.FIRST_PERSON


def test_kana_spellings_left_out_of_anywhere_searches_are_parts_of_other_words() -> None:
    left_out = set(wc.FIRST_PERSON_PRONOUNS) - set(wc.FIRST_PERSON_SEARCHED_ANYWHERE)
    assert left_out == {"わたし", "わたくし", "ぼく", "おれ"}
    ordinary = "お金をわたしました、ぼくじょうでおれいを言った、わたくしりつの学校"
    assert all(word in ordinary for word in left_out)


def test_sudachi_reads_every_first_person_word_as_one_of_the_lemmas() -> None:
    from omoide.memory.language.lexicon import analyzer
    if not analyzer().available:
        pytest.skip("Sudachi is not installed")
    for word in wc.FIRST_PERSON:
        first = analyzer().morphemes(word + "の")[0]
        assert first.normalized_form() in wc.FIRST_PERSON_LEMMAS, word


def test_an_alternation_matches_each_word_of_a_class_and_nothing_else() -> None:
    pattern = re.compile(wc.regex_alternation(wc.FIRST_PERSON))
    assert all(pattern.fullmatch(word) for word in wc.FIRST_PERSON)
    assert not pattern.fullmatch("あなた")
    assert re.fullmatch(wc.regex_alternation(["a.b"]), "a.b")
    assert not re.fullmatch(wc.regex_alternation(["a.b"]), "axb")


@pytest.mark.parametrize("word", wc.FIRST_PERSON)
def test_every_first_person_word_before_a_particle_speaks_of_the_user(word: str) -> None:
    assert "self" in detect(f"{word}の猫は三歳なんだ").markers


@pytest.mark.parametrize("word", wc.FAMILY)
def test_a_fact_about_any_family_word_is_a_family_fact(word: str) -> None:
    memory = Memory("m", "u", f"あなたの{word}は札幌に住んでいる。", datetime(2026, 10, 1),
                    kind="person")
    assert classify(memory, memory.created_at.date()).category is Category.FAMILY


# -- no literal list of these words outside word_classes ------------------------------

_WORDS = frozenset(w for words in CLASSES.values() for w in words)
_ALTERNATIVES = re.compile(r"\(\?:|[|()]")


def _sources() -> list[Path]:
    found = [*(ROOT / "core/src/omoide").rglob("*.py"),
             *(p for src in ROOT.glob("plugins/*/src") for p in src.rglob("*.py"))]
    return [p for p in found if p.name != "word_classes.py"]


def _literal_lists(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """Literal collections of two or more class words, and pattern strings with two or
    more class words as alternatives (``私|僕``)."""
    hits: list[tuple[int, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            words = [e.value for e in node.elts
                     if isinstance(e, ast.Constant) and e.value in _WORDS]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "|" in node.value:
            words = [part for part in _ALTERNATIVES.split(node.value) if part in _WORDS]
        else:
            continue
        if len(words) >= 2:
            hits.append((node.lineno, words))
    return hits


def test_no_module_declares_its_own_list_of_class_words() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {words}"
             for path in _sources()
             for line, words in _literal_lists(ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "take these from omoide.memory.language.word_classes:\n" + "\n".join(found)


def test_the_scan_finds_a_list_and_a_pattern_of_class_words() -> None:
    tree = ast.parse('A = ("妻", "夫")\nB = re.compile(r"(?:私|僕)の")\nC = "私の猫"\n')
    assert [line for line, _ in _literal_lists(tree)] == [1, 2]


def test_kin_said_any_way_is_one_person() -> None:
    """お袋, 母さん and ママ are the 母 of a memory; 親父 its 父."""
    def keys(text: str) -> set[str]:
        return {k for t in analyzer().analyse(text, query=True).terms for k in t.keys}
    assert {"母"} <= keys("お袋のいる施設の名前なんだっけ") & keys("母さんって元気かな") & keys("ママと買い物")
    assert "父" in keys("親父と釣りに行った")
