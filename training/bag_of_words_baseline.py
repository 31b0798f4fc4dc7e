"""The bag-of-words baseline of a classification data set: logistic regression on word counts (scikit-learn).

    python -m training.bag_of_words_baseline                                          # the bundled HAN data
    python -m training.bag_of_words_baseline --data_dir training/data/fortunes        # make_fortunes.py's output

Prints the test accuracy and macro-F1. On the bundled HAN data the word counts say nothing about the label
(``training/data/make_han.py``): this baseline shows it, and is the floor the flat and hierarchical classifiers of
``run_classification.py`` are read against.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from transformers import HfArgumentParser

from training.common.arguments import exit_on_bad_argument
from training.common.metrics import in_percent

HAN_DATA = Path(__file__).resolve().parent / "data" / "han"


@dataclass
class BaselineArguments:
    data_dir: Path = field(default=HAN_DATA, metadata={"help": "a folder with train.jsonl and test.jsonl "
                                                               "({'text': ..., 'label': ...} per line)"})

    def __post_init__(self):
        split_paths(self.data_dir)


def split_paths(data_dir: Path) -> dict[str, Path]:
    """The train.jsonl and test.jsonl of ``data_dir``; a ValueError naming the one it lacks."""
    paths = {split: Path(data_dir) / f"{split}.jsonl" for split in ("train", "test")}
    for path in paths.values():
        if not path.is_file():
            raise ValueError(f"`data_dir` {str(data_dir)!r} has no {path.name}: give a folder with train.jsonl and "
                             "test.jsonl.")
    return paths


def bag_of_words_scores(data_dir: Path = HAN_DATA) -> dict[str, float]:
    """Test accuracy and macro-F1, in percent, of a logistic regression on the word counts of each training
    document."""
    rows = {split: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            for split, path in split_paths(data_dir).items()}
    counts = CountVectorizer(token_pattern=r"\S+")
    train = counts.fit_transform(row["text"] for row in rows["train"])
    classifier = LogisticRegression(max_iter=2000).fit(train, [row["label"] for row in rows["train"]])
    labels = [row["label"] for row in rows["test"]]
    predicted = classifier.predict(counts.transform(row["text"] for row in rows["test"]))
    accuracy = sum(int(p == label) for p, label in zip(predicted, labels)) / len(labels)
    return in_percent({"accuracy": accuracy, "macro_f1": f1_score(labels, predicted, average="macro")})


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Fit and score on ``--data_dir``; prints and returns the scores."""
    parser = HfArgumentParser(BaselineArguments, description=__doc__.split("\n")[0])
    (arguments,) = exit_on_bad_argument(parser, lambda: parser.parse_args_into_dataclasses(args=argv))
    scores = bag_of_words_scores(arguments.data_dir)
    print(f"bag of words, logistic regression: test accuracy {scores['accuracy']:.1f}%, "
          f"macro-F1 {scores['macro_f1']:.1f}%")
    return scores


if __name__ == "__main__":
    main()
