"""``pipeline("token-classification")`` (every aggregation strategy) and ``pipeline("text-classification")``
with the tagger and the HAN classifier and a word-level fast tokenizer: their outputs against the models'
logits, in this process and from saved folders in a fresh ``python -I`` process without hf_bahdanau
(``trust_remote_code=True``)."""

import copy
import json
import logging

import pytest
import torch
from transformers import pipeline

from child_process import run_child
from conftest import assert_float64_close
from hf_bahdanau import BahdanauEncoderConfig, BahdanauForSequenceClassification, BahdanauForTokenClassification
from training.common.tokenization import train_tokenizer

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CLASSES = ["sports", "weather", "politics"]
TEXTS = ["Alice Smith moved from Paris to New York .", "Bob works at the bakery in Lyon . He likes it ."]
CORPUS = TEXTS + ["Carol visited Rome and Berlin last year .", "It will rain in London tomorrow ."]

pytestmark = pytest.mark.usefixtures("one_thread")


def decisive(model):
    """Weights redrawn from N(0, 1): predictions differ from token to token and are far from ties. The pipelines'
    scores are compared with the models' in float64 (``in_float64``), where their two softmaxes (numpy's and
    torch's, or one in another process) agree to rounding, whatever kernels the CPU picks."""
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return model.eval()


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(CORPUS, kind="word")


@pytest.fixture(scope="module")
def tagger(tokenizer):
    config = BahdanauEncoderConfig(vocab_size=len(tokenizer), embedding_size=12, hidden_size=16,
                                   token_attention_type="general", id2label=dict(enumerate(TAGS)),
                                   label2id={tag: i for i, tag in enumerate(TAGS)})
    return decisive(BahdanauForTokenClassification(config))


def in_float64(model):
    """A float64 copy of a float32 model: the same weights, exactly."""
    return copy.deepcopy(model).double()


def scores(entries: list[dict]) -> torch.Tensor:
    return torch.tensor([float(entry["score"]) for entry in entries], dtype=torch.float64)


def float32_score_error(logits: torch.Tensor, single_label: bool) -> torch.Tensor:
    """transformers' text-classification pipeline scores a float64 model's logits x [..., n] in float32 (numpy).
    Softmax: rounding x to float32 moves each log p_j by ≤ ε (|x_j| + Σ_k p_k |x_k|) / 2, float32's softmax puts p_j
    within (n + 3) ε p_j of that; sigmoid: rounding x moves p by ≤ p (1 − p) ε |x| / 2, 1 / (1 + e^-x) rounds within
    3 ε p. With p ≤ 1: ε (n + 3 + 2 max_k |x_k|), resp. ε (3 + |x_j|), per entry [..., n] (twice the rounding of x:
    a margin that also covers float64 paths' ~1e-10)."""
    eps = torch.finfo(torch.float32).eps
    if single_label:
        return eps * (logits.shape[-1] + 3 + 2 * logits.abs().amax(-1, keepdim=True)).expand_as(logits)
    return eps * (3 + logits.abs())


def han(tokenizer, problem_type: str | None = None):
    config = BahdanauEncoderConfig(vocab_size=len(tokenizer), embedding_size=12, hidden_size=16, hierarchical=True,
                                   sentence_separator_token_id=tokenizer.convert_tokens_to_ids("."),
                                   problem_type=problem_type, id2label=dict(enumerate(CLASSES)),
                                   label2id={name: i for i, name in enumerate(CLASSES)})
    return decisive(BahdanauForSequenceClassification(config))


def token_predictions(model, tokenizer, text: str) -> list[dict]:
    """Per word token (special tokens skipped): the argmax tag, its probability and its characters."""
    encoding = tokenizer(text, return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt")
    with torch.no_grad():
        probs = model(input_ids=encoding["input_ids"], attention_mask=encoding["attention_mask"]).logits[0].softmax(-1)
    rows = []
    for index, ((start, end), special) in enumerate(zip(encoding["offset_mapping"][0].tolist(),
                                                        encoding["special_tokens_mask"][0].tolist())):
        if not special:
            tag = int(probs[index].argmax())
            rows.append(dict(index=index, entity=TAGS[tag], score=float(probs[index, tag]), word=text[start:end],
                             start=start, end=end))
    return rows


def bio_groups(rows: list[dict]) -> list[dict]:
    """Adjacent tokens of one type form an entity; B- starts a new one (transformers' "simple" grouping)."""
    groups = []
    for row in rows:
        prefix, kind = row["entity"].split("-") if "-" in row["entity"] else ("I", row["entity"])
        if groups and groups[-1]["entity_group"] == kind and prefix != "B":
            groups[-1]["rows"].append(row)
        else:
            groups.append(dict(entity_group=kind, rows=[row]))
    return [dict(entity_group=group["entity_group"], score=sum(r["score"] for r in group["rows"]) / len(group["rows"]),
                 start=group["rows"][0]["start"], end=group["rows"][-1]["end"])
            for group in groups if group["entity_group"] != "O"]


def as_plain(entities: list[dict]) -> list[dict]:
    return [{key: float(value) if key == "score" else value for key, value in entity.items()} for entity in entities]


# 1. in this process -------------------------------------------------------------------------------------


def test_token_classification_pipeline_without_aggregation(tagger, tokenizer):
    tagger = in_float64(tagger)
    tag = pipeline("token-classification", model=tagger, tokenizer=tokenizer)
    for text in TEXTS:
        expected = [row for row in token_predictions(tagger, tokenizer, text) if row["entity"] != "O"]
        assert len(expected) >= 2  # the comparison is not vacuous
        got = tag(text)
        assert [{key: entity[key] for key in ("entity", "index", "word", "start", "end")} for entity in got] == [
            {key: row[key] for key in ("entity", "index", "word", "start", "end")} for row in expected]
        assert_float64_close(scores(got), scores(expected), scale=1.0)  # probabilities: at most 1


@pytest.mark.parametrize("strategy", ["simple", "first", "average", "max"])
def test_token_classification_pipeline_aggregation(tagger, tokenizer, strategy):
    tagger = in_float64(tagger)
    tag = pipeline("token-classification", model=tagger, tokenizer=tokenizer, aggregation_strategy=strategy)
    for text in TEXTS:
        expected = bio_groups(token_predictions(tagger, tokenizer, text))
        got = tag(text)
        assert [(e["entity_group"], e["start"], e["end"], e["word"]) for e in got] == [
            (e["entity_group"], e["start"], e["end"], text[e["start"]:e["end"]]) for e in expected]
        assert_float64_close(scores(got), scores(expected), scale=1.0)  # probabilities: at most 1


@pytest.mark.parametrize("problem_type", ["single_label_classification", "multi_label_classification"])
def test_text_classification_pipeline(tokenizer, problem_type):
    model = in_float64(han(tokenizer, problem_type))
    classify = pipeline("text-classification", model=model, tokenizer=tokenizer)
    encoding = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**encoding).logits
    probs = logits.softmax(-1) if problem_type == "single_label_classification" else logits.sigmoid()
    results = classify(TEXTS, top_k=None)
    error = float32_score_error(logits, problem_type == "single_label_classification")
    for row, result in enumerate(results):
        order = probs[row].argsort(descending=True).tolist()
        assert [entry["label"] for entry in result] == [CLASSES[index] for index in order]
        assert ((scores(result) - probs[row, order]).abs() <= error[row, order]).all()
    assert classify(TEXTS[0])[0]["label"] == CLASSES[int(probs[0].argmax())]


# 2. from saved folders, in a fresh process without hf_bahdanau -------------------------------------------

PIPELINES_CHILD = """
    import json
    import sys

    import torch
    from transformers import pipeline

    torch.set_num_threads(1)
    tagger_folder, han_folder, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    tag = pipeline("token-classification", model=tagger_folder, trust_remote_code=True, aggregation_strategy="simple",
                   dtype=torch.float64)
    classify = pipeline("text-classification", model=han_folder, trust_remote_code=True, dtype=torch.float64)

    def plain(entities):
        return [{key: float(value) if key == "score" else value for key, value in entity.items()} for entity in entities]

    print(json.dumps(dict(
        entities=[plain(tag(text)) for text in texts],
        classes=classify(texts, top_k=None),
        model_modules=[type(tag.model).__module__, type(classify.model).__module__],
    )))
"""


def test_pipelines_load_saved_folders_in_a_fresh_process(tagger, tokenizer, tmp_path):
    model = han(tokenizer)
    for folder, saved in (("tagger", tagger), ("han", model)):
        saved.save_pretrained(tmp_path / folder)
        tokenizer.save_pretrained(tmp_path / folder)
    child = run_child(PIPELINES_CHILD, tmp_path, str(tmp_path / "tagger"), str(tmp_path / "han"), json.dumps(TEXTS),
                      isolated=True, hide_package=True)
    assert all(module.startswith("transformers_modules.") for module in child["model_modules"])
    # both sides load the saved float32 weights in float64, where the two processes agree to rounding
    model = in_float64(model)
    tag = pipeline("token-classification", model=in_float64(tagger), tokenizer=tokenizer, aggregation_strategy="simple")
    classify = pipeline("text-classification", model=model, tokenizer=tokenizer)
    for text, entities in zip(TEXTS, child["entities"]):
        expected = as_plain(tag(text))
        assert expected and [{k: v for k, v in e.items() if k != "score"} for e in entities] == [
            {k: v for k, v in e.items() if k != "score"} for e in expected]
        assert_float64_close(scores(entities), scores(expected), scale=1.0)  # probabilities: at most 1
    for text, result, expected in zip(TEXTS, child["classes"], classify(TEXTS, top_k=None)):
        assert [entry["label"] for entry in result] == [entry["label"] for entry in expected]
        with torch.no_grad():  # the text-classification pipeline scores in float32: each side within the error
            logits = model(**tokenizer(text, return_tensors="pt")).logits[0]
        order = [CLASSES.index(entry["label"]) for entry in expected]
        assert ((scores(result) - scores(expected)).abs() <= 2 * float32_score_error(logits, True)[order]).all()


# 3. the pipelines a saved folder names: transformers' own, with an empty list refused and unknown words warned about


def test_the_folders_pipelines_warn_about_unknown_words_and_texts_longer_than_in_training(tagger, tokenizer, caplog):
    from hf_bahdanau.modeling.pipeline_classification import (
        BahdanauTextClassificationPipeline, BahdanauTokenClassificationPipeline,
    )

    model = han(tokenizer)
    model.config.max_training_source_length = 8
    tag = BahdanauTokenClassificationPipeline(model=tagger, tokenizer=tokenizer, task="bahdanau-token-classification")
    classify = BahdanauTextClassificationPipeline(model=model, tokenizer=tokenizer, task="bahdanau-text-classification")
    unknown = "Zorro visited Quito ."  # two words the tokenizer has never seen
    with caplog.at_level(logging.WARNING):
        assert tag(unknown) == pipeline("token-classification", model=tagger, tokenizer=tokenizer)(unknown)
        assert classify(TEXTS[1]) == pipeline("text-classification", model=model, tokenizer=tokenizer)(TEXTS[1])
    length = len(tokenizer(unknown)["input_ids"])
    assert f"'Zorro visited Quito .': 2 of its {length} tokens are unknown to the tokenizer (<unk>)" in caplog.text
    assert (f"'{TEXTS[1][:40]}…': {len(tokenizer(TEXTS[1])['input_ids'])} tokens, longer than every source seen in "
            "training (at most 8 tokens)") in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        tag(TEXTS[0])
    assert "unreliable" not in caplog.text
    for pipe in (tag, classify):
        with pytest.raises(ValueError, match=r"^`inputs` is an empty list: pass a text, or a list of at least one\.$"):
            pipe([])
