"""The bag-of-words baseline of the bundled HAN data: logistic regression on word counts (scikit-learn).

    python training/bag_of_words_baseline.py     # prints the test accuracy

The data are drawn so that word counts say nothing about the label (``training/data/make_han.py``): this baseline
shows it, and is the floor the flat and hierarchical classifiers of ``run_classification.py`` are read against.
"""

import json
from pathlib import Path

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression

HAN_DATA = Path(__file__).resolve().parent / "data" / "han"


def bag_of_words_accuracy(data_dir: Path = HAN_DATA) -> float:
    """Test accuracy of a logistic regression on the word counts of each training document."""
    rows = {split: [json.loads(line) for line in (data_dir / f"{split}.jsonl").read_text().splitlines()]
            for split in ("train", "test")}
    counts = CountVectorizer(token_pattern=r"\S+")
    train = counts.fit_transform(row["text"] for row in rows["train"])
    classifier = LogisticRegression(max_iter=2000).fit(train, [row["label"] for row in rows["train"]])
    test = counts.transform(row["text"] for row in rows["test"])
    return classifier.score(test, [row["label"] for row in rows["test"]])


if __name__ == "__main__":
    print(f"bag of words, logistic regression: test accuracy {bag_of_words_accuracy():.3f}")
