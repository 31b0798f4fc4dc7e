"""The seq2seq collators pad labels and decoder inputs on the right whatever the tokenizer's ``padding_side``: a batch
trains on the same sequences as its examples one by one. transformers' ``DataCollatorForSeq2Seq`` pads the labels on
the tokenizer's side, so a left-padding tokenizer made the decoder read ``[start, pad, pad, …, y_1]``."""

import numpy as np
import pytest
import torch

from conftest import PAD, tiny_model
from hf_bahdanau.modeling.collators import DataCollatorForCopying, DataCollatorWithRightPaddedLabels
from hf_bahdanau.modeling.copying import encode_with_copies
from training.common.tokenization import train_tokenizer

SOURCES = ["meeting with Ann Lee on 3 March 2015", "lunch on 4 May", "Ann"]
TARGETS = ["Ann Lee | 2015-03-03", "lunch | 05-04", "Ann Lee Ann Lee | 2015"]
# the copying collator's texts hold words the vocabulary lacks (Ngozi, Adeyemi, Obi): ids from V up
COPY_SOURCES = ["meeting with Ngozi Adeyemi on 3 March", "Ngozi Obi", "lunch with Ann"]
COPY_TARGETS = ["Ngozi Adeyemi | 2015-03-03", "Obi Ngozi Obi", "Ann"]


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(SOURCES + TARGETS + ["lunch with"], kind="word")


@pytest.fixture
def left_tokenizer(tokenizer):
    tokenizer.padding_side = "left"
    yield tokenizer
    tokenizer.padding_side = "right"


def features_and_collator(tokenizer, copy: bool):
    """One feature dict per example and a collator with the model, for plain seq2seq or copying."""
    model = tiny_model("rnnsearch", vocab_size=len(tokenizer), copy_attention=copy).double()
    if copy:
        encoded = encode_with_copies(tokenizer, COPY_SOURCES, COPY_TARGETS)
        features = [{key: encoded[key][row] for key in encoded} for row in range(len(COPY_SOURCES))]
        return model, features, DataCollatorForCopying(tokenizer, model=model)
    encoded = tokenizer(SOURCES, text_target=TARGETS)
    features = [{key: encoded[key][row] for key in encoded} for row in range(len(SOURCES))]
    return model, features, DataCollatorWithRightPaddedLabels(tokenizer, model=model)


def model_inputs(batch: dict) -> dict:
    return {key: value for key, value in batch.items() if key != "source_oovs"}


@pytest.mark.parametrize("copy", [False, True], ids=["seq2seq", "copying"])
def test_a_left_padded_batch_has_the_loss_of_its_examples(left_tokenizer, copy):
    """The batch's loss, Σ over its target tokens / their number, equals the examples' losses weighted by their
    target tokens (the model divides each sum by its count of labels != -100, ``loss.per_target``)."""
    model, features, collator = features_and_collator(left_tokenizer, copy)
    batch = collator(features)
    assert (batch["attention_mask"][:, 0] == 0).any()  # the sources are left-padded, as the tokenizer pads
    with torch.no_grad():
        batch_loss = model(**model_inputs(batch)).loss
        singles = [model(**model_inputs(collator([feature]))).loss for feature in features]
    counts = torch.tensor([len(feature["labels"]) for feature in features], dtype=torch.float64)
    assert len(set(counts.tolist())) == len(counts)  # targets of three lengths: two rows are padded
    expected = (torch.stack(singles) * counts).sum() / counts.sum()
    torch.testing.assert_close(batch_loss, expected, atol=1e-12 * float(expected), rtol=0)


@pytest.mark.parametrize("copy", [False, True], ids=["seq2seq", "copying"])
@pytest.mark.parametrize("options", [{}, {"pad_to_multiple_of": 8}, {"padding": "max_length", "max_length": 14}],
                         ids=["longest", "multiple_of_8", "max_length"])
def test_labels_and_decoder_inputs_are_right_padded_on_a_left_padding_tokenizer(left_tokenizer, copy, options):
    model, features, collator = features_and_collator(left_tokenizer, copy)
    for key, value in options.items():
        setattr(collator, key, value)
    batch = collator(features)
    labels = [feature["labels"] for feature in features]
    longest = max(map(len, labels))
    assert 8 < longest < 14  # so that each option pads to another width
    multiple = options.get("pad_to_multiple_of", 1)
    width = options.get("max_length", -(-longest // multiple) * multiple)
    assert batch["labels"].shape == batch["decoder_input_ids"].shape == (3, width)
    start = model.config.decoder_start_token_id
    for row, label in enumerate(labels):
        assert batch["labels"][row].tolist() == label + [-100] * (width - len(label))
        assert batch["decoder_input_ids"][row].tolist() == ([start] + label + [PAD] * (width - len(label)))[:width]


def test_numpy_labels_and_numpy_batches_are_right_padded_too(left_tokenizer):
    _, features, _ = features_and_collator(left_tokenizer, copy=False)
    features = [{**feature, "labels": np.array(feature["labels"])} for feature in features]
    batch = DataCollatorWithRightPaddedLabels(left_tokenizer)(features, return_tensors="np")
    assert isinstance(batch["labels"], np.ndarray)
    for row, feature in enumerate(features):
        length = len(feature["labels"])
        assert batch["labels"][row, :length].tolist() == feature["labels"].tolist()
        assert (batch["labels"][row, length:] == -100).all()


def test_right_padding_and_no_labels_are_what_transformers_gives(tokenizer):
    from transformers import DataCollatorForSeq2Seq

    model, features, collator = features_and_collator(tokenizer, copy=False)
    expected = DataCollatorForSeq2Seq(tokenizer, model=model)(features)
    batch = collator(features)
    assert batch.keys() == expected.keys()
    for key in batch:
        assert torch.equal(batch[key], expected[key]), key
    unlabelled = collator([{key: value for key, value in feature.items() if key != "labels"} for feature in features])
    assert unlabelled["labels"] is None and torch.equal(unlabelled["input_ids"], expected["input_ids"])


# the evaluation that batches targets itself ---------------------------------------------------------------------


class RecordingModel(torch.nn.Module):
    """The model, keeping the labels it is given."""

    def __init__(self, model):
        super().__init__()
        self.model, self.config, self.device, self.labels = model, model.config, model.device, []

    def forward(self, **inputs):
        self.labels.append(inputs["labels"])
        return self.model(**inputs)


def test_the_alignment_error_rate_is_the_same_with_a_left_padding_tokenizer(tokenizer):
    from training.common.alignment_error import alignment_error_rate

    sources, targets = ["meeting with Ann Lee on 3 March 2015", "lunch on 4 May"], ["Ann Lee | 2015-03-03", "lunch"]
    source_spans = [{"name": [13, 20]}, {"name": [0, 5]}]
    target_spans = [{"name": [0, 7]}, {"name": [0, 5]}]
    model = RecordingModel(tiny_model("rnnsearch", vocab_size=len(tokenizer)))
    results = []
    for side in ("right", "left"):
        tokenizer.padding_side = side
        try:
            results.append(alignment_error_rate(model, tokenizer, sources, targets, source_spans, target_spans))
        finally:
            tokenizer.padding_side = "right"
    right, left = model.labels
    assert (right[1, 2:] == -100).all() and torch.equal(left, right)
    assert results[0] == results[1] and results[0][1] == 3  # Ann, Lee; lunch


# every family's collator, in modeling/collators.py ----------------------------------------------------------------


def every_collators_batch() -> dict[str, dict]:
    """One small batch through each collator of ``modeling/collators.py``, as lists."""
    from hf_bahdanau import BahdanauImageProcessor
    from hf_bahdanau.modeling.collators import (
        DataCollatorForImageToText, DataCollatorForMemoryNetwork, DataCollatorForPointing, DataCollatorForTextPairs,
        DataCollatorForVisualQuestionAnswering,
    )

    tokenizer = train_tokenizer(["lunch with Ann", "Ann Lee", "what color"], kind="word")
    tokenizer.padding_side = "left"
    encoded = tokenizer(["lunch with Ann", "Ann"], text_target=["Ann Lee", "lunch with Ann Lee"])
    copies = encode_with_copies(tokenizer, ["lunch with Ngozi", "Obi"], ["Ngozi", "Obi Obi Ann"])

    def image(width, value):
        return np.full((2, width), value, dtype=np.uint8)

    processor = BahdanauImageProcessor(size={"height": 2})
    batches = {
        "seq2seq": DataCollatorWithRightPaddedLabels(tokenizer)([{key: encoded[key][row] for key in encoded}
                                                                  for row in range(2)]),
        "copying": DataCollatorForCopying(tokenizer)([{key: copies[key][row] for key in copies} for row in range(2)]),
        "pointing": DataCollatorForPointing()([{"input_features": [[1.0, 2.0], [3.0, 4.0]], "labels": [2, 1, 0]},
                                               {"input_features": [[5.0, 6.0]], "labels": [1, 0]}]),
        "image": DataCollatorForImageToText(processor, tokenizer)([{"image": image(2, 255), "text": "Ann"},
                                                                   {"image": image(4, 0), "text": "lunch with Ann"}]),
        "memory": DataCollatorForMemoryNetwork(0, 2)([
            {"input_ids": [5, 6], "memory_ids": [[1], [2, 3], [4, 4, 4]], "labels": 1},
            {"input_ids": [7], "memory_ids": [[8]], "labels": 0}]),
        "pairs": DataCollatorForTextPairs(0)([{"input_ids": [5, 6], "context_ids": [1], "labels": 1},
                                              {"input_ids": [7], "context_ids": [2, 3, 4], "labels": 0}]),
        "vqa": DataCollatorForVisualQuestionAnswering(processor, tokenizer, {"Ann": 0, "Lee": 1},
                                                      question_type_column="t", question_types=["a", "b"])([
            {"image": image(2, 255), "question": "what color", "answer": "Lee", "t": "b"},
            {"image": image(4, 0), "question": "Ann", "answer": "Ann", "t": "a"}]),
    }
    return {name: {key: value.tolist() for key, value in batch.items()} for name, batch in batches.items()}


PIXELS = {"pixel_values": [[[[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]]], [[[-1.0] * 4, [-1.0] * 4]]],
          "pixel_mask": [[[1, 1, 0, 0], [1, 1, 0, 0]], [[1, 1, 1, 1], [1, 1, 1, 1]]]}
# what each collator gave in its module before they came together in modeling/collators.py (image_training.py,
# memory_training.py, vqa_training.py, copying.py, pointing.py)
BEFORE = {
    "seq2seq": {"input_ids": [[7, 9, 4, 2], [0, 0, 4, 2]], "attention_mask": [[1, 1, 1, 1], [0, 0, 1, 1]],
                "labels": [[4, 5, 2, -100, -100], [7, 9, 4, 5, 2]]},
    "copying": {"input_ids": [[7, 9, 3, 2], [0, 0, 3, 2]], "attention_mask": [[1, 1, 1, 1], [0, 0, 1, 1]],
                "labels": [[10, 2, -100, -100], [10, 10, 4, 2]], "copy_input_ids": [[7, 9, 10, 2], [0, 0, 10, 2]]},
    "pointing": {"input_features": [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [0.0, 0.0]]],
                 "attention_mask": [[1, 1], [1, 0]], "labels": [[2, 1, 0], [1, 0, -100]]},
    "image": {**PIXELS, "labels": [[4, 2, -100, -100], [7, 9, 4, 2]]},
    "memory": {"input_ids": [[5, 6], [7, 0]], "attention_mask": [[1, 1], [1, 0]],
               "memory_ids": [[[2, 3, 0], [4, 4, 4]], [[8, 0, 0], [0, 0, 0]]],
               "memory_attention_mask": [[[1, 1, 0], [1, 1, 1]], [[1, 0, 0], [0, 0, 0]]], "labels": [1, 0]},
    "pairs": {"input_ids": [[5, 6], [7, 0]], "attention_mask": [[1, 1], [1, 0]], "context_ids": [[1, 0, 0], [2, 3, 4]],
              "context_attention_mask": [[1, 0, 0], [1, 1, 1]], "labels": [1, 0]},
    "vqa": {**PIXELS, "input_ids": [[8, 6], [4, 0]], "attention_mask": [[1, 1], [1, 0]], "labels": [1, 0],
            "question_type_ids": [1, 0]},
}


def test_every_collator_gives_the_batch_it_gave_in_its_old_module():
    assert every_collators_batch() == BEFORE


@pytest.mark.parametrize("module, name", [
    ("hf_bahdanau.modeling.copying", "DataCollatorForCopying"),
    ("hf_bahdanau.modeling.pointing", "DataCollatorForPointing"),
    ("hf_bahdanau.memory_training", "DataCollatorForMemoryNetwork"),
    ("hf_bahdanau.memory_training", "DataCollatorForTextPairs"),
])
def test_a_collator_s_old_import_path_names_its_new_one(module, name):
    import importlib

    from hf_bahdanau.modeling import collators

    old_module = importlib.import_module(module)
    with pytest.warns(FutureWarning, match=rf"^`{module}.{name}` is now `hf_bahdanau.modeling.collators.{name}`; "
                                           "import it by that name.$"):
        old = getattr(old_module, name)
    assert old is getattr(collators, name)
    with pytest.raises(AttributeError, match=rf"module '{module}' has no attribute 'DataCollatorForNothing'"):
        old_module.DataCollatorForNothing  # noqa: B018


@pytest.mark.parametrize("module", ["hf_bahdanau.image_training", "hf_bahdanau.vqa_training"])
def test_the_image_collators_old_modules_are_the_collators_module(module):
    import importlib
    import sys

    from hf_bahdanau.modeling import collators

    sys.modules.pop(module, None)
    with pytest.warns(FutureWarning, match=rf"`{module}` moved to `hf_bahdanau.modeling.collators`"):
        assert importlib.import_module(module) is collators
    sys.modules.pop(module, None)


def test_every_family_s_descriptor_names_its_collator_from_one_place():
    """``Family.collator``: ours from modeling/collators.py, transformers' own for the tagger and the classifiers."""
    from transformers import DataCollatorForTokenClassification, DataCollatorWithPadding

    from hf_bahdanau.families import FAMILIES
    from hf_bahdanau.modeling import collators

    expected = {"seq2seq": collators.DataCollatorWithRightPaddedLabels, "pointer": collators.DataCollatorForPointing,
                "tagger": DataCollatorForTokenClassification, "classifier": DataCollatorWithPadding,
                "memory": collators.DataCollatorForMemoryNetwork, "passage": collators.DataCollatorForTextPairs,
                "image-to-text": collators.DataCollatorForImageToText,
                "vqa": collators.DataCollatorForVisualQuestionAnswering}
    assert {name: FAMILIES[name].collator for name in expected} == expected
    ours = [name for name in collators.__all__ if name != "DataCollatorForCopying"]  # copying: seq2seq's, by option
    assert sorted(collator.__name__ for collator in expected.values()
                  if collator.__module__ == collators.__name__) == sorted(ours)
