"""The tags of a model card: the card engine (``cards.card.card_tags``) adds those every hf_bahdanau card has around
the ones a family declares (``CardWords.tags``). The tags of every family's card are those written before the
descriptors stopped repeating the engine's (recorded from the code of commit e8873ce), for a tiny model of each."""

import dataclasses

import pytest
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForSequenceClassification

from contract.testers import TESTERS
from hf_bahdanau.cards import write_model_card
from hf_bahdanau.cards.card import card_tags
from hf_bahdanau.cards.transformer import BASELINES
from hf_bahdanau.families import FAMILIES, CardWords, Family, Head

pytestmark = pytest.mark.usefixtures("one_thread")


def rnn(preset: list[str], attends: str, cell: str, task: str) -> list[str]:
    return ["hf_bahdanau", *preset, "rnn", attends, cell, task, "custom_code"]


WRITTEN_BEFORE = {  # each tester's card's tags as the descriptors' own lists wrote them
    **{f"seq2seq-{preset}": rnn([preset], "attention", "lstm", "translation")
       for preset in ("luong-concat", "luong-dot", "luong-general", "luong-local-p", "luong-location")},
    "seq2seq-rnnencdec": rnn(["rnnencdec"], "no-attention", "gru", "translation"),
    **{f"seq2seq-{preset}": rnn([preset], "attention", "gru", "translation")
       for preset in ("rnnsearch", "rnnsearch-location", "rnnsearch-monotonic")},
    "seq2seq-sutskever": rnn(["sutskever"], "no-attention", "lstm", "translation"),
    "seq2seq-rnnsearch+coverage+hard": rnn(["rnnsearch"], "attention", "gru", "translation"),
    "seq2seq-rnnsearch+copy": rnn(["rnnsearch"], "attention", "gru", "translation"),
    "pointer": rnn([], "attention", "gru", "pointer-network"),
    "tagger": rnn(["rnnsearch"], "attention", "gru", "token-classification"),
    "classifier-flat": rnn(["rnnsearch"], "attention", "gru", "text-classification"),
    "classifier-han": rnn(["rnnsearch"], "attention", "gru", "text-classification"),
    "memory": ["hf_bahdanau", "memory-network", "attention", "memory-question-answering", "custom_code"],
    "passage": ["hf_bahdanau", "co-attention", "attention", "passage-question-answering", "custom_code"],
    "image-to-text": ["hf_bahdanau", "show-attend-and-tell", "rnn", "attention", "lstm", "vision", "image-to-text",
                      "custom_code"],
    "vqa": ["hf_bahdanau", "co-attention", "vision", "visual-question-answering", "custom_code"],
}


@pytest.mark.parametrize("tester", [tester for testers in TESTERS.values() for tester in testers],
                         ids=lambda tester: tester.name)
def test_every_family_s_card_keeps_its_tags(tester, tmp_path):
    tester.model().save_pretrained(tmp_path)
    assert ModelCard.load(write_model_card(tmp_path, example_inputs=[])).data.tags == WRITTEN_BEFORE[tester.name]


@pytest.mark.parametrize("coattention, kind", [("parallel", "co-attention"), ("alternating", "co-attention"),
                                               ("context", "attention"), ("none", "no-attention")])
def test_a_vqa_card_names_its_attention(coattention, kind):
    tags = card_tags(FAMILIES["vqa"], {"coattention": coattention}, {}, None)
    assert tags == ["hf_bahdanau", kind, "vision", "visual-question-answering", "custom_code"]


def test_a_transformer_baseline_s_card_has_its_own_tags_alone():
    assert card_tags(BASELINES["marian"], {}, {}, None) == ["transformer", "marian", "baseline", "translation"]


def test_the_engine_adds_the_package_the_preset_the_task_and_custom_code_once():
    memory = FAMILIES["memory"]
    as_a_list = dataclasses.replace(memory, card=dataclasses.replace(memory.card, tags=lambda config, processor: [
        "hf_bahdanau", "memory-network", "attention", "memory-question-answering", "custom_code"]))  # all, as before
    expected = ["hf_bahdanau", "babi", "memory-network", "attention", "memory-question-answering", "custom_code"]
    assert card_tags(memory, {}, {}, "babi") == card_tags(as_a_list, {}, {}, "babi") == expected
    assert card_tags(dataclasses.replace(memory, card=dataclasses.replace(memory.card, tags=())), {}, {}, None) == [
        "hf_bahdanau", "memory-question-answering", "custom_code"]


def test_a_family_declares_only_what_differs_from_the_defaults():
    words = CardWords(task_words="Toy", architecture=lambda config, state: None, description=lambda config, p: "",
                      usage=lambda *args, **kwargs: "", limitations=lambda config, processor: [])
    assert words.pipeline_tag is None and words.own_tags({}, {}) == []
    assert words.examples(None, None) == ["An example input."] and words.examples(None, ["given"]) == ["given"]
    heads = (Head(AutoModel, object), Head(AutoModelForSequenceClassification, object))
    assert Family("toy", "toy", object, heads, words).card_head is AutoModelForSequenceClassification  # the last's
    assert Family("toy", "toy", object, heads, words, card_head=AutoModel).card_head is AutoModel
