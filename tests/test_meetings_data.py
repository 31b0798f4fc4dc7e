"""The bundled meeting-note data: deterministic, faithful to the generator, names the training split never saw."""

import datetime
import json
import random
import re
from collections import Counter

import pytest

from training.data.make_meetings import (
    DATE_FORMATS, DEFAULT_OUTPUT_DIR, FAMILY_NAMES, GIVEN_NAMES, SPLIT_SIZES, TEMPLATES, english_ordinal,
    generate_splits, jsonl_lines, name_pools,
)

STRPTIME_FORMATS = ("%d %B %Y", "%B %d, %Y", "%d %b %Y", "%b %d, %Y", "%d/%m/%Y")


def bundled(split: str) -> list[dict]:
    return [json.loads(line) for line in (DEFAULT_OUTPUT_DIR / f"{split}.jsonl").read_text("utf-8").splitlines()]


def words(text: str) -> set[str]:
    """The words a `word` tokenizer sees (``\\w+``), lower-cased so that the check also holds for ``lowercase``."""
    return set(re.findall(r"\w+", text.lower()))


def parse_note(template: str, source: str) -> tuple[str, datetime.date]:
    """The name and the date a source written with `template` states."""
    pattern = re.escape(template).replace(re.escape("{name}"), "(?P<name>[A-Za-z' -]+)")
    pattern = pattern.replace(re.escape("{date}"), "(?P<date>.+)")
    match = re.fullmatch(pattern, source)
    assert match, (template, source)
    date_text = match["date"]
    if ordinal := re.fullmatch(r"the (\d+)([a-z]{2}) of (\w+ \d{4})", date_text):
        assert ordinal[2] == english_ordinal(int(ordinal[1])), source
        date_text = f"{ordinal[1]} {ordinal[3]}"
    dates = set()
    for form in STRPTIME_FORMATS:
        try:
            dates.add(datetime.datetime.strptime(date_text, form).date())
        except ValueError:
            pass
    assert len(dates) == 1, (source, dates)
    return match["name"], dates.pop()


def test_bundled_files_are_what_the_generator_writes_with_seed_0():
    for split, rows in generate_splits(seed=0).items():
        assert (DEFAULT_OUTPUT_DIR / f"{split}.jsonl").read_text("utf-8") == "".join(jsonl_lines(rows))


def test_generation_is_deterministic_per_seed():
    sizes = {"train": 50, "test": 20}
    assert generate_splits(seed=3, sizes=sizes) == generate_splits(seed=3, sizes=sizes)
    assert generate_splits(seed=3, sizes=sizes) != generate_splits(seed=4, sizes=sizes)


@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_every_target_is_the_name_and_the_date_the_source_states(split):
    rows = bundled(split)
    assert len(rows) == SPLIT_SIZES[split]
    for row in rows:
        date = datetime.date.fromisoformat(row["date"])
        assert datetime.date(1950, 1, 1) <= date <= datetime.date(2049, 12, 31)
        assert row["date"] == f"{date.year:04d}-{date.month:02d}-{date.day:02d}"
        assert row["target"] == f"{row['name']} | {row['date']}"
        *given, family = row["name"].split(" ")
        assert 1 <= len(given) <= 2 and family in FAMILY_NAMES and set(given) <= set(GIVEN_NAMES)
        assert parse_note(TEMPLATES[row["template"]], row["source"]) == (row["name"], date)


def test_notes_by_hand():
    date = datetime.date(2015, 3, 3)
    assert [form(date) for form in DATE_FORMATS.values()] == [
        "3 March 2015", "March 3, 2015", "3 Mar 2015", "Mar 3, 2015", "03/03/2015", "the 3rd of March 2015"]
    assert DATE_FORMATS["the dth of month yyyy"](datetime.date(2011, 11, 22)) == "the 22nd of November 2011"
    assert parse_note(TEMPLATES["lunch"], "lunch w/ Ngozi Adeyemi, 03/04/2015") == ("Ngozi Adeyemi",
                                                                                   datetime.date(2015, 4, 3))


def test_name_lists_are_large_and_no_word_is_shared():
    assert len(GIVEN_NAMES) >= 300 and len(FAMILY_NAMES) >= 300
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z'-]*", name) for name in GIVEN_NAMES + FAMILY_NAMES)
    counts = Counter(word for name in GIVEN_NAMES + FAMILY_NAMES for word in words(name))
    assert [word for word, count in counts.items() if count > 1] == []
    dates = [datetime.date(2015, month, day) for month in range(1, 13) for day in (1, 2, 3, 4, 11, 21)]
    note_words = {word for template in TEMPLATES.values() for form in DATE_FORMATS.values() for date in dates
                  for word in words(template.format(name="", date=form(date)))}
    assert not note_words & set(counts)


def test_name_pools_are_disjoint_and_cover_the_lists():
    pools = name_pools(random.Random(0))
    for names, index in ((GIVEN_NAMES, 0), (FAMILY_NAMES, 1)):
        cut = [pool[index] for pool in pools.values()]
        assert sorted(name for part in cut for name in part) == sorted(names)
        assert [round(len(part) / len(names), 2) for part in cut] == pytest.approx([0.7, 0.15, 0.15], abs=0.01)


def test_no_validation_or_test_name_word_occurs_in_training_and_no_source_in_two_splits():
    rows = {split: bundled(split) for split in SPLIT_SIZES}
    train_words = {word for row in rows["train"] for word in words(row["source"])}
    name_words = {split: {word for row in rows[split] for word in words(row["name"])} for split in SPLIT_SIZES}
    assert not name_words["validation"] & train_words and not name_words["test"] & train_words
    assert not name_words["validation"] & name_words["test"]
    sources = [row["source"] for split_rows in rows.values() for row in split_rows]
    assert len(set(sources)) == len(sources)
    assert {row["template"] for row in rows["train"]} == {row["template"] for row in rows["test"]} == set(TEMPLATES)
