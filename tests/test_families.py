"""A model family is one descriptor (``hf_bahdanau.families.Family``) plus its model files: a toy family written to a
temporary folder at run time, nothing else edited, gets the Auto classes, save/load, a folder that loads with
``trust_remote_code=True`` where hf_bahdanau is not installed, a pipeline, a model card from the generic engine and
the whole contract suite (tests/contract/). Also: every family of the package is registered from its descriptor, and
``family_of`` finds a folder's family."""

import copy
import dataclasses
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, pipeline

import hf_bahdanau
from child_process import run_child
from contract.contract import ContractTests
from contract import testers
from file_imports import import_file
from hf_bahdanau.cards import write_model_card
from hf_bahdanau.families import FAMILIES, family_for_task, family_of, find_family
from training.common.tokenization import train_tokenizer

TOY_CONFIG = '''
from transformers import PreTrainedConfig


class ToyBagConfig(PreTrainedConfig):
    """A bag of embeddings: the mean of the tokens' embeddings, then a linear map to the labels."""

    model_type = "toy-bag"
    vocab_size: int = 16
    hidden_size: int = 4
    pad_token_id: int | None = 0

    def __post_init__(self, **kwargs):
        for name in ("vocab_size", "hidden_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
        super().__post_init__(**kwargs)
'''
TOY_MODEL = '''
import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

from .configuration_toy import ToyBagConfig


class ToyBagForSequenceClassification(PreTrainedModel):
    """a_j = m_j / Σ_k m_k over the real tokens (attention_mask m), logits = W Σ_j a_j E x_j + b:
    [batch, tokens] -> [batch, labels]; the uniform weights a [batch, tokens] are its attentions."""

    config_class = ToyBagConfig
    accepts_loss_kwargs = True

    def __init__(self, config: ToyBagConfig):
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, labels=None, num_items_in_batch=None, **kwargs):
        if input_ids.min() < 0 or input_ids.max() >= self.config.vocab_size:
            raise ValueError(f"`input_ids` must be in [0, {self.config.vocab_size}), got {input_ids.max().item()}.")
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        if not ((mask == 0) | (mask == 1)).all():
            raise ValueError("`attention_mask` must hold 0 and 1 only.")
        weights = mask.to(self.embeddings.weight.dtype) / mask.sum(1, keepdim=True)
        logits = self.classifier((weights[..., None] * self.embeddings(input_ids)).sum(1))
        loss = None
        if labels is not None:
            kept = labels != -100
            if (labels[kept] < 0).any() or (labels[kept] >= self.config.num_labels).any():
                raise ValueError(f"`labels` must be -100 or in [0, {self.config.num_labels}).")
            total = nn.functional.cross_entropy(logits, labels, ignore_index=-100, reduction="sum")
            loss = total / (num_items_in_batch if num_items_in_batch is not None else kept.sum().clamp(min=1))
        return SequenceClassifierOutput(loss=loss, logits=logits, attentions=(weights,))
'''
TOY_DESCRIPTOR = '''
import json
import re

from transformers import AutoModelForSequenceClassification

from hf_bahdanau.families import CardWords, Family, Head, Picture, register_family
from hf_bahdanau.families.words import Architecture, text_examples
from toybag.configuration_toy import ToyBagConfig
from toybag.modeling_toy import ToyBagForSequenceClassification


def usage(model_id, examples, generation, config, remote):
    trust = ", trust_remote_code=True" if remote else ""
    return (f"from transformers import pipeline\\n\\nclassifier = pipeline('text-classification', "
            f"model={json.dumps(model_id)}{trust})\\nprint(classifier({json.dumps(examples)}))")


TOY = register_family(Family(
    name="toy-bag", task="toy-classification", config_class=ToyBagConfig,
    heads=(Head(AutoModelForSequenceClassification, ToyBagForSequenceClassification),),
    card=CardWords(
        task_words="Toy Classification", pipeline_tag="text-classification",
        architecture=lambda config, state: Architecture(
            None, ("Toy et al., 2026", "Bags of Embeddings", "https://example.org/toy"),
            [f"**Bag**: the mean of {config['hidden_size']}-dimensional embeddings"], family="a bag of embeddings"),
        tags=("toy",),
        description=lambda config, processor: f"It labels a text with one of {len(config['id2label'])} labels.",
        usage=usage, limitations=lambda config, processor: ["Word order is lost."],
        examples=text_examples("mary moved"), metric_names={"bag_purity": "Bag purity"}.get,
        pictures=(Picture(re.compile(r"bag_\\d+\\.png"), "Bags", "Each text's bag.", "bag"),)),
))
'''
CORPUS = ["mary moved to the bathroom", "john went to the hallway", "where is mary"]
LABELS = {0: "bathroom", 1: "hallway", 2: "garden"}
REMOTE = """
import json
import sys

import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, pipeline

folder = sys.argv[1]
config = AutoConfig.from_pretrained(folder, trust_remote_code=True)
model = AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)
classifier = pipeline("text-classification", model=folder, trust_remote_code=True)
inputs = {name: torch.tensor(value) for name, value in json.loads(sys.argv[2]).items()}
print(json.dumps({"config": type(config).__name__, "model": type(model).__name__,
                  "logits": model(**inputs).logits.tolist(), "labels": classifier(sys.argv[3])}))
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy family's descriptor module, imported from a temporary folder (``toy_family.py`` and the package
    ``toybag/`` of its model files); unregistered again after the module's tests."""
    root = tmp_path_factory.mktemp("toy")
    (root / "toybag").mkdir()
    (root / "toybag" / "__init__.py").write_text("")
    (root / "toybag" / "configuration_toy.py").write_text(textwrap.dedent(TOY_CONFIG))
    (root / "toybag" / "modeling_toy.py").write_text(textwrap.dedent(TOY_MODEL))
    (root / "toy_family.py").write_text(textwrap.dedent(TOY_DESCRIPTOR))
    try:
        import_file(root / "toybag", "toybag")  # the model files' package, imported by name from here on
        yield import_file(root / "toy_family.py", "toy_family")
    finally:
        FAMILIES.pop("toy-bag", None)
        for name in ("toy_family", "toybag", "toybag.configuration_toy", "toybag.modeling_toy"):
            sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def saved(toy, tmp_path_factory):
    """A toy model saved with its tokenizer: (folder, model)."""
    torch.manual_seed(0)
    tokenizer = train_tokenizer(CORPUS, kind="word")
    config = toy.TOY.config_class(vocab_size=len(tokenizer), id2label=LABELS,
                                  label2id={label: index for index, label in LABELS.items()})
    model = AutoModelForSequenceClassification.from_config(config).eval()
    folder = tmp_path_factory.mktemp("saved") / "toy"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model


def test_the_toy_family_is_registered_from_its_descriptor_alone(toy):
    assert FAMILIES["toy-bag"] is toy.TOY and family_for_task("toy-classification") is toy.TOY
    assert toy.TOY.card_head is AutoModelForSequenceClassification  # not declared: its last head's Auto class
    config = AutoConfig.for_model("toy-bag", num_labels=3)
    assert type(config).__name__ == "ToyBagConfig" and config.hidden_size == 4
    assert type(AutoModelForSequenceClassification.from_config(config)).__name__ == "ToyBagForSequenceClassification"
    assert family_of({"model_type": "toy-bag"}) is toy.TOY


def test_a_saved_toy_folder_loads_with_the_same_outputs(saved):
    folder, model = saved
    inputs = {"input_ids": torch.tensor([[3, 4, 5], [6, 7, 0]]), "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]])}
    loaded = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    assert type(loaded) is type(model)
    torch.testing.assert_close(loaded(**inputs).logits, model(**inputs).logits, rtol=0, atol=0)
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"] == {"AutoConfig": "configuration_toy.ToyBagConfig",
                                  "AutoModelForSequenceClassification": "modeling_toy.ToyBagForSequenceClassification"}
    assert sorted(path.name for path in folder.glob("*.py")) == ["configuration_toy.py", "modeling_toy.py"]


@pytest.mark.slow  # a child process, as the contract's remote-code check
def test_the_toy_folder_loads_and_runs_its_pipeline_in_a_process_without_the_package(saved, tmp_path):
    folder, model = saved
    text = "mary moved to the bathroom"
    encoded = AutoTokenizer.from_pretrained(folder)([text])
    inputs = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}
    expected = model(**{name: torch.tensor(value) for name, value in inputs.items()}).logits
    here = pipeline("text-classification", model=str(folder))(text)
    remote = run_child(REMOTE, tmp_path, str(folder), json.dumps(inputs), text, isolated=True, hide_package=True)
    assert remote["config"] == "ToyBagConfig" and remote["model"] == "ToyBagForSequenceClassification"
    torch.testing.assert_close(torch.tensor(remote["logits"]), expected, rtol=1e-6, atol=1e-6)
    assert remote["labels"][0]["label"] == here[0]["label"] == LABELS[int(expected.argmax())]
    assert remote["labels"][0]["score"] == pytest.approx(here[0]["score"], abs=1e-6)


def test_the_toy_folder_gets_a_card_from_the_generic_engine(saved, tmp_path):
    folder, _ = saved
    (folder / "bag_0.png").write_bytes(b"")
    (folder / "all_results.json").write_text(json.dumps({"eval_accuracy": 0.5, "eval_bag_purity": 0.25}))
    card = ModelCard.load(write_model_card(folder))
    assert card.data.pipeline_tag == "text-classification"
    assert card.data.tags == ["hf_bahdanau", "toy", "toy-classification", "custom_code"]  # its own, the engine's
    assert card.data.widget == [{"text": "mary moved"}]
    assert card.data.eval_results[0].task_type == "toy-classification"
    assert card.data.eval_results[0].task_name == "Toy Classification"
    text = card.text
    assert text.startswith(f"\n# toy\n\nA bag of embeddings (Toy et al., 2026), for toy classification; built with ")
    assert ("**Architecture**: a bag of embeddings (Toy et al., 2026), as in [Bags of Embeddings]"
            "(https://example.org/toy).\n\n- **Bag**: the mean of 4-dimensional embeddings\n- **Parameters**: ") in text
    assert "It labels a text with one of 3 labels." in text
    assert "| validation | Accuracy | 0.5 |\n| validation | Bag purity | 0.25 |\n" in text  # shared words, its own
    assert [result.metric_name for result in card.data.eval_results] == ["Accuracy", "Bag purity"]
    assert "### Bags\n\nEach text's bag.\n\n![bag 1](bag_0.png)\n" in text
    assert ("```python\nimport hf_bahdanau  # noqa: F401  (registers the toy-bag model type)\nfrom transformers import "
            f"pipeline\n\nclassifier = pipeline('text-classification', model=\"{folder}\")\n") in text
    assert f"model=\"{folder}\", trust_remote_code=True)\nprint(classifier([\"mary moved\"]))\n```" in text
    assert text.endswith("## Limitations\n\n- Word order is lost.")


def test_the_commands_serve_or_refuse_a_folder_as_its_descriptor_says(toy, saved, monkeypatch):
    """hf-bahdanau-translate, -export and -explore read a family's ``text_to_text`` and ``refusal``, not its name."""
    from hf_bahdanau.cli import check_seq2seq
    from hf_bahdanau.onnx.export import unexportable_options

    folder, _ = saved
    config = AutoConfig.from_pretrained(folder)
    with pytest.raises(SystemExit) as exit:
        check_seq2seq(config, "toy", "hf-bahdanau-translate")
    assert exit.value.code == ("hf-bahdanau-translate: error: 'toy' holds a ToyBagForSequenceClassification (load it "
                               "with AutoModelForSequenceClassification), not a seq2seq model: hf-bahdanau-translate "
                               "reads folders of hf_bahdanau's BahdanauForConditionalGeneration (text in, text out) "
                               "only.")
    assert unexportable_options(config) == ["model_type='toy-bag' (only seq2seq models export)"]
    monkeypatch.setitem(FAMILIES, "toy-bag", dataclasses.replace(toy.TOY, refusal="is a toy: it labels texts."))
    with pytest.raises(SystemExit) as exit:
        check_seq2seq(config, "toy", "hf-bahdanau-export")
    assert exit.value.code == "hf-bahdanau-export: error: 'toy' is a toy: it labels texts."
    monkeypatch.setitem(FAMILIES, "toy-bag", dataclasses.replace(toy.TOY, text_to_text=True))
    assert check_seq2seq(config, "toy", "hf-bahdanau-explore") is None
    assert unexportable_options(config) == []


def test_no_client_branches_on_a_family_s_or_a_task_s_name():
    """The card engine, the commands, the ONNX export and the Auto registration read the descriptors: no
    ``task == "…"``, no ``model_type == "…"`` (a comparison with a literal name) is left in them."""
    root = Path(hf_bahdanau.__file__).parent
    clients = [*sorted((root / "cards").glob("*.py")), *sorted((root / "onnx").glob("*.py")), root / "cli.py",
               root / "__init__.py"]
    branch = re.compile(r"""\b(task|model_type)\s*(==|!=|in)\s*[("'\[]""")
    found = [f"{path.name}:{number}: {line.strip()}" for path in clients
             for number, line in enumerate(path.read_text().splitlines(), 1) if branch.search(line)]
    assert found == []


def toy_batch(left: bool) -> dict[str, torch.Tensor]:
    """Three texts of 4, 2 and 1 tokens, padded with 0 on the right (or the left)."""
    rows = [[3, 4, 5, 6], [7, 8], [9]]
    pad = [[0] * (4 - len(row)) for row in rows]
    ids = [p + row if left else row + p for row, p in zip(rows, pad)]
    mask = [[0] * len(p) + [1] * len(row) if left else [1] * len(row) + [0] * len(p) for row, p in zip(rows, pad)]
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)}


def toy_reference(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The toy's equation one text at a time: W mean_j E x_j + b over its real tokens."""
    rows = []
    for ids, mask in zip(batch["input_ids"], batch["attention_mask"]):
        bag = model.embeddings.weight[ids[mask.bool()]].mean(0)
        rows.append(model.classifier.weight @ bag + model.classifier.bias)
    return torch.stack(rows)


class TestToyContract(ContractTests):
    """The contract suite (tests/contract/) run on the toy head, as on every head of the package."""

    @pytest.fixture
    def tester(self, toy) -> testers.Tester:
        torch.manual_seed(0)
        model = toy.TOY.heads[0].model_class(toy.TOY.config_class(vocab_size=12, num_labels=3)).double().eval()
        return testers.Tester(
            name="toy-bag", family="toy-bag", auto_class=AutoModelForSequenceClassification,
            model=lambda: copy.deepcopy(model), batch=toy_batch,
            padded={"input_ids": "attention_mask", "attention_mask": "attention_mask"},
            outputs=lambda model, output, batch: {"logits": testers.Over(output.logits)},
            weights=lambda model, output, batch: {"attentions": testers.Over(
                output.attentions[0], {1: batch["attention_mask"]})},
            labels=lambda batch: torch.tensor([1, -100, 2]), reference=toy_reference,
            padding_rows=lambda model: [(model.embeddings.weight, 0)])


@pytest.mark.parametrize(("config", "family"), [
    ({"model_type": "bahdanau", "architectures": ["BahdanauForConditionalGeneration"]}, "seq2seq"),
    ({"model_type": "bahdanau"}, "seq2seq"),  # saved without a model: the shared type's default family
    ({"model_type": "bahdanau", "architectures": ["BahdanauForTokenClassification"]}, "tagger"),  # saved by 0.1.0
    ({"model_type": "bahdanau", "architectures": ["BahdanauForSequenceClassification"]}, "classifier"),
    ({"model_type": "bahdanau-pointer"}, "pointer"),
    ({"model_type": "bahdanau-memory", "architectures": ["MemoryNetworkForSequenceClassification"]}, "memory"),
    ({"model_type": "bahdanau-image-to-text"}, "image-to-text"),
    ({"model_type": "bahdanau-vqa"}, "vqa"),
    ({"model_type": "bahdanau-text-coattention"}, "passage"),
])
def test_a_folder_s_family_is_found_from_its_config(config, family):
    assert family_of(config).name == family


def test_a_config_of_no_family_is_named():
    assert find_family({"model_type": "t5"}) is None
    with pytest.raises(ValueError, match=r"^config.json's `model_type` 't5' is no hf_bahdanau family's; the families "
                                         r"are \['bahdanau', 'bahdanau-encoder', "):
        family_of({"model_type": "t5"})
    with pytest.raises(ValueError, match=r"^`task` must be one of \['translation', 'token-classification', "):
        family_for_task("summarization")


def test_every_family_of_the_package_registers_its_heads_with_the_auto_classes():
    assert list(FAMILIES)[:8] == ["seq2seq", "tagger", "classifier", "pointer", "memory", "image-to-text", "vqa",
                                  "passage"]
    for family in FAMILIES.values():
        assert AutoConfig.for_model(family.model_type).__class__ is family.config_class
        for head in family.heads:
            assert head.auto_class._model_mapping[family.config_class] is head.model_class, (family.name, head)
        assert family.card_head in {head.auto_class for head in family.heads}, family.name
