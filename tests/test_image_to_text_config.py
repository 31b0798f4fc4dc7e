"""The image-to-text config is composed of sub-configs: the image encoder's (``BahdanauImageEncoderConfig``) and the
decoder's."""

import pytest
from transformers import AutoConfig

from hf_bahdanau.modeling.configuration_image_encoder import BahdanauImageEncoderConfig


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
