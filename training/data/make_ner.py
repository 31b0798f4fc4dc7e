"""Generate the bundled named-entity data: English-like sentences tagged PER / LOC / ORG / MISC in the BIO scheme.

    python -m training.data.make_ner                  # writes training/data/ner/{train,validation,test}.jsonl

Each line is one sentence, in the layout of CoNLL-2003 on the Hub (string tags, so label lists are inferred)::

    {"tokens": ["Maria", "Lopez", "flew", "to", "Jordan", "."], "ner_tags": ["B-PER", "I-PER", "O", "O", "B-LOC", "O"]}

Sentences come from templates whose slots are filled with names of one entity type. Some names belong to two
types ("Jordan" is a person or a country, "Chelsea" a person, a place or a club, "Mercury" a person or a
company): only the context tells, so a tagger must read the sentence, not just look words up. Entities span
one to three words. The same seed always gives the same files.
"""

import random
from pathlib import Path

from training.data.generated import build_splits

SPLIT_SIZES = {"train": 2000, "validation": 200, "test": 200}
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "ner"

NAMES = {
    "PER": ["Maria Lopez", "John Smith", "Anna Schmidt", "Wei Chen", "Fatima Haddad", "Olga Ivanova", "Kenji Sato",
            "Peter", "Sofia", "Ahmed Ali", "Laura Rossi", "Jean Martin", "Jordan", "Chelsea", "Georgia Brown",
            "Florence", "Mercury", "Victoria Adams", "Paris Hilton", "Lincoln"],
    "LOC": ["Paris", "Berlin", "New York", "Tokyo", "Cairo", "Lima", "Jordan", "Georgia", "Chelsea", "Florence",
            "Victoria", "Lincoln", "South Africa", "Rio de Janeiro", "Lake Geneva", "Mount Kenya", "Oslo", "Peru"],
    "ORG": ["Acme Corp", "United Nations", "Mercury", "Chelsea", "Red Cross", "World Bank", "Apex Motors",
            "Lincoln Bank", "Nova Labs", "Orion Airlines", "Bank of Peru", "Blue River Foods"],
    "MISC": ["German", "Japanese", "Olympic Games", "World Cup", "Nobel Prize", "Brazilian", "Tour de France",
             "Cold War", "Arabic", "Euro"],
}

# "{PER}" etc. are slots; everything else is lower-case context, tagged O.
TEMPLATES = [
    "{PER} flew to {LOC} on monday .",
    "{PER} works for {ORG} in {LOC} .",
    "{ORG} opened a new office in {LOC} .",
    "{ORG} hired {PER} as chief executive .",
    "according to {PER} , {ORG} will cut costs .",
    "the {MISC} team beat {LOC} in the final .",
    "{PER} won the {MISC} last year .",
    "fans of {ORG} celebrated in {LOC} .",
    "{PER} met {PER} in {LOC} .",
    "{PER} said the {MISC} economy is growing .",
    "shares of {ORG} rose after {PER} spoke .",
    "the mayor of {LOC} thanked {PER} .",
    "{PER} moved from {LOC} to {LOC} .",
    "{PER} speaks {MISC} and lives near {LOC} .",
    "a report by {ORG} praised {LOC} .",
    "heavy rain hit {LOC} while {PER} was away .",
    "{ORG} and {ORG} signed a deal .",
    "she told {PER} about the {MISC} .",
    "{PER} visited {ORG} headquarters .",
    "tourists love {LOC} in summer .",
]


def fill(template: str, rng: random.Random) -> tuple[list[str], list[str]]:
    tokens, tags = [], []
    for word in template.split():
        if word.startswith("{") and word.endswith("}"):
            entity_type = word[1:-1]
            name = rng.choice(NAMES[entity_type]).split()
            tokens += name
            tags += [f"B-{entity_type}"] + [f"I-{entity_type}"] * (len(name) - 1)
        else:
            tokens.append(word)
            tags.append("O")
    return tokens, tags


def generate(size: int, rng: random.Random) -> list[dict]:
    return [dict(zip(("tokens", "ner_tags"), fill(rng.choice(TEMPLATES), rng))) for _ in range(size)]


def main() -> None:
    output_dir, splits = build_splits(__doc__.splitlines()[0], DEFAULT_OUTPUT_DIR, SPLIT_SIZES, generate)
    for split, rows in splits.items():
        print(f"{split}: {len(rows)} sentences -> {output_dir / f'{split}.jsonl'}")


if __name__ == "__main__":
    main()
