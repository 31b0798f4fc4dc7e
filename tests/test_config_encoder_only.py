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
)
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
                  "monotonic_noise_std", "output_size", "reinforce_baseline_decay", "reinforce_entropy_weight",
                  "tie_word_embeddings", "unk_token_id", "use_cache", "use_coverage"]
UPGRADE_LOG = ("Upgraded a 'bahdanau' config (hf_bahdanau 0.1.0, or a seq2seq model's) to BahdanauEncoderConfig "
               "('bahdanau-encoder'), which the tagger and the classifiers read: dropped 30 decoder fields they never "
               "read{}. Save the model again to store the new config.")


def names(config_class: type) -> list[str]:
    return sorted(config_field.name for config_field in dataclasses.fields(config_class))


def test_the_encoder_fields_are_declared_once_and_the_encoder_config_has_no_decoder_field():
    assert names(EncoderFields) == ENCODER_FIELDS and names(ClassifierFields) == CLASSIFIER_FIELDS
    inherited = names(PreTrainedConfig)
    assert names(BahdanauEncoderConfig) == sorted([*inherited, *ENCODER_FIELDS, *CLASSIFIER_FIELDS])
    assert names(BahdanauConfig) == sorted([*inherited, *ENCODER_FIELDS, *CLASSIFIER_FIELDS, *DECODER_FIELDS])
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
    (dict(self_attention_rows=8), "`self_attention_rows=8`: only `pooling_type='self_attentive'` reads it, but "
                                  "`pooling_type` is 'context_vector'; set `pooling_type='self_attentive'` or leave the "
                                  "default."),
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


def test_the_tagger_s_multi_head_token_attention_splits_attention_size():
    with pytest.raises(ValueError) as caught:
        BahdanauEncoderConfig(token_attention_type="multihead", attention_size=10, num_attention_heads=3)
    assert str(caught.value) == "`attention_size` (10) must be divisible by `num_attention_heads` (3)."


def test_a_wrong_type_is_a_type_error_naming_the_field():
    with pytest.raises(TypeError) as caught:
        BahdanauEncoderConfig(encoder_layers="2")
    assert str(caught.value) == "`encoder_layers` must be an int, got '2' (str)."


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
