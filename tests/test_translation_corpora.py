"""The translation corpora's data scripts: training/data/parallel_corpus.py, make_de_en.py and make_bible.py.

Hand-written fixtures pin exactly which pairs come out, what is dropped and where each lands: the split is by SHA-256
(first hex digits of each key noted beside it, ``hashlib.sha256(key.encode()).hexdigest()``), lowest hash first to
test. One test each reads the real installed sources (Debian trans-de-en, sword-text-web, sword-text-sparv; .ci/run
installs them)."""

import json
from collections import Counter
from pathlib import Path

import pytest

from training.data import make_bible, make_de_en
from training.data.parallel_corpus import clean, deduplicate, normalise, split_by_hash, stable_hash

DING = """\
# Version :: test
Haus {n} | Häuser {pl} | Das Haus ist groß. :: house | houses | The house is big.
gehen {vi} | Wir gehen nach Hause. [ugs.] | Wie war der Besuch?; Wie viele Leute waren da? :: to go | We are going \
home. [coll.] | What was the attendance like?
Das Haus ist groß. :: The house is large.
Das Haus ist groß. :: The house is big.
Ihre Nachricht wurde gesendet / versendet. :: Your message was sent.
Die Beweislage ist dünn. :: The (nature of the) evidence is sparse.
Er sagte ... und ging. :: He said ... and left.
„Ich habe Hunger.“ „Ich auch.“ :: 'I’m hungry.' 'Me too.'
Übung macht den Meister. [Sprw.] :: Practice makes perfect. [prov.]
Ja. | Dr. | nichts zu machen! :: Yes. | Dr. | nothing doing!
Das ist ein sehr langer deutscher Satz mit vielen Wörtern. :: Yes it is.
Das  Cafe\u0301   ist  geschlossen. :: The café is closed.
"""
# the rows in file order, each with its hash: test takes the lowest, validation the next two
DING_ROWS = [
    ("Das Haus ist groß.", "The house is big."),  # 1e2ff633
    ("Wir gehen nach Hause.", "We are going home."),  # 66cf6225
    ("Wie war der Besuch?", "What was the attendance like?"),  # 8f2db00f
    ("„Ich habe Hunger.“ „Ich auch.“", "'I’m hungry.' 'Me too.'"),  # df2a2ef6
    ("Übung macht den Meister.", "Practice makes perfect."),  # 066ca9df
    ("Das Café ist geschlossen.", "The café is closed."),  # 21b8fef9, "Café" composed (NFC)
]


def read_splits(folder: Path) -> dict[str, list[dict]]:
    return {split: [json.loads(line) for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]
            for split in ("train", "validation", "test")}


def test_sha256_is_the_standard_one():
    # FIPS 180-2's example: SHA-256("abc")
    assert stable_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_normalise_composes_and_collapses_whitespace_only():
    assert normalise("  Cafe\u0301 \t au\n lait ’s  ") == "Caf\u00e9 au lait ’s"


def test_clean_counts_each_rejection():
    rows = [{"de": "a b", "en": "x y"}, {"de": " ", "en": "x"}, {"de": "a b c d", "en": "x"},
            {"de": "a b c", "en": "x"}, {"de": "a " * 6, "en": "x y z w v u"}]
    kept, rejected = clean(rows, ("de", "en"), max_words=5, max_ratio=3.0)
    assert kept == [{"de": "a b", "en": "x y"}, {"de": "a b c", "en": "x"}]  # 3 words against 1: ratio 3 is allowed
    assert rejected == Counter(empty_side=1, length_ratio=1, too_long=1)
    with pytest.raises(ValueError, match="max_ratio .* at least 1, got 0.5"):
        clean(rows, ("de", "en"), max_ratio=0.5)


def test_deduplicate_keeps_the_first_translation():
    rows = [{"de": "A.", "en": "X."}, {"de": "A.", "en": "Y."}, {"de": "B.", "en": "X."}, {"de": "A.", "en": "X."}]
    kept, dropped = deduplicate(rows, "de", "en")
    assert kept == [{"de": "A.", "en": "X."}, {"de": "B.", "en": "X."}]
    assert dropped == Counter(other_translation=1, duplicate_pair=1)


def test_split_sizes_are_checked():
    rows = [{"de": str(i)} for i in range(4)]
    with pytest.raises(ValueError, match=r"test_size \+ validation_size \(2 \+ 2\) must leave training rows out of 4"):
        split_by_hash(rows, lambda row: row["de"], 2, 2)
    with pytest.raises(ValueError, match="validation_size must be a positive number of rows, got 0"):
        split_by_hash(rows, lambda row: row["de"], 1, 0)


def test_ding_sentences_dedup_and_pinned_split(tmp_path):
    source = tmp_path / "de-en"
    source.write_text(DING, encoding="utf-8")
    stats = make_de_en.main(["--source_file", str(source), "--output_dir", str(tmp_path / "out"),
                             "--test_size", "1", "--validation_size", "2"])
    # not sentences: Haus {n}, Häuser {pl}, gehen {vi}, the "/", "(…)" and "..." lines, Ja., Dr., nichts zu machen!
    assert {key: stats[key] for key in ("not_sentence", "length_ratio", "other_translation", "duplicate_pair")} == {
        "not_sentence": 9, "length_ratio": 1, "other_translation": 1, "duplicate_pair": 1}
    splits = read_splits(tmp_path / "out")
    pairs = {split: [(row["de"], row["en"]) for row in rows] for split, rows in splits.items()}
    assert pairs == {"test": [DING_ROWS[4]], "validation": [DING_ROWS[0], DING_ROWS[5]],
                     "train": [DING_ROWS[1], DING_ROWS[2], DING_ROWS[3]]}
    assert stats["train_rows"] == 3 and stats["train_mean_words_de"] == round((4 + 4 + 5) / 3, 2)


def test_ding_line_without_aligned_parts_is_refused():
    with pytest.raises(ValueError, match=r"line 2 of the dictionary .* 'Haus \| Häuser :: house'"):
        list(make_de_en.candidate_pairs(["# comment", "Haus | Häuser :: house"]))


def test_osis_markup_is_removed_and_lost_spaces_restored():
    osis = ('<w lemma="strong:H0430">God</w><note placement="foot"><reference>1:1 </reference>Elohim.</note>'
            '<w lemma="strong:H1254">created</w> <q who="Jesus"><w>Omega</w>,</q><note>TR adds</note>'
            '<q>”</q><w>says</w> <speaker>Beloved</speaker> <l level="1" sID="x"/>kiss &amp; <title>A Psalm.</title>')
    assert make_bible.osis_to_text(osis) == "God created Omega,” says kiss & A Psalm."
    spanish = ('<w>y díjo</w><transChange type="added">le</transChange><w>Dios</w>: <w>Júrame</w>'
               '<transChange type="added">lo</transChange> <w>hay allí</w>'
               '<transChange type="added">también</transChange><w>bdelio</w>.')
    assert make_bible.osis_to_text(spanish) == "y díjole Dios: Júramelo hay allí también bdelio."


def fake_verses():
    """Gen 1 (3 verses, hash 6f05cdf6), Gen 2 (2, 596078cf), John 3 (4 + a duplicate, f68888ca), Ps 23 (2 + an empty
    one, 60b7ab7a), Ruth 1 (1, e053e95d); test takes Gen 2 then Ps 23 (4 verses >= 3), validation Gen 1 (3)."""
    chapters = {("Gen", 1): 3, ("Gen", 2): 2, ("John", 3): 4, ("Ps", 23): 2, ("Ruth", 1): 1}
    for (book, chapter), verses in chapters.items():
        for verse in range(1, verses + 1):
            yield book, chapter, verse, f"<w>{book}</w> {chapter} v{verse} en.", f"{book} {chapter} v{verse} es."
    yield "John", 3, 5, "Gen 1 v1 en.", "Gen 1 v1 es."  # the same pair as Gen 1:1
    yield "Ps", 23, 3, "<note>only a note</note>", "Ps 23 v3 es."


def test_bible_holds_out_whole_chapters():
    splits, counts = make_bible.make_splits(fake_verses(), test_size=3, validation_size=3)
    assert counts == Counter(duplicate_pair=1, empty_verse=1)
    references = {split: [row["reference"] for row in rows] for split, rows in splits.items()}
    assert references == {"test": ["Gen 2:1", "Gen 2:2", "Ps 23:1", "Ps 23:2"],
                          "validation": ["Gen 1:1", "Gen 1:2", "Gen 1:3"],
                          "train": ["Ruth 1:1", "John 3:1", "John 3:2", "John 3:3", "John 3:4"]}
    assert splits["test"][0] == {"en": "Gen 2 v1 en.", "es": "Gen 2 v1 es.", "book": "Gen", "chapter": 2,
                                 "verse": 1, "reference": "Gen 2:1"}
    chapters = {split: {(row["book"], row["chapter"]) for row in rows} for split, rows in splits.items()}
    assert not (chapters["train"] & chapters["test"] or chapters["train"] & chapters["validation"]
                or chapters["test"] & chapters["validation"])


@pytest.mark.skipif(not make_de_en.DEFAULT_SOURCE.is_file(), reason="apt-get install trans-de-en")
def test_real_ding_dictionary(tmp_path):
    stats = make_de_en.main(["--output_dir", str(tmp_path)])
    assert stats["validation_rows"] == stats["test_rows"] == 1000
    assert 14_000 <= stats["train_rows"] <= 17_000
    assert 6 <= stats["train_mean_words_de"] <= 9 and 6 <= stats["train_mean_words_en"] <= 9
    rows = [row for split in read_splits(tmp_path).values() for row in split]
    assert {"de": "Alle Rechte vorbehalten.", "en": "All rights reserved."} in rows
    assert len({row["de"] for row in rows}) == len(rows)  # no German sentence twice, so none in two splits


@pytest.mark.skipif(not (make_bible.DEFAULT_SWORD_PATH / "mods.d" / "spaRV1909eb.conf").is_file(),
                    reason="apt-get install sword-text-web sword-text-sparv")
def test_real_bibles():
    pytest.importorskip("pysword", reason="pip install pysword")
    verses = list(make_bible.read_bibles(make_bible.DEFAULT_SWORD_PATH, *make_bible.MODULES.values()))
    assert 31_000 <= len(verses) <= 31_200  # the Protestant canon's 31,102 verses (KJV numbering)
    john = next(verse for verse in verses if verse[:3] == ("John", 3, 16))
    rows, _ = make_bible.verse_rows([john])
    assert rows[0]["en"].startswith("For God so loved the world, that he gave his only born Son")
    assert rows[0]["es"].startswith("Porque de tal manera amó Dios al mundo")
