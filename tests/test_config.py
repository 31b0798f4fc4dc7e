"""BahdanauConfig: presets, validation of every axis, serialisation."""

import pytest
import torch

from hf_bahdanau import PRESETS, BahdanauConfig, BahdanauEncoderConfig


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


@pytest.mark.parametrize("config_class", [BahdanauConfig, BahdanauEncoderConfig], ids=lambda cls: cls.__name__)
def test_every_field_is_documented_with_its_type_and_default(config_class):
    """Each field has an entry in the Args of the one class that declares it (the config, or the part it shares:
    ``EncoderFields``; the encoder config's ``ClassifierFields``)."""
    from dataclasses import fields

    from transformers import PreTrainedConfig

    inherited = {field.name for field in fields(PreTrainedConfig)}
    for field in fields(config_class):
        if field.name not in inherited or field.name in ("is_encoder_decoder",):
            declared = next(cls for cls in config_class.__mro__ if field.name in cls.__dict__.get("__annotations__", {}))
            assert f"        {field.name} (`" in declared.__doc__, f"{field.name} has no entry in {declared.__name__}"


def _every_config_class():
    from hf_bahdanau.modeling.configuration_bahdanau import BahdanauPointerConfig
    from hf_bahdanau.modeling.configuration_coattention import BahdanauVisualQuestionAnsweringConfig
    from hf_bahdanau.modeling.configuration_image_to_text import BahdanauImageToTextConfig
    from hf_bahdanau.modeling.configuration_memory import BahdanauMemoryNetworkConfig
    from hf_bahdanau.modeling.configuration_text_coattention import BahdanauTextCoAttentionConfig

    return [BahdanauConfig, BahdanauPointerConfig, BahdanauImageToTextConfig, BahdanauMemoryNetworkConfig,
            BahdanauVisualQuestionAnsweringConfig, BahdanauTextCoAttentionConfig]


@pytest.mark.parametrize("field, value, message", [
    ("max_source_positions", None, "`max_source_positions` must be an int, got None (NoneType)."),
    ("max_source_positions", True, "`max_source_positions` must be an int, got True (bool)."),
    ("max_source_positions", 2.0, "`max_source_positions` must be an int, got 2.0 (float)."),
    ("max_source_positions", "256", "`max_source_positions` must be an int, got '256' (str)."),
    ("encoder_hidden_size", 8.5, "`encoder_hidden_size` must be an int or None, got 8.5 (float)."),
    ("dropout", None, "`dropout` must be a number, got None (NoneType)."),
    ("dropout", "0.1", "`dropout` must be a number, got '0.1' (str)."),
    ("bidirectional", 1, "`bidirectional` must be True or False, got 1 (int)."),
    ("rnn_type", None, "`rnn_type` must be a string, got None (NoneType)."),
    ("eos_token_id", 2.0, "`eos_token_id` must be an int, a list of ints or None, got 2.0 (float)."),
    ("meta_embedding_sources", "word", "`meta_embedding_sources` must be a list of strings or None, got 'word' (str)."),
    ("eos_token_id", [2, "3"], "`eos_token_id` must be an int, a list of ints or None, got [2, '3'] (list): entry 1 is "
                               "'3' (str)."),
])
def test_a_value_of_the_wrong_type_is_a_type_error_in_the_package_s_words(field, value, message):
    with pytest.raises(TypeError) as caught:
        BahdanauConfig(**{field: value})
    assert str(caught.value) == message
    config = BahdanauConfig()
    with pytest.raises(TypeError) as caught:  # set later, the same message
        setattr(config, field, value)
    assert str(caught.value) == message


@pytest.mark.parametrize("config_class", _every_config_class(), ids=lambda config_class: config_class.__name__)
def test_every_family_s_config_words_a_wrong_type_and_refuses_no_labels(config_class):
    with pytest.raises(TypeError, match=r"^`vocab_size` must be an int, got None \(NoneType\)\.$"):
        config_class(vocab_size=None)
    with pytest.raises(TypeError, match=r"^`pad_token_id` must be an int or None, got '0' \(str\)\.$"):
        config_class(pad_token_id="0")
    for value in (0, -1):
        with pytest.raises(ValueError) as caught:
            config_class(num_labels=value)
        assert str(caught.value) == (f"`num_labels` must be a positive integer (the labels of the classifier head), "
                                     f"got {value}.")
    for value, kind in ((None, "NoneType"), (True, "bool"), (2.0, "float")):
        with pytest.raises(TypeError) as caught:
            config_class(num_labels=value)
        assert str(caught.value) == (f"`num_labels` must be a positive integer (the labels of the classifier head), "
                                     f"got {value!r} ({kind}).")
    with pytest.raises(ValueError) as caught:
        config_class(id2label={})
    assert str(caught.value) == "`id2label` must name at least one label (the classifier head's outputs), got {}."
    config = config_class(num_labels=3)
    with pytest.raises(ValueError, match=r"`num_labels` must be a positive integer .*got 0\."):
        config.num_labels = 0
    assert config.num_labels == 3


def test_memory_network_refuses_zero_answers_that_gave_empty_logits():
    from hf_bahdanau.modeling.configuration_memory import BahdanauMemoryNetworkConfig

    with pytest.raises(ValueError, match=r"^`num_labels` must be a positive integer \(the labels of the classifier "
                                         r"head\), got 0\.$"):
        BahdanauMemoryNetworkConfig(num_labels=0)


@pytest.mark.parametrize("config_class", [config_class for config_class in _every_config_class()  # VQA's: routed
                                          if {"cnn_channels", "vision_config"} & set(config_class.__dataclass_fields__)
                                          ],
                         ids=lambda config_class: config_class.__name__)
def test_image_encoder_lists_name_their_bad_entry(config_class):
    with pytest.raises(ValueError) as caught:
        config_class(cnn_channels=[4, 0], cnn_pool_sizes=[[2, 2], [2, 2]])
    assert str(caught.value) == ("`cnn_channels` must be one positive int per convolution block (at least one), got "
                                 "[4, 0]: entry 1 is 0.")
    with pytest.raises(ValueError) as caught:
        config_class(cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 0]])
    assert str(caught.value) == ("`cnn_pool_sizes` must be one [height, width] pair of positive ints per block of "
                                 "`cnn_channels` (2), got [[2, 2], [2, 0]]: entry 1 is [2, 0].")
    with pytest.raises(TypeError) as caught:
        config_class(cnn_channels=[4, 8.0])
    assert str(caught.value) == "`cnn_channels` must be a list of ints, got [4, 8.0] (list): entry 1 is 8.0 (float)."
    with pytest.raises(TypeError) as caught:
        config_class(cnn_pool_sizes=[[2, 2], [2, True], [2, 2]])
    assert str(caught.value) == ("`cnn_pool_sizes` must be a list of lists of ints, got [[2, 2], [2, True], [2, 2]] "
                                 "(list): entry 1 is [2, True] (list).")


def test_phrase_windows_name_their_bad_entry():
    from hf_bahdanau.modeling.configuration_coattention import BahdanauVisualQuestionAnsweringConfig

    with pytest.raises(ValueError) as caught:
        BahdanauVisualQuestionAnsweringConfig(phrase_windows=[1, 0, 3])
    assert str(caught.value) == ("`phrase_windows` must be one or more positive n-gram sizes, got [1, 0, 3]: entry 1 "
                                 "is 0.")


@pytest.mark.parametrize("config_class, overrides, message", [
    (BahdanauConfig, dict(attention_type="none", use_coverage=True, copy_attention=True),
     "`use_coverage=True`, `copy_attention=True` shape the attention, but `attention_type='none'` has none; pick a "
     "score (e.g. 'additive')."),
    (BahdanauConfig, dict(attention_type="none", doubly_stochastic_weight=0.5),
     "`doubly_stochastic_weight=0.5` shape the attention, but `attention_type='none'` has none; pick a score (e.g. "
     "'additive')."),
    (BahdanauConfig, dict(location_filters=5, location_smoothing=True),
     "`location_filters=5`, `location_smoothing=True`: only `attention_type='location_aware'` reads it, but "
     "`attention_type` is 'additive'; set it or leave the default."),
    (BahdanauConfig, dict(attention_mode="hard", reinforce_baseline_decay=0.5, reinforce_entropy_weight=0.1),
     "`reinforce_baseline_decay=0.5`, `reinforce_entropy_weight=0.1`: only `attention_mode='hard_reinforce'` reads "
     "it, but `attention_mode` is 'hard'; set it or leave the default."),
    (BahdanauEncoderConfig, dict(self_attention_rows=8, self_attention_penalty_weight=0.5),
     "`self_attention_rows=8`, `self_attention_penalty_weight=0.5`: only `pooling_type='self_attentive'` reads it, "
     "but `pooling_type` is 'context_vector'; set `pooling_type='self_attentive'` or leave the default."),
    (BahdanauConfig, dict(char_embedding_size=8, char_hidden_size=8),
     "`char_embedding_size=8`, `char_hidden_size=8`: only the 'chars' source reads it, but `meta_embedding_sources` "
     "is None; add 'chars' or leave the default."),
    (BahdanauEncoderConfig, dict(meta_embedding_sources=["word"], char_hidden_size=8),
     "`char_hidden_size=8`: only the 'chars' source reads it, but `meta_embedding_sources` is ['word']; add 'chars' "
     "or leave the default."),
])
def test_a_field_set_but_not_read_by_the_chosen_option_is_refused_in_the_same_words_as_before(config_class, overrides,
                                                                                              message):
    """The messages of the checks that repeated the defaults as literals, now one rule over ``axes.FIELDS_READ``."""
    with pytest.raises(ValueError) as caught:
        config_class(**overrides)
    assert str(caught.value) == message
    config_class(**{field: value for field, value in overrides.items() if field.endswith(("_type", "_sources"))})


def test_a_pointer_refuses_the_attention_fields_its_output_never_reads():
    from hf_bahdanau import BahdanauPointerConfig

    with pytest.raises(ValueError) as caught:
        BahdanauPointerConfig(attention_scope="local-m", copy_attention=True, unk_token_id=0)
    assert str(caught.value) == ("A pointer network's output distribution is the softmax of its attention scores over "
                                 "all inputs: `attention_scope='local-m'`, `copy_attention=True` cannot be used with "
                                 "it (leave the default).")


def test_the_rule_reads_each_declaration_and_the_defaults_from_the_config_class(monkeypatch):
    """A declaration added to ``axes.FIELDS_READ`` is enforced with nothing else written; the default a field is
    compared with is its config class's (BahdanauPointerConfig's ``decoder_style`` is 'luong', BahdanauConfig's
    'bahdanau'), not a literal."""
    from hf_bahdanau import BahdanauPointerConfig
    from hf_bahdanau.modeling import configuration_bahdanau
    from hf_bahdanau.modeling.axes import FIELDS_READ, FieldsRead

    declaration = FieldsRead("attention_scope", ("local-m", "local-p"), ("local_window", "decoder_style"),
                             "{fields}: only the local scopes read it, not {value!r}.")
    monkeypatch.setattr(configuration_bahdanau, "FIELDS_READ", (*FIELDS_READ, declaration))
    with pytest.raises(ValueError) as caught:
        BahdanauConfig(local_window=4)
    assert str(caught.value) == "`local_window=4`: only the local scopes read it, not 'global'."
    assert BahdanauConfig(local_window=4, attention_scope="local-m").local_window == 4
    with pytest.raises(ValueError) as caught:
        BahdanauConfig(decoder_style="luong")
    assert str(caught.value) == "`decoder_style='luong'`: only the local scopes read it, not 'global'."
    assert BahdanauPointerConfig(decoder_style="luong").decoder_style == "luong"  # its own default
    config = BahdanauEncoderConfig(pooling_type="self_attentive", self_attention_rows=8)
    config.pooling_type = "context_vector"  # set later: refused when a model is built (validate_architecture)
    with pytest.raises(ValueError, match=r"^`self_attention_rows=8`: only `pooling_type='self_attentive'` reads it"):
        config.validate_architecture()


def test_the_image_to_text_config_refuses_the_text_encoder_s_fields_in_the_same_words_as_before():
    from hf_bahdanau import BahdanauImageToTextConfig

    with pytest.raises(ValueError) as caught:
        BahdanauImageToTextConfig(encoder_layers=2, copy_attention=True)
    assert str(caught.value) == ("`encoder_layers=2`, `copy_attention=True`: the image-to-text model has an image "
                                 "encoder and no source tokens to copy; leave the text encoder's fields and "
                                 "`copy_attention` at their defaults.")
    with pytest.raises(ValueError, match=r"^`bidirectional=True`: the image-to-text model"):
        BahdanauImageToTextConfig(bidirectional=True)  # its own default is False, BahdanauConfig's True
    assert BahdanauImageToTextConfig(bidirectional=False).bidirectional is False


def test_the_image_encoder_s_fields_are_declared_once_for_image_to_text_and_vqa():
    """``ImageEncoderFields`` holds them (and their docs); each config keeps its own defaults (VQA reads RGB)."""
    from dataclasses import fields

    from hf_bahdanau import BahdanauImageToTextConfig
    from hf_bahdanau.modeling.configuration_coattention import BahdanauVisualQuestionAnsweringConfig
    from hf_bahdanau.modeling.configuration_image_to_text import ImageEncoderFields

    image_fields = [field.name for field in fields(ImageEncoderFields)]
    assert image_fields == ["num_channels", "cnn_channels", "cnn_pool_sizes", "backbone_config", "backbone",
                            "use_pretrained_backbone", "region_position_encoding"]
    for field in image_fields:
        assert f"        {field} (`" in ImageEncoderFields.__doc__
    encoder = BahdanauImageToTextConfig().encoder  # image-to-text's: a BahdanauImageEncoderConfig, grey
    assert {field.name for field in fields(type(encoder))} >= set(image_fields)
    assert (type(encoder).__name__, encoder.num_channels, encoder.cnn_channels, encoder.cnn_pool_sizes) == \
        ("BahdanauImageEncoderConfig", 1, [32, 64, 128], [[2, 2], [2, 2], [2, 2]])
    vision = BahdanauVisualQuestionAnsweringConfig().vision_config  # VQA's: a BahdanauImageEncoderConfig, RGB
    assert (type(vision).__name__, vision.num_channels, vision.cnn_channels, vision.cnn_pool_sizes) == \
        ("BahdanauImageEncoderConfig", 3, [32, 64, 128], [[2, 2], [2, 2], [2, 2]])


def test_every_head_checks_its_config_again_when_built():
    """One base (``pretrained_base.BahdanauBasePreTrainedModel``) for every family's models: a field changed after the
    config was built is refused when a model is built from it."""
    from hf_bahdanau import BahdanauForSequenceClassification
    from hf_bahdanau.families import FAMILIES
    from hf_bahdanau.modeling.pretrained_base import BahdanauBasePreTrainedModel

    heads = [head.model_class for family in FAMILIES.values() for head in family.heads]
    assert len(heads) == 13 and all(issubclass(head, BahdanauBasePreTrainedModel) for head in heads), heads
    config = BahdanauEncoderConfig(num_labels=2, pooling_type="self_attentive", self_attention_rows=8)
    config.pooling_type = "context_vector"
    with pytest.raises(ValueError, match=r"^`self_attention_rows=8`: only `pooling_type='self_attentive'` reads it"):
        BahdanauForSequenceClassification(config)


def test_every_model_reads_its_output_flags_defaults_from_its_config():
    """``BahdanauBasePreTrainedModel.output_flags``: the caller's flag where given, the config's where None."""
    from hf_bahdanau import BahdanauForSequenceClassification

    model = BahdanauForSequenceClassification(BahdanauEncoderConfig(num_labels=2, output_attentions=True))
    assert model.output_flags(None, None) == (True, False)
    assert model.output_flags(False, True) == (False, True)
    outputs = model(torch.tensor([[4, 5, 6]]))
    assert outputs.attentions is not None and outputs.hidden_states is None
