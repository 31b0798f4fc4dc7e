"""The bundled date data: deterministic, faithful to the generator, spans that state the target's fields."""

import datetime
import json

import pytest

from training.data.make_dates import (
    DEFAULT_OUTPUT_DIR, FIELDS, FORMATS, SPLIT_SIZES, TARGET_SPANS, generate_splits, jsonl_lines, read_field, render,
)


def bundled(split: str) -> list[dict]:
    return [json.loads(line) for line in (DEFAULT_OUTPUT_DIR / f"{split}.jsonl").read_text("utf-8").splitlines()]


def test_bundled_files_are_what_the_generator_writes_with_seed_0():
    for split, rows in generate_splits(seed=0).items():
        assert (DEFAULT_OUTPUT_DIR / f"{split}.jsonl").read_text("utf-8") == "".join(jsonl_lines(rows))


def test_generation_is_deterministic_per_seed():
    sizes = {"train": 50, "test": 20}
    assert generate_splits(seed=3, sizes=sizes) == generate_splits(seed=3, sizes=sizes)
    assert generate_splits(seed=3, sizes=sizes) != generate_splits(seed=4, sizes=sizes)


@pytest.mark.parametrize("split", list(SPLIT_SIZES))
def test_every_span_states_its_field_and_the_target_is_a_real_iso_date(split):
    rows = bundled(split)
    assert len(rows) == SPLIT_SIZES[split]
    for row in rows:
        date = datetime.date.fromisoformat(row["target"])
        assert row["target"] == f"{date.year:04d}-{date.month:02d}-{date.day:02d}"
        assert list(row["source_spans"]) == list(FIELDS) and row["target_spans"] == TARGET_SPANS
        for field, (start, end) in row["source_spans"].items():
            assert 0 <= start < end <= len(row["source"])
            assert read_field(field, row["source"][start:end]) == getattr(date, field), (row, field)
            target_start, target_end = row["target_spans"][field]
            assert int(row["target"][target_start:target_end]) == getattr(date, field)


def test_spans_by_hand():
    date = datetime.date(2015, 3, 3)
    source, spans = render(FORMATS["fr"]["weekday d month yyyy"](date))
    assert (source, spans) == ("mardi 3 mars 2015", {"year": [13, 17], "month": [8, 12], "day": [6, 7]})
    source, spans = render(FORMATS["en"]["m/d/yy"](date))
    assert (source, spans) == ("3/3/15", {"year": [4, 6], "month": [0, 1], "day": [2, 3]})
    assert render(FORMATS["en"]["dth of month yyyy"](datetime.date(2011, 11, 22)))[0] == "22nd of November 2011"
    assert render(FORMATS["de"]["weekday, d. month yyyy"](date))[0] == "Dienstag, 3. März 2015"
    assert render(FORMATS["fr"]["le d month yyyy"](datetime.date(1999, 1, 1)))[0] == "le 1er janvier 1999"
    assert read_field("year", "49") == 2049 and read_field("year", "50") == 1950


def test_splits_share_no_source_and_cover_every_language_and_format():
    rows = {split: bundled(split) for split in SPLIT_SIZES}
    sources = [row["source"] for split_rows in rows.values() for row in split_rows]
    assert len(set(sources)) == len(sources)
    all_formats = {(language, name) for language, formats in FORMATS.items() for name in formats}
    assert {(row["language"], row["format"]) for row in rows["train"]} == all_formats
    assert {(row["language"], row["format"]) for row in rows["test"]} == all_formats


def test_distinct_splits_redraw_a_source_seen_in_any_earlier_split():
    from training.data.generated import distinct_splits

    draws = iter(["a", "b", "a", "c", "b", "d", "e"])
    splits = distinct_splits({"train": 2, "test": 3}, lambda split: {"source": next(draws), "split": split})
    assert [[row["source"] for row in rows] for rows in splits.values()] == [["a", "b"], ["c", "d", "e"]]
    assert {row["split"] for row in splits["test"]} == {"test"}
