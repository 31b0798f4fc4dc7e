"""The image-to-text config is composed of sub-configs: the image encoder's (``BahdanauImageEncoderConfig``) and the
decoder's."""

import dataclasses
import json
import logging
from pathlib import Path

import pytest
from transformers import AutoConfig, PreTrainedConfig

from hf_bahdanau.modeling.configuration_bahdanau import (BahdanauConfig, BahdanauDecoderConfig, ClassifierFields,
                                                         CommonFields, DecoderFields, EncoderFields)
from hf_bahdanau.modeling.configuration_image_encoder import BahdanauImageEncoderConfig
from hf_bahdanau.modeling.configuration_image_to_text import BahdanauImageDecoderConfig, BahdanauImageToTextConfig

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
    the tagger's and classifiers' fields, dropped at their defaults; plus the fields added since, at their defaults)."""
    saved = json.loads((SAVED / "seq2seq_rnnsearch" / "config.json").read_text())
    dropped = {config_field.name for config_field in dataclasses.fields(ClassifierFields)} | {"transformers_version"}
    added_since = {"reinforce_expected_context_probability": 0.0,  # Xu et al.'s expected context (off, as 0.1.0)
                   "reinforce_baseline": "sequence"}  # REINFORCE's scalar baseline, as 0.1.0 trained
    resaved = json.loads(BahdanauConfig.from_dict(saved).to_json_string())
    assert {key: value for key, value in resaved.items() if key != "transformers_version"} == {
        **{key: value for key, value in saved.items() if key not in dropped}, **added_since}
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


TINY = dict(vocab_size=12, embedding_size=8, hidden_size=16, attention_size=8, output_size=8, cnn_channels=[4, 8],
            cnn_pool_sizes=[[2, 2], [2, 3]])


def test_flat_fields_go_to_the_sub_config_that_declares_them_and_config_json_is_nested(tmp_path):
    config = BahdanauImageToTextConfig(**TINY, attention_type="general", region_position_encoding=True)
    assert type(config.encoder) is BahdanauImageEncoderConfig and type(config.decoder) is BahdanauImageDecoderConfig
    assert isinstance(config.decoder, BahdanauDecoderConfig)
    assert (config.encoder.cnn_channels, config.encoder.cnn_pool_sizes, config.encoder.region_position_encoding) == (
        [4, 8], [[2, 2], [2, 3]], True)
    assert (config.decoder.vocab_size, config.decoder.hidden_size, config.decoder.attention_type) == (12, 16, "general")
    assert config.decoder.encoder_output_size == config.encoder.annotation_size == 8  # D, from the encoder
    # the paper's decoder where nothing is given
    assert (config.decoder.rnn_type, config.decoder.bridge, config.decoder.deep_output,
            config.decoder.context_gate) == ("lstm", "mean_cell", "none", True)
    assert config.get_text_config(decoder=True) is config.decoder  # what generate() and the cache read
    config.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert sorted(saved) == ["auto_map", "custom_pipelines", "decoder", "encoder", "is_encoder_decoder", "model_type",
                             "transformers_version"]
    assert saved["encoder"] == {"model_type": "bahdanau-image-encoder", "num_channels": 1, "cnn_channels": [4, 8],
                                "cnn_pool_sizes": [[2, 2], [2, 3]], "backbone_config": None, "backbone": None,
                                "use_pretrained_backbone": True, "region_position_encoding": True}
    assert saved["decoder"]["model_type"] == "bahdanau-image-decoder"
    assert (saved["decoder"]["attention_type"], saved["decoder"]["encoder_output_size"]) == ("general", 8)
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert type(loaded) is BahdanauImageToTextConfig
    assert loaded.to_diff_dict() == config.to_diff_dict()


def test_a_field_of_a_sub_config_is_read_and_set_through_the_config():
    config = BahdanauImageToTextConfig(**TINY)
    assert (config.hidden_size, config.cnn_channels, config.encoder_hidden_size) == (16, [4, 8], 8)
    config.use_cache = False
    config.use_pretrained_backbone = False
    assert config.decoder.use_cache is False and config.encoder.use_pretrained_backbone is False
    assert "use_cache" not in config.to_dict()
    with pytest.raises(TypeError, match=r"^`hidden_size` must be an int, got 'x' \(str\)\.$"):
        config.hidden_size = "x"
    with pytest.raises(AttributeError, match="has no attribute 'hiden_size'"):
        config.hiden_size


def test_a_field_no_sub_config_declares_is_refused_by_name():
    with pytest.raises(ValueError) as caught:
        BahdanauImageToTextConfig(**TINY, hiden_size=3)
    assert str(caught.value).startswith(
        "['hiden_size'] is not a field of BahdanauImageToTextConfig or of its sub-configs: the image encoder's "
        "['backbone', 'backbone_config', 'cnn_channels', 'cnn_pool_sizes', 'num_channels', 'region_position_encoding', "
        "'use_pretrained_backbone'] and the decoder's ['attention_mode', ")
    with pytest.raises(ValueError) as caught:
        BahdanauImageToTextConfig(**TINY, bidirectional=True, encoder_layers=2)
    assert str(caught.value) == ("`bidirectional=True`, `encoder_layers=2`: the image-to-text model has an image "
                                 "encoder and no source tokens to copy; leave the text encoder's fields and "
                                 "`copy_attention` at their defaults.")
    config = BahdanauImageToTextConfig(**TINY)
    config.copy_attention = True  # checked again when a model is built
    with pytest.raises(ValueError) as caught:
        config.validate_architecture()
    assert str(caught.value).startswith("`copy_attention=True`: the image-to-text model has an image encoder")
    assert (config.encoder_layers, config.bidirectional, config.reverse_source) == (1, False, False)  # as 0.1.0's
    with pytest.raises(ValueError) as caught:
        BahdanauImageToTextConfig(decoder=dict(encoder_output_size=6), cnn_channels=[4, 8],
                                  cnn_pool_sizes=[[2, 2], [2, 3]])
    assert str(caught.value) == ("`decoder.encoder_output_size` (6) must be the image encoder's annotation size D "
                                 "(8).")


def test_sub_configs_given_as_configs_or_dicts_build_the_same_config():
    encoder = BahdanauImageEncoderConfig(cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 3]])
    decoder = BahdanauImageDecoderConfig(vocab_size=12, hidden_size=16, encoder_output_size=8)
    composed = BahdanauImageToTextConfig(encoder=encoder, decoder=decoder)
    assert composed.encoder is encoder and composed.decoder is decoder
    from_dicts = BahdanauImageToTextConfig(encoder=encoder.to_dict(), decoder=decoder.to_dict())
    flat = BahdanauImageToTextConfig(vocab_size=12, hidden_size=16, cnn_channels=[4, 8],
                                     cnn_pool_sizes=[[2, 2], [2, 3]])
    assert composed.to_diff_dict() == from_dicts.to_diff_dict() == flat.to_diff_dict()


def test_a_flat_config_json_saved_by_0_1_0_loads_into_the_sub_configs_with_a_warning(caplog):
    saved = json.loads((SAVED / "image_to_text" / "config.json").read_text())
    with caplog.at_level(logging.WARNING, logger="hf_bahdanau.modeling.configuration_image_to_text"):
        config = BahdanauImageToTextConfig.from_dict(saved)
    assert "config.json is flat (saved by hf_bahdanau 0.1.0)" in caplog.text
    routed = {name: BahdanauImageToTextConfig.sub_config_name(name) for name in saved}
    assert sorted(name for name, key in routed.items() if key == "encoder") == [
        "backbone", "backbone_config", "cnn_channels", "cnn_pool_sizes", "num_channels", "region_position_encoding",
        "use_pretrained_backbone"]
    assert len([name for name, key in routed.items() if key == "decoder"]) == 43  # all its fields but D's
    for name, key in routed.items():
        if key is not None:
            assert getattr(getattr(config, key), name) == saved[name], name
    assert config.decoder.encoder_output_size == saved["encoder_hidden_size"] == 8
    assert (config.architectures, config.auto_map, config.custom_pipelines) == (
        saved["architectures"], saved["auto_map"], saved["custom_pipelines"])
