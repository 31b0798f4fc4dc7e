"""The image-to-text config is composed of sub-configs: the image encoder's (``BahdanauImageEncoderConfig``) and the
decoder's."""

import dataclasses
import json
from pathlib import Path

import pytest
from transformers import AutoConfig, PreTrainedConfig

from hf_bahdanau.modeling.configuration_bahdanau import (BahdanauConfig, BahdanauDecoderConfig, ClassifierFields,
                                                         CommonFields, DecoderFields, EncoderFields)
from hf_bahdanau.modeling.configuration_image_encoder import BahdanauImageEncoderConfig

SAVED = Path(__file__).parent / "fixtures" / "saved_by_0.1.0"


def test_the_image_encoder_config_loads_by_its_model_type_and_round_trips(tmp_path):
    config = AutoConfig.for_model("bahdanau-image-encoder", cnn_channels=[4, 12], cnn_pool_sizes=[[2, 2], [1, 3]])
    assert type(config) is BahdanauImageEncoderConfig
    assert config.annotation_size == 12
    config.save_pretrained(tmp_path)
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert type(loaded) is BahdanauImageEncoderConfig
    assert loaded.to_diff_dict() == config.to_diff_dict()
    assert (loaded.cnn_channels, loaded.cnn_pool_sizes, loaded.num_channels) == ([4, 12], [[2, 2], [1, 3]], 1)


def test_the_image_encoder_config_validates_its_fields_by_name():
    with pytest.raises(ValueError) as caught:
        BahdanauImageEncoderConfig(cnn_channels=[4, 6], cnn_pool_sizes=[[2, 2], [2, 2]], region_position_encoding=True)
    assert str(caught.value) == ("`region_position_encoding=True` splits the annotation size D=6 into sin and cos "
                                 "halves for rows and columns: D must be a multiple of 4.")
    with pytest.raises(TypeError, match=r"^`num_channels` must be an int, got '3' \(str\)\.$"):
        BahdanauImageEncoderConfig(num_channels="3")


def test_the_image_encoder_fields_keep_their_import_path():
    from hf_bahdanau.modeling import configuration_image_encoder as new
    from hf_bahdanau.modeling.configuration_image_to_text import (ImageEncoderFields, backbone_feature_size,
                                                                  resolve_image_encoder, validate_image_encoder)
    assert (ImageEncoderFields, backbone_feature_size, resolve_image_encoder, validate_image_encoder) == (
        new.ImageEncoderFields, new.backbone_feature_size, new.resolve_image_encoder, new.validate_image_encoder)


def test_a_seq2seq_config_json_keeps_its_keys_and_values_with_the_decoder_fields_declared_apart():
    """BahdanauConfig = EncoderFields + DecoderFields: a folder saved by 0.1.0 reads back to the same config.json (less
    the tagger's and classifiers' fields, dropped at their defaults)."""
    saved = json.loads((SAVED / "seq2seq_rnnsearch" / "config.json").read_text())
    dropped = {config_field.name for config_field in dataclasses.fields(ClassifierFields)} | {"transformers_version"}
    resaved = json.loads(BahdanauConfig.from_dict(saved).to_json_string())
    assert {key: value for key, value in resaved.items() if key != "transformers_version"} == {
        key: value for key, value in saved.items() if key not in dropped}
    names = {config_field.name for config_field in dataclasses.fields(BahdanauConfig)}
    assert {config_field.name for config_field in dataclasses.fields(DecoderFields)} <= names
    assert {config_field.name for config_field in dataclasses.fields(EncoderFields)} <= names


def test_the_decoder_config_holds_the_decoder_and_the_fields_both_sides_read():
    config = AutoConfig.for_model("bahdanau-decoder", hidden_size=16, embedding_size=6, encoder_output_size=8)
    assert type(config) is BahdanauDecoderConfig
    names = {config_field.name for config_field in dataclasses.fields(BahdanauDecoderConfig)}
    inherited = {config_field.name for config_field in dataclasses.fields(PreTrainedConfig)}
    assert names - inherited == {*(config_field.name for config_field in dataclasses.fields(CommonFields)),
                                 *(config_field.name for config_field in dataclasses.fields(DecoderFields)),
                                 "encoder_output_size"} - inherited
    assert not names & {"encoder_layers", "bidirectional", "reverse_source", "meta_embedding_sources"}
    assert (config.attention_size, config.output_size, config.num_hidden_layers) == (16, 6, 1)
    assert BahdanauDecoderConfig(hidden_size=12).encoder_output_size == 12
    with pytest.raises(ValueError) as caught:
        BahdanauDecoderConfig(hidden_size=16, encoder_output_size=8, attention_type="dot")
    assert str(caught.value) == (
        "`attention_type='dot'` compares the decoder state with the annotations, so `hidden_size` (16) must equal the "
        "annotation size `encoder_hidden_size` x directions (8); use 'general' or 'additive' for different sizes.")
    with pytest.raises(ValueError, match=r"^`encoder_output_size` must be a positive integer, got 0\.$"):
        BahdanauDecoderConfig(encoder_output_size=0)
