"""BahdanauConfig: presets, validation of every axis, serialisation."""

import pytest

from hf_bahdanau import PRESETS, BahdanauConfig


def test_presets_reproduce_the_papers():
    rnnsearch = BahdanauConfig.from_preset("rnnsearch", vocab_size=100)
    assert (rnnsearch.rnn_type, rnnsearch.bidirectional, rnnsearch.attention_type) == ("gru", True, "additive")
    assert (rnnsearch.decoder_style, rnnsearch.bridge, rnnsearch.deep_output) == ("bahdanau", "tanh", "maxout")
    sutskever = BahdanauConfig.from_preset("sutskever")
    assert (sutskever.rnn_type, sutskever.encoder_layers, sutskever.decoder_layers) == ("lstm", 4, 4)
    assert sutskever.reverse_source and sutskever.attention_type == "none" and sutskever.context_mode == "sutskever"
    cho = BahdanauConfig.from_preset("rnnencdec")
    assert (cho.attention_type, cho.context_mode, cho.bidirectional) == ("none", "cho", False)
    for name, score in [("luong-dot", "dot"), ("luong-general", "general"), ("luong-concat", "concat"),
                        ("luong-location", "location")]:
        luong = BahdanauConfig.from_preset(name)
        assert (luong.decoder_style, luong.attention_type, luong.input_feeding) == ("luong", score, True)
    local_p = BahdanauConfig.from_preset("luong-local-p")
    assert (local_p.attention_scope, local_p.local_window, local_p.attention_type, local_p.input_feeding) == (
        "local-p", 10, "general", True)
    monotonic = BahdanauConfig.from_preset("rnnsearch-monotonic")
    assert (monotonic.attention_scope, monotonic.attention_type, monotonic.decoder_style) == (
        "monotonic", "additive", "bahdanau")
    assert set(PRESETS) >= {"rnnencdec", "sutskever", "rnnsearch", "luong-dot", "luong-general", "luong-concat",
                            "luong-location", "luong-local-p", "rnnsearch-monotonic"}


def test_preset_overrides_win():
    config = BahdanauConfig.from_preset("luong-general", input_feeding=False, encoder_layers=1, decoder_layers=1)
    assert config.input_feeding is False and config.encoder_layers == 1 and config.attention_type == "general"


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="preset.*rnnsearch"):
        BahdanauConfig.from_preset("transformer")


def test_derived_sizes():
    config = BahdanauConfig(hidden_size=64, bidirectional=True)
    assert config.encoder_hidden_size == 32 and config.encoder_output_size == 64
    assert config.attention_size == 64 and config.output_size == config.embedding_size
    assert BahdanauConfig(hidden_size=64, bidirectional=False).encoder_hidden_size == 64


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(rnn_type="transformer"), "rnn_type"),
        (dict(attention_type="cosine"), "attention_type"),
        (dict(decoder_style="vaswani"), "decoder_style"),
        (dict(context_mode="both"), "context_mode"),
        (dict(bridge="learned"), "bridge"),
        (dict(deep_output="relu"), "deep_output"),
        (dict(dropout=1.5), "dropout"),
        (dict(hidden_size=0), "hidden_size"),
        (dict(gaussian_kernel_width=0.0, attention_type="gaussian_kernel"), "gaussian_kernel_width"),
        (dict(attention_type="dot", hidden_size=32, encoder_hidden_size=8), "hidden_size"),
        (dict(attention_type="multihead", attention_size=10, num_attention_heads=3), "num_attention_heads"),
        (dict(input_feeding=True, decoder_style="bahdanau"), "input_feeding"),
        (dict(input_feeding=True, decoder_style="luong", attention_type="none"), "input_feeding"),
        (dict(bridge="last", encoder_layers=2, decoder_layers=1), "encoder_layers"),
        (dict(bridge="last", hidden_size=32, encoder_hidden_size=8), "bridge='last'"),
        (dict(tie_word_embeddings=True, embedding_size=16, output_size=32), "output_size"),
    ],
)
def test_invalid_combinations_raise_value_error_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=field.replace("(", r"\(")):
        BahdanauConfig(**overrides)


def test_round_trip_through_dict_and_json(tmp_path):
    config = BahdanauConfig.from_preset("luong-location", vocab_size=77, hidden_size=48, max_source_positions=64)
    config.save_pretrained(tmp_path)
    loaded = BahdanauConfig.from_pretrained(tmp_path)
    assert loaded.to_dict() == config.to_dict()
    assert BahdanauConfig.from_dict(config.to_dict()).to_diff_dict() == config.to_diff_dict()
    assert loaded.auto_map["AutoModelForSeq2SeqLM"] == "modeling_bahdanau.BahdanauForConditionalGeneration"


def test_generation_parameters_do_not_live_in_the_config():
    config = BahdanauConfig(num_beams=5, max_length=50)
    assert getattr(config, "num_beams", None) is None


def test_every_field_is_documented_with_its_type_and_default():
    from dataclasses import fields

    from transformers import PreTrainedConfig

    inherited = {field.name for field in fields(PreTrainedConfig)}
    documented = BahdanauConfig.__doc__
    for field in fields(BahdanauConfig):
        if field.name not in inherited or field.name in ("is_encoder_decoder",):
            assert f"        {field.name} (`" in documented, f"{field.name} has no entry in the config's Args"
