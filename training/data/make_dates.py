"""Generate the bundled date-normalisation data: free-form dates in five languages → ISO 8601 "YYYY-MM-DD".

    python -m training.data.make_dates                # writes training/data/dates/{train,validation,test}.jsonl

Each line is one example::

    {"source": "mardi 3 mars 2015", "target": "2015-03-03", "language": "fr", "format": "weekday d month yyyy",
     "source_spans": {"year": [13, 17], "month": [8, 12], "day": [6, 7]},
     "target_spans": {"year": [0, 4], "month": [5, 7], "day": [8, 10]}}

``source_spans[field] = [start, end]`` is the character span of the source that states the field
(``source[start:end]``; ``read_field`` turns it back into the number), and ``target_spans[field]`` the span of the
target that writes it: the ground truth for the alignment error rate. Dates are drawn
uniformly from 1950-01-01 … 2049-12-31; two-digit years mean 1950–1999 for 50–99 and 2000–2049 for 00–49. The
numeric formats are unambiguous: "/" with a two-digit year is the US order M/D/YY, with a four-digit year the
European DD/MM/YYYY; "." is DD.MM.YYYY; a leading four-digit year is YYYY/M/D. Weekdays are the real ones. The same
seed always gives the same files, and no source string occurs in two splits.
"""

import datetime
import random
from collections.abc import Callable
from pathlib import Path

from training.data.generated import builder_arguments, distinct_splits, jsonl_lines

FIELDS = ("year", "month", "day")
TARGET_SPANS = {"year": [0, 4], "month": [5, 7], "day": [8, 10]}  # in "YYYY-MM-DD"
FIRST_DAY, LAST_DAY = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)
SPLIT_SIZES = {"train": 12000, "validation": 1000, "test": 1000}
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "dates"

MONTHS = {
    "en": "January February March April May June July August September October November December".split(),
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split(),
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre".split(),
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre".split(),
}
SHORT_MONTHS = {"en": "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()}
WEEKDAYS = {  # Monday first, as date.weekday()
    "en": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
    "de": "Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag".split(),
    "fr": "lundi mardi mercredi jeudi vendredi samedi dimanche".split(),
    "es": "lunes martes miércoles jueves viernes sábado domingo".split(),
    "it": "lunedì martedì mercoledì giovedì venerdì sabato domenica".split(),
}


def english_ordinal(day: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10 if day // 10 != 1 else 0, "th")


# A format is a list of pieces: literal text, or (field, text) for the text that states a field.
Piece = str | tuple[str, str]
Format = Callable[[datetime.date], list[Piece]]


def _year(date: datetime.date) -> tuple[str, str]:
    return ("year", str(date.year))


def _day(date: datetime.date) -> tuple[str, str]:
    return ("day", str(date.day))


def _month(language: str, date: datetime.date) -> tuple[str, str]:
    return ("month", MONTHS[language][date.month - 1])


def _weekday(language: str, date: datetime.date) -> str:
    return WEEKDAYS[language][date.weekday()]


FORMATS: dict[str, dict[str, Format]] = {
    "en": {
        "weekday, d month yyyy": lambda d: [f"{_weekday('en', d)}, ", _day(d), " ", _month("en", d), " ", _year(d)],
        "month d, yyyy": lambda d: [_month("en", d), " ", _day(d), ", ", _year(d)],
        "mon d yyyy": lambda d: [("month", SHORT_MONTHS["en"][d.month - 1]), " ", _day(d), " ", _year(d)],
        "dth of month yyyy": lambda d: [_day(d), f"{english_ordinal(d.day)} of ", _month("en", d), " ", _year(d)],
        "weekday month dth, yyyy": lambda d: [f"{_weekday('en', d)} ", _month("en", d), " ", _day(d),
                                              f"{english_ordinal(d.day)}, ", _year(d)],
        "m/d/yy": lambda d: [("month", str(d.month)), "/", _day(d), "/", ("year", f"{d.year % 100:02d}")],
    },
    "de": {
        "d. month yyyy": lambda d: [_day(d), ". ", _month("de", d), " ", _year(d)],
        "weekday, d. month yyyy": lambda d: [f"{_weekday('de', d)}, ", _day(d), ". ", _month("de", d), " ", _year(d)],
        "weekday, den d. month yyyy": lambda d: [f"{_weekday('de', d)}, den ", _day(d), ". ", _month("de", d), " ",
                                                 _year(d)],
        "dd.mm.yyyy": lambda d: [("day", f"{d.day:02d}"), ".", ("month", f"{d.month:02d}"), ".", _year(d)],
    },
    "fr": {
        "le d month yyyy": lambda d: ["le ", _day(d), "er " if d.day == 1 else " ", _month("fr", d), " ", _year(d)],
        "weekday d month yyyy": lambda d: [f"{_weekday('fr', d)} ", _day(d), "er " if d.day == 1 else " ",
                                           _month("fr", d), " ", _year(d)],
        "dd/mm/yyyy": lambda d: [("day", f"{d.day:02d}"), "/", ("month", f"{d.month:02d}"), "/", _year(d)],
    },
    "es": {
        "d de month de yyyy": lambda d: [_day(d), " de ", _month("es", d), " de ", _year(d)],
        "weekday, d de month de yyyy": lambda d: [f"{_weekday('es', d)}, ", _day(d), " de ", _month("es", d),
                                                  " de ", _year(d)],
        "yyyy/m/d": lambda d: [_year(d), "/", ("month", str(d.month)), "/", _day(d)],
    },
    "it": {
        "d month yyyy": lambda d: [_day(d), " ", _month("it", d), " ", _year(d)],
        "weekday d month yyyy": lambda d: [f"{_weekday('it', d)} ", _day(d), " ", _month("it", d), " ", _year(d)],
    },
}
FORMAT_CHOICES = [(language, name) for language, formats in FORMATS.items() for name in formats]


def render(pieces: list[Piece]) -> tuple[str, dict[str, list[int]]]:
    """The source text of a list of pieces and the [start, end] character span of each field."""
    text, spans = "", {}
    for piece in pieces:
        if isinstance(piece, tuple):
            field, piece = piece
            spans[field] = [len(text), len(text) + len(piece)]
        text += piece
    return text, {field: spans[field] for field in FIELDS}


def read_field(field: str, text: str) -> int:
    """The number a field's span states: a year (two digits: 50–99 → 19xx, 00–49 → 20xx), a month (number or name
    in any of the languages) or a day."""
    if field == "month" and not text.isdigit():
        names = [months for months in (*MONTHS.values(), *SHORT_MONTHS.values()) if text in months]
        if not names:
            raise ValueError(f"unknown month name {text!r}")
        return names[0].index(text) + 1
    number = int(text)
    if field == "year" and len(text) == 2:
        return number + (1900 if number >= 50 else 2000)
    return number


def example(rng: random.Random) -> dict:
    """One random date in one random (language, format), with its field spans."""
    date = FIRST_DAY + datetime.timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    language, name = rng.choice(FORMAT_CHOICES)
    source, spans = render(FORMATS[language][name](date))
    return {"source": source, "target": date.isoformat(), "language": language, "format": name,
            "source_spans": spans, "target_spans": TARGET_SPANS}


def generate_splits(seed: int = 0, sizes: dict[str, int] = SPLIT_SIZES) -> dict[str, list[dict]]:
    """Examples per split; a source string seen in an earlier split is drawn again."""
    rng = random.Random(seed)
    return distinct_splits(sizes, lambda split: example(rng))


def main() -> None:
    parser = builder_arguments(__doc__.split("\n")[0], DEFAULT_OUTPUT_DIR)
    for split, size in SPLIT_SIZES.items():
        parser.add_argument(f"--{split}_size", type=int, default=size)
    args = parser.parse_args()
    sizes = {split: getattr(args, f"{split}_size") for split in SPLIT_SIZES}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for split, rows in generate_splits(args.seed, sizes).items():
        path = args.output_dir / f"{split}.jsonl"
        path.write_text("".join(jsonl_lines(rows)), encoding="utf-8")
        print(f"{path}: {len(rows)} examples")


if __name__ == "__main__":
    main()
