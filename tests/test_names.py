"""One naming rule for the public classes, transformers' own: every config, model, output, pipeline and image
processor class starts with the model's prefix, ``Bahdanau``; the data collators are named as transformers names its
own (``DataCollatorFor…``, ``DataCollatorWith…``). The names from before the rule still import, from the same modules
and from ``hf_bahdanau``, as the renamed class with a FutureWarning naming it; a new save writes the new names."""

import importlib
import json
import pkgutil
import re

import pytest
import torch
from transformers import BaseImageProcessor, Pipeline, PreTrainedConfig, PreTrainedModel
from transformers.utils import ModelOutput

import hf_bahdanau
from hf_bahdanau import (
    BahdanauForPointerNetwork, BahdanauForTextPairClassification, BahdanauForVisualQuestionAnswering,
    BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification, BahdanauPointerConfig,
    BahdanauTextCoAttentionConfig, BahdanauVisualQuestionAnsweringConfig,
)
from hf_bahdanau import modeling
from hf_bahdanau.modeling.state import RecurrentDecoderCache
from hf_bahdanau.modeling.transformers_private import cache_of
from tests.conftest import BOS, padded_batch, tiny_model

MODEL_CLASSES = (PreTrainedConfig, PreTrainedModel, ModelOutput, Pipeline, BaseImageProcessor)
PUBLIC_MODULES = ["hf_bahdanau", "hf_bahdanau.ensemble"] + [
    f"hf_bahdanau.modeling.{module.name}" for module in pkgutil.iter_modules(modeling.__path__)]

# (module, old name, new name): every class renamed by the prefix rule, in the module that defines it
RENAMED = [
    ("hf_bahdanau.modeling.configuration_coattention", "CoAttentionConfig", "BahdanauCoAttentionConfig"),
    ("hf_bahdanau.modeling.configuration_coattention", "VisualQuestionAnsweringConfig",
     "BahdanauVisualQuestionAnsweringConfig"),
    ("hf_bahdanau.modeling.configuration_memory", "MemoryNetworkConfig", "BahdanauMemoryNetworkConfig"),
    ("hf_bahdanau.modeling.configuration_text_coattention", "TextCoAttentionConfig", "BahdanauTextCoAttentionConfig"),
    ("hf_bahdanau.modeling.modeling_coattention", "CoAttentionAnswerOutput", "BahdanauCoAttentionAnswerOutput"),
    ("hf_bahdanau.modeling.modeling_coattention", "CoAttentionForAnswering", "BahdanauCoAttentionForAnswering"),
    ("hf_bahdanau.modeling.modeling_coattention", "CoAttentionModel", "BahdanauCoAttentionModel"),
    ("hf_bahdanau.modeling.modeling_coattention", "CoAttentionModelOutput", "BahdanauCoAttentionModelOutput"),
    ("hf_bahdanau.modeling.modeling_coattention", "CoAttentionPreTrainedModel", "BahdanauCoAttentionPreTrainedModel"),
    ("hf_bahdanau.modeling.modeling_coattention", "VisualQuestionAnsweringModel",
     "BahdanauVisualQuestionAnsweringModel"),
    ("hf_bahdanau.modeling.modeling_coattention", "VisualQuestionAnsweringOutput",
     "BahdanauVisualQuestionAnsweringOutput"),
    ("hf_bahdanau.modeling.modeling_memory_network", "MemoryNetworkForSequenceClassification",
     "BahdanauMemoryNetworkForSequenceClassification"),
    ("hf_bahdanau.modeling.modeling_memory_network", "MemoryNetworkModel", "BahdanauMemoryNetworkModel"),
    ("hf_bahdanau.modeling.modeling_memory_network", "MemoryNetworkModelOutput", "BahdanauMemoryNetworkModelOutput"),
    ("hf_bahdanau.modeling.modeling_memory_network", "MemoryNetworkOutput", "BahdanauMemoryNetworkOutput"),
    ("hf_bahdanau.modeling.modeling_memory_network", "MemoryNetworkPreTrainedModel",
     "BahdanauMemoryNetworkPreTrainedModel"),
    ("hf_bahdanau.modeling.modeling_text_coattention", "TextCoAttentionModel", "BahdanauTextCoAttentionModel"),
    ("hf_bahdanau.modeling.modeling_text_coattention", "TextPairClassifierOutput", "BahdanauTextPairClassifierOutput"),
    ("hf_bahdanau.modeling.modeling_pointer", "PointerNetworkEncoderOutput", "BahdanauPointerNetworkEncoderOutput"),
    ("hf_bahdanau.modeling.image_encoder", "ImageEncoderOutput", "BahdanauImageEncoderOutput"),
    ("hf_bahdanau.modeling.pipeline_memory", "MemoryQuestionAnsweringPipeline",
     "BahdanauMemoryQuestionAnsweringPipeline"),
    ("hf_bahdanau.modeling.pipeline_pointer", "PointingPipeline", "BahdanauPointingPipeline"),
    ("hf_bahdanau.modeling.pipeline_text_pair", "PassageQuestionAnsweringPipeline",
     "BahdanauPassageQuestionAnsweringPipeline"),
    ("hf_bahdanau.modeling.pipeline_vqa", "VisualQuestionAnsweringPipeline",
     "BahdanauVisualQuestionAnsweringPipeline"),
    ("hf_bahdanau.modeling.state", "EncoderMemory", "EncodedSource"),  # "memory" names the memory network only
    ("hf_bahdanau.ensemble", "EnsembleEncoderOutput", "BahdanauEnsembleEncoderOutput"),
    ("hf_bahdanau.ensemble", "EnsembleForConditionalGeneration", "BahdanauEnsembleForConditionalGeneration"),
]
# the old names hf_bahdanau itself exported
PACKAGE_RENAMED = ["EnsembleForConditionalGeneration", "MemoryNetworkConfig", "MemoryNetworkForSequenceClassification",
                   "MemoryNetworkModel", "MemoryNetworkOutput", "TextCoAttentionConfig", "TextCoAttentionModel",
                   "TextPairClassifierOutput", "VisualQuestionAnsweringConfig", "VisualQuestionAnsweringModel",
                   "VisualQuestionAnsweringOutput"]


def public_classes(module_name: str) -> dict[str, type]:
    module = importlib.import_module(module_name)
    return {name: getattr(module, name) for name in getattr(module, "__all__", ())
            if isinstance(getattr(module, name), type)}


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_model_class_starts_with_bahdanau_and_every_collator_with_data_collator(module_name):
    for name, cls in public_classes(module_name).items():
        if issubclass(cls, MODEL_CLASSES):
            assert name.startswith("Bahdanau"), f"{module_name}.{name}"
        if "Collator" in name:
            assert name.startswith("DataCollator"), f"{module_name}.{name}"


def test_every_public_class_of_the_package_follows_the_rule():
    names = sorted(public_classes("hf_bahdanau"))
    assert [name for name in names if not name.startswith(("Bahdanau", "DataCollator"))] == []
    assert not set(PACKAGE_RENAMED) & set(hf_bahdanau.__all__)  # `import *` warns about nothing


@pytest.mark.parametrize("module_name, old, new", RENAMED, ids=[old for _, old, _ in RENAMED])
def test_an_old_name_is_the_renamed_class_with_a_warning_that_names_it(module_name, old, new):
    module = importlib.import_module(module_name)
    with pytest.warns(FutureWarning, match=rf"^`{re.escape(module_name)}\.{old}` is now "
                                           rf"`{re.escape(module_name)}\.{new}`; import it by that name\.$"):
        renamed = getattr(module, old)
    assert renamed is getattr(module, new) and renamed.__name__ == new
    assert old not in module.__all__ and new in module.__all__


@pytest.mark.parametrize("old", PACKAGE_RENAMED)
def test_an_old_name_imports_from_the_package_with_a_warning(old):
    new = f"Bahdanau{old}"
    with pytest.warns(FutureWarning, match=rf"^`hf_bahdanau\.{old}` is now `hf_bahdanau\.[\w.]+\.{new}`; import it "
                                           r"by that name\.$"):
        exec(f"from hf_bahdanau import {old} as renamed", namespace := {})  # noqa: S102  (the `from` form itself)
    assert namespace["renamed"] is getattr(hf_bahdanau, new)


def test_a_name_that_never_was_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"^module 'hf_bahdanau' has no attribute 'MemoryNetworkThing'$"):
        hf_bahdanau.MemoryNetworkThing  # noqa: B018
    from hf_bahdanau.modeling import configuration_memory

    with pytest.raises(AttributeError, match=r"^module 'hf_bahdanau.modeling.configuration_memory' has no attribute "
                                             r"'MemoryConfig'$"):
        configuration_memory.MemoryConfig  # noqa: B018


LABELS = dict(id2label={0: "no", 1: "yes"}, label2id={"no": 0, "yes": 1})


@pytest.mark.parametrize("model, head, config", [
    (lambda: BahdanauMemoryNetworkForSequenceClassification(BahdanauMemoryNetworkConfig(
        vocab_size=12, hidden_size=4, memory_size=3, **LABELS)),
     "BahdanauMemoryNetworkForSequenceClassification", "BahdanauMemoryNetworkConfig"),
    (lambda: BahdanauForTextPairClassification(BahdanauTextCoAttentionConfig(
        vocab_size=12, hidden_size=4, attention_size=3, answer_hidden_size=3, context_hidden_size=2, **LABELS)),
     "BahdanauForTextPairClassification", "BahdanauTextCoAttentionConfig"),
    (lambda: BahdanauForVisualQuestionAnswering(BahdanauVisualQuestionAnsweringConfig(
        vocab_size=12, cnn_channels=[2], cnn_pool_sizes=[[2, 2]], hidden_size=4, attention_size=3, answer_hidden_size=3,
        phrase_windows=[1], **LABELS)),
     "BahdanauForVisualQuestionAnswering", "BahdanauVisualQuestionAnsweringConfig"),
    (lambda: BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, embedding_size=4, hidden_size=4)),
     "BahdanauForPointerNetwork", "BahdanauPointerConfig"),
], ids=["memory", "passage", "vqa", "pointer"])
def test_a_new_save_names_the_new_classes_and_its_code_defines_them(tmp_path, model, head, config):
    model().save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["architectures"] == [head]
    named = list(saved["auto_map"].values()) + [entry["impl"] for entry in saved["custom_pipelines"].values()]
    assert f"{config}" in saved["auto_map"]["AutoConfig"] and any(value.endswith(f".{head}") for value in named)
    for value in named:
        module, name = value.split(".")
        assert name.startswith("Bahdanau"), value
        assert re.search(rf"^class {name}\(", (tmp_path / f"{module}.py").read_text(), flags=re.M), value


# "memory" names the memory network only: the decoding names that said it, and what they are now
OLD_ATTRIBUTES = [("RecurrentDecoderCache", "memory", "encoded"),
                  ("RecurrentDecoderCache", "head_memory", "output_layer_inputs"),
                  ("BahdanauDecoder", "prepare_memory", "prepare_encoded_source"),
                  ("BahdanauDecoder", "shares_beam_memory", "shares_encoded_source"),
                  ("BahdanauForPointerNetwork", "pointer_memory", "pointer_annotations")]


def old_attribute_warning(owner: str, old: str, new: str) -> str:
    return rf"^`{owner}\.{old}` is now `{owner}\.{new}`; use that name\.$"


def copying_model_and_cache():
    """A pointer-generator seq2seq model (its cache holds a ``CopySource``) and the cache of one decoder step."""
    model = tiny_model("rnnsearch+copy")
    input_ids, attention_mask = padded_batch()
    with torch.no_grad():
        outputs = model(input_ids=input_ids, attention_mask=attention_mask,
                        decoder_input_ids=torch.full((3, 1), BOS), use_cache=True)
    return model, input_ids, attention_mask, cache_of(outputs)


@pytest.mark.parametrize("owner, old, new", OLD_ATTRIBUTES, ids=[old for _, old, _ in OLD_ATTRIBUTES])
def test_an_old_attribute_name_reads_the_new_one_with_a_warning_that_names_it(owner, old, new):
    model, _, _, cache = copying_model_and_cache()
    pointer = BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, embedding_size=4, hidden_size=4))
    instance = {"RecurrentDecoderCache": cache, "BahdanauDecoder": model.model.decoder,
                "BahdanauForPointerNetwork": pointer}[owner]
    assert type(instance).__name__ == owner
    with pytest.warns(FutureWarning, match=old_attribute_warning(owner, old, new)):
        value = getattr(instance, old)
    assert value == getattr(instance, new)  # the same object, or the same bound method


def test_the_caches_old_field_names_set_and_build_the_new_ones_with_a_warning():
    _, _, _, cache = copying_model_and_cache()
    encoded, copy_source = cache.encoded, cache.output_layer_inputs
    with pytest.warns(FutureWarning, match=old_attribute_warning("RecurrentDecoderCache", "head_memory",
                                                                 "output_layer_inputs")):
        cache.head_memory = None
    assert cache.output_layer_inputs is None and "head_memory" not in vars(cache)
    with pytest.warns(FutureWarning, match=r"^`RecurrentDecoderCache\.__init__\(memory=…\)` is now `encoded=…`; pass "
                                           r"it by that name\.$"):
        rebuilt = RecurrentDecoderCache(memory=encoded, state=cache.state, output_layer_inputs=copy_source)
    assert rebuilt.encoded is encoded and rebuilt.output_layer_inputs is copy_source


def test_forward_takes_head_memory_as_output_layer_inputs_with_a_warning_and_refuses_both():
    model, input_ids, attention_mask, cache = copying_model_and_cache()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=torch.full((3, 1), BOS),
                  use_cache=True)
    with torch.no_grad(), pytest.warns(FutureWarning, match=r"^`BahdanauModel\.forward\(head_memory=…\)` is now "
                                                            r"`output_layer_inputs=…`; pass it by that name\.$"):
        outputs = model.model(**inputs, head_memory=cache.output_layer_inputs)
    assert cache_of(outputs).output_layer_inputs is cache.output_layer_inputs
    with pytest.raises(TypeError, match=r"^BahdanauModel\.forward\(\) got `head_memory` and its new name "
                                        r"`output_layer_inputs`: pass `output_layer_inputs` only\.$"):
        model.model(**inputs, head_memory=None, output_layer_inputs=None)


@pytest.mark.parametrize("name, model_type", [("BahdanauCoAttentionConfig", "bahdanau-coattention"),
                                              ("BahdanauDecoderConfig", "bahdanau-decoder"),
                                              ("BahdanauImageEncoderConfig", "bahdanau-image-encoder"),
                                              ("BahdanauImageDecoderConfig", "bahdanau-image-decoder")])
def test_the_sub_configs_import_from_the_package_and_auto_config_builds_them(name, model_type):
    """The parts of the composed configs (image-to-text, VQA) are public as every other config is."""
    from transformers import AutoConfig

    config_class = getattr(hf_bahdanau, name)
    assert name in hf_bahdanau.__all__ and config_class.model_type == model_type
    assert type(AutoConfig.for_model(model_type)) is config_class
