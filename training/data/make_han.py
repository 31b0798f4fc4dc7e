"""Generate the bundled document-classification data: the label is the topic that wins MOST SENTENCES.

    python -m training.data.make_han                  # writes training/data/han/{train,validation,test}.jsonl

Each line is one document of sentences ending in " ." and its label::

    {"text": "the coach said rain and goal today . ...", "label": "sports",
     "sentence_votes": ["sports", "weather", "sports", null], "topic_words": {"sports": 5, "weather": 6}}

A document mixes words of two topics (the label and a distractor). Each topical sentence holds words of both
and votes for the topic with more words in it (1-4 against 0-3); the label wins more sentences (2-4 against
1-2); 0-1 sentences hold filler words only. Documents are drawn so that the topic with more words *overall* is
the label in exactly half of them (ties excluded): word counts - what a bag of words, or one attention over
all words of the document, measures - say nothing about the label. A hierarchical model reads it off: attention
over the words of each sentence makes one vector per sentence (which topic has more words there), attention
over the sentences counts the votes. The same seed always gives the same files.
"""

import random
from pathlib import Path

from training.data.generated import build_splits

SPLIT_SIZES = {"train": 2000, "validation": 300, "test": 300}
DEFAULT_OUTPUT_DIR = Path(__file__).resolve().parent / "han"
TOPIC_WORDS = {
    "sports": "goal match team coach striker referee stadium league".split(),
    "weather": "rain storm sunshine forecast wind snow thunder fog".split(),
    "politics": "minister election parliament vote senator policy party cabinet".split(),
    "business": "market shares profit bank investors company merger revenue".split(),
}
FILLER = ("the a and of in on at this that with very today yesterday people city new said report some many "
          "after before again still later everyone there week").split()
FILLERS_PER_SENTENCE = (2, 4)


def sentence(topic_counts: dict[str, int], rng: random.Random) -> list[str]:
    """Shuffled words: ``topic_counts[topic]`` words of each topic and a few fillers."""
    words = [rng.choice(TOPIC_WORDS[topic]) for topic, count in topic_counts.items() for _ in range(count)]
    words += [rng.choice(FILLER) for _ in range(rng.randint(*FILLERS_PER_SENTENCE))]
    rng.shuffle(words)
    return words


def vote(winner: str, loser: str, rng: random.Random) -> dict[str, int]:
    """Word counts of a sentence that votes for ``winner``: 1-4 of its words, fewer of the loser's."""
    winner_words = rng.randint(1, 4)
    return {winner: winner_words, loser: rng.randint(0, winner_words - 1)}


def document(rng: random.Random) -> dict:
    label_has_more_words = rng.random() < 0.5  # decided first: the word counts carry no information
    while True:
        label, distractor = rng.sample(sorted(TOPIC_WORDS), 2)
        distractor_votes = rng.randint(1, 2)
        counts = [(label, vote(label, distractor, rng)) for _ in range(rng.randint(distractor_votes + 1, 4))]
        counts += [(distractor, vote(distractor, label, rng)) for _ in range(distractor_votes)]
        totals = {topic: sum(sentence_counts[topic] for _, sentence_counts in counts) for topic in (label, distractor)}
        if totals[label] != totals[distractor] and (totals[label] > totals[distractor]) == label_has_more_words:
            break
    sentences = [(winner, sentence(sentence_counts, rng)) for winner, sentence_counts in counts]
    sentences += [(None, sentence({}, rng)) for _ in range(rng.randint(0, 1))]
    rng.shuffle(sentences)
    return dict(text=" ".join(" ".join(words) + " ." for _, words in sentences), label=label,
                sentence_votes=[winner for winner, _ in sentences], topic_words=totals)


def main() -> None:
    output_dir, splits = build_splits(__doc__.splitlines()[0], DEFAULT_OUTPUT_DIR, SPLIT_SIZES,
                                      lambda size, rng: [document(rng) for _ in range(size)])
    for split, rows in splits.items():
        more_words = sum(row["topic_words"][row["label"]] > min(row["topic_words"].values()) for row in rows)
        print(f"{split}: {len(rows)} documents -> {output_dir / f'{split}.jsonl'} "
              f"(label topic has strictly more words in {100 * more_words / len(rows):.1f}%)")


if __name__ == "__main__":
    main()
