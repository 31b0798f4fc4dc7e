"""BahdanauEncoderConfig: the tagger's and the classifiers' config holds the encoder's and their own fields and no
decoder field; a "bahdanau" config (a folder saved by hf_bahdanau 0.1.0, a seq2seq checkpoint) is upgraded on load,
with a log line."""

import dataclasses
import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoModelForTokenClassification, \
    PreTrainedConfig

from fixtures.saved_outputs import read_saved, recorded_outputs
from hf_bahdanau import (
    BahdanauConfig, BahdanauEncoderConfig, BahdanauForSequenceClassification, BahdanauForTokenClassification,
    BahdanauImageToTextConfig, BahdanauPointerConfig,
)
from hf_bahdanau.families import family_of
from hf_bahdanau.modeling.configuration_bahdanau import ClassifierFields, EncoderFields
from hf_bahdanau.modeling.configuration_encoder_only import upgrade_bahdanau_config

SAVED = Path(__file__).parent / "fixtures" / "saved_by_0.1.0"
ENCODER_FIELDS = ["attention_size", "bidirectional", "char_embedding_size", "char_hidden_size", "dropout",
                  "embedding_size", "encoder_hidden_size", "encoder_layers", "encoder_self_attention", "eos_token_id",
                  "gaussian_kernel_learnable", "gaussian_kernel_width", "hidden_size", "init_std",
                  "max_source_positions", "max_training_source_length", "meta_embedding_sources",
                  "num_attention_heads", "pad_token_id", "pretrained_embedding_size", "reverse_source", "rnn_type",
                  "token_spelling_length", "vocab_size"]
CLASSIFIER_FIELDS = ["classifier_attention_size", "classifier_dropout", "hierarchical", "pooling_type",
                     "self_attention_penalty_weight", "self_attention_rows", "sentence_separator_token_id",
                     "token_attention_type"]
DECODER_FIELDS = ["attention_mode", "attention_scope", "attention_type", "bos_token_id", "bridge", "context_gate",
                  "context_mode", "copy_attention", "coverage_loss_weight", "decoder_layers",
                  "decoder_start_token_id", "decoder_style", "deep_output", "doubly_stochastic_weight",
                  "hard_attention_temperature", "input_feeding", "local_window", "location_filters",
                  "location_kernel_size", "location_sharpening", "location_smoothing", "monotonic_bias_init",
                  "monotonic_noise_std", "output_size", "reinforce_baseline", "reinforce_baseline_decay",
                  "reinforce_entropy_weight", "reinforce_expected_context_probability", "tie_word_embeddings",
                  "unk_token_id", "use_cache", "use_coverage"]
UPGRADE_LOG = ("Upgraded a 'bahdanau' config (hf_bahdanau 0.1.0, or a seq2seq model's) to BahdanauEncoderConfig "
               "('bahdanau-encoder'), which the tagger and the classifiers read: dropped 32 decoder fields they never "
               "read{}. Save the model again to store the new config.")

SEQ2SEQ_REFUSAL = ("{given}: {config} (model type {model_type!r}) has no field of the tagger or the classifiers, which "
                   "read BahdanauEncoderConfig (model type 'bahdanau-encoder'): build their config with it, or load a "
                   "saved one with BahdanauEncoderConfig.from_pretrained.")
SEQ2SEQ_FOLDERS = ["image_to_text", "pointer", "seq2seq_luong", "seq2seq_rnnsearch"]


def names(config_class: type) -> list[str]:
    return sorted(config_field.name for config_field in dataclasses.fields(config_class))


def test_the_encoder_fields_are_declared_once_and_the_encoder_config_has_no_decoder_field():
    assert names(EncoderFields) == ENCODER_FIELDS and names(ClassifierFields) == CLASSIFIER_FIELDS
    inherited = names(PreTrainedConfig)
    assert names(BahdanauEncoderConfig) == sorted([*inherited, *ENCODER_FIELDS, *CLASSIFIER_FIELDS])
    assert names(BahdanauConfig) == sorted([*inherited, *ENCODER_FIELDS, *DECODER_FIELDS])  # no classifier field
    # declared in the parts only, not again in either config
    for config_class in (BahdanauConfig, BahdanauEncoderConfig):
        assert not set(config_class.__dict__.get("__annotations__", {})) & {*ENCODER_FIELDS, *CLASSIFIER_FIELDS}
    config = BahdanauEncoderConfig()
    assert config.model_type == "bahdanau-encoder" and config.is_encoder_decoder is False


def test_a_tagger_s_saved_config_json_has_no_decoder_field(tmp_path):
    config = BahdanauEncoderConfig(vocab_size=12, embedding_size=8, hidden_size=8, num_labels=3)
    BahdanauForTokenClassification(config).save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert sorted(saved) == sorted([*ENCODER_FIELDS, *CLASSIFIER_FIELDS, "architectures", "auto_map",
                                    "custom_pipelines", "dtype", "id2label", "label2id", "model_type",
                                    "transformers_version"])
    assert saved["model_type"] == "bahdanau-encoder" and saved["architectures"] == ["BahdanauForTokenClassification"]
    assert saved["auto_map"] == {
        "AutoConfig": "configuration_encoder_only.BahdanauEncoderConfig",
        "AutoModelForTokenClassification": "modeling_token_classification.BahdanauForTokenClassification",
        "AutoModelForSequenceClassification": "modeling_sequence_classification.BahdanauForSequenceClassification",
    }
    assert type(AutoConfig.from_pretrained(tmp_path)) is BahdanauEncoderConfig


@pytest.mark.parametrize("auto_class, head, folder", [
    (AutoModelForTokenClassification, BahdanauForTokenClassification, "tagger"),
    (AutoModelForSequenceClassification, BahdanauForSequenceClassification, "classifier"),
    (AutoModelForSequenceClassification, BahdanauForSequenceClassification, "han"),
])
def test_a_0_1_0_folder_is_upgraded_on_load_with_a_log_line_and_saves_the_new_config(auto_class, head, folder,
                                                                                     tmp_path, caplog):
    """The folder's "bahdanau" config (decoder fields and all) loads into the head as a BahdanauEncoderConfig, through
    the Auto class and the head class; saved again, it is the new config, and loads with the same outputs."""
    _, inputs, want = read_saved(SAVED / folder)
    for loader in (auto_class, head):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            model = loader.from_pretrained(SAVED / folder).eval()
        assert type(model) is head and type(model.config) is BahdanauEncoderConfig
        assert UPGRADE_LOG.format("") in caplog.messages
    copy = shutil.copytree(SAVED / folder, tmp_path / "old")
    model.save_pretrained(copy)
    saved = json.loads((copy / "config.json").read_text())
    assert saved["model_type"] == "bahdanau-encoder" and not set(saved) & set(DECODER_FIELDS)
    reloaded = auto_class.from_pretrained(copy).eval()
    got, loaded = recorded_outputs(reloaded, inputs, None), recorded_outputs(model, inputs, None)
    assert set(got) == set(want)  # the recorded values themselves: tests/test_upgrade.py, with CPU kernels' tolerance
    for key, value in loaded.items():
        torch.testing.assert_close(got[key], value, atol=0, rtol=0, msg=key)  # the same weights through the same code


def test_a_seq2seq_config_given_to_a_head_is_upgraded_naming_the_decoder_fields_it_set(caplog):
    seq2seq = BahdanauConfig.from_preset("luong-general", vocab_size=12, embedding_size=8, hidden_size=8,
                                         encoder_layers=2, decoder_layers=2, num_labels=3)
    with caplog.at_level(logging.WARNING):
        model = BahdanauForTokenClassification(seq2seq)
    assert caplog.messages == [UPGRADE_LOG.format(
        " (set: decoder_layers=2, attention_type='general', decoder_style='luong', input_feeding=True, bridge='last', "
        "deep_output='tanh')")]
    config = model.config
    assert type(config) is BahdanauEncoderConfig and type(seq2seq) is BahdanauConfig  # the given one is unchanged
    assert {field: getattr(config, field) for field in ENCODER_FIELDS} == \
        {field: getattr(seq2seq, field) for field in ENCODER_FIELDS}
    assert config.num_labels == 3 and config.encoder_layers == 2 and config.rnn_type == "lstm"
    assert upgrade_bahdanau_config(config) is config  # an encoder-only config is read as it is


@pytest.mark.parametrize("overrides, message", [
    (dict(rnn_type="cnn"), "`rnn_type` must be one of ['gru', 'lstm', 'rnn'], got 'cnn'."),
    (dict(encoder_self_attention="multihead", attention_size=10, num_attention_heads=3),
     "`attention_size` (10) must be divisible by `num_attention_heads` (3)."),
    (dict(eos_token_id=12, vocab_size=12), "`eos_token_id` must be a token id in [0, vocab_size=12) (or None), got 12."),
    (dict(char_hidden_size=8), "`char_hidden_size=8`: only the 'chars' source reads it, but `meta_embedding_sources` "
                               "is None; add 'chars' or leave the default."),
])
def test_the_encoder_config_refuses_what_bahdanau_config_refuses_in_the_same_words(overrides, message):
    for config_class in (BahdanauEncoderConfig, BahdanauConfig):
        with pytest.raises(ValueError) as caught:
            config_class(**overrides)
        assert str(caught.value) == message, config_class.__name__


def test_a_classifier_field_set_where_it_is_not_read_is_refused_by_each_config_in_its_words():
    with pytest.raises(ValueError) as caught:
        BahdanauEncoderConfig(self_attention_rows=8)
    assert str(caught.value) == ("`self_attention_rows=8`: only `pooling_type='self_attentive'` reads it, but "
                                 "`pooling_type` is 'context_vector'; set `pooling_type='self_attentive'` or leave the "
                                 "default.")
    with pytest.raises(ValueError) as caught:
        BahdanauConfig(self_attention_rows=8)
    assert str(caught.value) == SEQ2SEQ_REFUSAL.format(given="`self_attention_rows=8`", config="BahdanauConfig",
                                                       model_type="bahdanau")


def test_the_tagger_s_multi_head_token_attention_splits_attention_size():
    with pytest.raises(ValueError) as caught:
        BahdanauEncoderConfig(token_attention_type="multihead", attention_size=10, num_attention_heads=3)
    assert str(caught.value) == "`attention_size` (10) must be divisible by `num_attention_heads` (3)."


@pytest.mark.parametrize("field, value, message", [
    ("encoder_layers", "2", "`encoder_layers` must be an int, got '2' (str)."),
    ("classifier_dropout", True, "`classifier_dropout` must be a number or None, got True (bool)."),
])
def test_a_wrong_type_is_a_type_error_naming_the_field(field, value, message):
    with pytest.raises(TypeError) as caught:
        BahdanauEncoderConfig(**{field: value})
    assert str(caught.value) == message


def test_a_preset_gives_the_encoder_config_its_encoder():
    config = BahdanauEncoderConfig.from_preset("luong-dot", vocab_size=12, hidden_size=8, num_labels=3)
    assert (config.rnn_type, config.encoder_layers, config.bidirectional, config.encoder_hidden_size) == \
        ("lstm", 4, False, 8)
    assert not any(hasattr(config, field) for field in DECODER_FIELDS)
    assert BahdanauEncoderConfig.from_preset("sutskever").reverse_source is True
    with pytest.raises(ValueError) as caught:
        BahdanauEncoderConfig.from_preset("rnnsearch", decoder_layers=2)
    assert str(caught.value).startswith("['decoder_layers'] is not a field of BahdanauEncoderConfig; its fields are "
                                        "['architectures', 'attention_size', ")


# a seq2seq config holds no classifier field ---------------------------------------------------------------------


@pytest.mark.parametrize("config_class", [BahdanauConfig, BahdanauPointerConfig, BahdanauImageToTextConfig])
def test_a_seq2seq_config_json_has_no_field_of_the_tagger_or_the_classifiers(config_class, tmp_path):
    config_class().save_pretrained(tmp_path)
    saved = (tmp_path / "config.json").read_text()  # sub-configs included
    assert names(ClassifierFields) == CLASSIFIER_FIELDS and not any(f'"{name}"' in saved for name in CLASSIFIER_FIELDS)
    assert not set(names(config_class)) & set(CLASSIFIER_FIELDS)


@pytest.mark.parametrize("folder", SEQ2SEQ_FOLDERS)
def test_a_0_1_0_seq2seq_config_json_loads_without_its_classifier_fields_at_their_defaults(folder, tmp_path, caplog):
    """0.1.0 saved the 8 fields in every config.json, at their defaults (``classifier_attention_size``: half the
    annotation size): dropped on load, silently; saved again, they are gone."""
    saved = json.loads((SAVED / folder / "config.json").read_text())
    assert {name: saved[name] for name in CLASSIFIER_FIELDS} == {
        "classifier_attention_size": 4, "classifier_dropout": None, "hierarchical": False,
        "pooling_type": "context_vector", "self_attention_penalty_weight": 1.0, "self_attention_rows": 4,
        "sentence_separator_token_id": None, "token_attention_type": "additive"}
    with caplog.at_level(logging.WARNING):
        config = AutoConfig.from_pretrained(SAVED / folder)
    assert not [message for message in caplog.messages if any(name in message for name in CLASSIFIER_FIELDS)]
    assert type(config).__name__ != "BahdanauEncoderConfig"
    assert not any(hasattr(config, name) for name in CLASSIFIER_FIELDS)
    config.save_pretrained(tmp_path)
    assert not any(f'"{name}"' in (tmp_path / "config.json").read_text() for name in CLASSIFIER_FIELDS)


@pytest.mark.parametrize("field, value", [("pooling_type", "self_attentive"), ("hierarchical", True),
                                          ("classifier_attention_size", 5), ("token_attention_type", "sentence")])
def test_a_seq2seq_config_json_setting_a_classifier_field_is_refused_by_name(field, value, tmp_path):
    """``classifier_attention_size`` 4 is the default of the folder's annotations (2 x 4): 5 is set; "sentence" is the
    tagger's old name of "context_vector", not the default "additive"."""
    shutil.copytree(SAVED / "seq2seq_rnnsearch", tmp_path, dirs_exist_ok=True)
    saved = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**saved, field: value}))
    for load in (AutoConfig.from_pretrained, BahdanauConfig.from_pretrained):
        with pytest.raises(ValueError) as caught:
            load(tmp_path)
        assert str(caught.value) == SEQ2SEQ_REFUSAL.format(given=f"`{field}={value!r}`", config="BahdanauConfig",
                                                           model_type="bahdanau")


def test_a_classifier_field_given_to_a_seq2seq_config_is_refused_by_name_unless_at_its_default():
    with pytest.raises(ValueError) as caught:
        BahdanauConfig(hierarchical=True, pooling_type="self_attentive", sentence_separator_token_id=4)
    assert str(caught.value) == SEQ2SEQ_REFUSAL.format(
        given="`hierarchical=True`, `pooling_type='self_attentive'`, `sentence_separator_token_id=4`",
        config="BahdanauConfig", model_type="bahdanau")
    with pytest.raises(ValueError) as caught:
        BahdanauPointerConfig(input_feature_size=2, classifier_dropout=0.5)
    assert str(caught.value) == SEQ2SEQ_REFUSAL.format(given="`classifier_dropout=0.5`",
                                                       config="BahdanauPointerConfig", model_type="bahdanau-pointer")
    config = BahdanauConfig(hidden_size=64, hierarchical=False, classifier_attention_size=32)  # the defaults
    assert not any(hasattr(config, name) for name in CLASSIFIER_FIELDS)


@pytest.mark.parametrize("folder, hierarchical", [("tagger", False), ("classifier", False), ("han", True)])
def test_a_0_1_0_tagger_or_classifier_config_json_loads_as_their_encoder_config(folder, hierarchical):
    """Its "bahdanau" config.json names their head: BahdanauConfig reads it as a BahdanauEncoderConfig, upgraded, its
    classifier fields kept (the HAN's set ones too)."""
    for load in (AutoConfig.from_pretrained, BahdanauConfig.from_pretrained):
        config = load(SAVED / folder)
        assert type(config) is BahdanauEncoderConfig and config.hierarchical is hierarchical
        assert config.sentence_separator_token_id == (4 if hierarchical else None)


@pytest.mark.parametrize("fields, family", [
    ({"token_attention_type": "general"}, "tagger"),
    ({"token_attention_type": "sentence"}, "tagger"),  # the old name of "context_vector"
    ({"pooling_type": "self_attentive", "self_attention_rows": 2}, "classifier"),
    ({"hierarchical": True}, "classifier"),
    ({"sentence_separator_token_id": 4}, "classifier"),
])
def test_an_encoder_config_without_architectures_is_the_family_of_the_head_whose_fields_it_sets(fields, family):
    config = BahdanauEncoderConfig(**fields).to_dict()
    assert config["architectures"] is None and family_of(config).name == family


@pytest.mark.parametrize("fields, sets", [
    ({}, "none of them"),
    ({"token_attention_type": "general", "hierarchical": True},
     "`token_attention_type='general'` (BahdanauForTokenClassification's) and `hierarchical=True` "
     "(BahdanauForSequenceClassification's)"),
])
def test_an_encoder_config_without_architectures_whose_fields_do_not_tell_the_head_is_refused(fields, sets):
    with pytest.raises(ValueError) as caught:
        family_of({"model_type": "bahdanau-encoder", **fields})
    assert str(caught.value) == (
        "A 'bahdanau-encoder' config without `architectures` is for the head whose own fields it sets "
        "(BahdanauForTokenClassification: ['token_attention_type']; BahdanauForSequenceClassification: "
        "['hierarchical', 'pooling_type', 'self_attention_rows', 'self_attention_penalty_weight', "
        f"'sentence_separator_token_id']), but it sets {sets}: set `architectures` to the head's class name (saving "
        "the model does).")
