"""Every float field of the configs is a finite number in its range: NaN and ±inf are refused by name (they used to act
as 0 — monotonic_noise_std, coverage_loss_weight — or turn the loss into NaN or inf)."""

import math

import pytest

from conftest import tiny_config
from hf_bahdanau import BahdanauConfig, BahdanauEncoderConfig, BahdanauForConditionalGeneration, BahdanauPointerConfig
from hf_bahdanau.modeling.configuration_bahdanau import FLOAT_RANGES, float_fields

CONFIGS = (BahdanauConfig, BahdanauPointerConfig, BahdanauEncoderConfig)
CASES = [(config_class, field) for config_class in CONFIGS for field in float_fields(config_class)]


def test_the_float_fields_are_found_from_the_annotations():
    encoder = {"dropout", "gaussian_kernel_width", "init_std"}
    decoder = {"monotonic_bias_init", "monotonic_noise_std", "hard_attention_temperature", "coverage_loss_weight",
               "location_sharpening", "reinforce_baseline_decay", "reinforce_entropy_weight",
               "reinforce_expected_context_probability", "doubly_stochastic_weight"}
    classifier = {"classifier_dropout", "self_attention_penalty_weight"}
    for config_class in (BahdanauConfig, BahdanauPointerConfig):
        assert set(float_fields(config_class)) == encoder | decoder
    assert set(float_fields(BahdanauEncoderConfig)) == encoder | classifier
    assert set(FLOAT_RANGES) <= encoder | decoder | classifier


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("config_class, field", CASES, ids=[f"{c.__name__}.{f}" for c, f in CASES])
def test_a_float_field_that_is_not_finite_is_refused_by_name(config_class, field, value):
    allowed = FLOAT_RANGES.get(field)
    message = f"`{field}` must be a finite number{'' if allowed is None else ' ' + allowed}, got {value}."
    with pytest.raises(ValueError) as raised:
        config_class(**{field: value})
    assert str(raised.value) == message


@pytest.mark.parametrize("field", ["monotonic_noise_std", "coverage_loss_weight", "monotonic_bias_init"])
def test_a_value_set_after_construction_is_refused_when_the_model_is_built(field):
    config = tiny_config(attention_scope="monotonic")
    setattr(config, field, math.nan)
    with pytest.raises(ValueError, match=f"`{field}` must be a finite number"):
        BahdanauForConditionalGeneration(config)


@pytest.mark.parametrize("config_class, field, value, allowed", [
    (BahdanauConfig, "dropout", 1.0, "in [0, 1)"), (BahdanauEncoderConfig, "classifier_dropout", -0.1, "in [0, 1)"),
    (BahdanauConfig, "gaussian_kernel_width", 0, "> 0"), (BahdanauConfig, "hard_attention_temperature", -1.0, "> 0"),
    (BahdanauConfig, "monotonic_noise_std", -1e-9, ">= 0"), (BahdanauConfig, "coverage_loss_weight", -2, ">= 0"),
    (BahdanauConfig, "init_std", -0.1, ">= 0"),
])
def test_a_finite_value_out_of_range_is_refused_with_the_range(config_class, field, value, allowed):
    with pytest.raises(ValueError) as raised:
        config_class(**{field: value})
    assert str(raised.value) == f"`{field}` must be {allowed}, got {value}."


def test_the_edges_of_the_ranges_and_any_finite_bias_are_accepted():
    config = BahdanauConfig(dropout=0, monotonic_noise_std=0, coverage_loss_weight=0, init_std=0,
                            monotonic_bias_init=-1e30, hard_attention_temperature=1e-30)
    assert config.monotonic_bias_init == -1e30
    assert BahdanauEncoderConfig(classifier_dropout=0.999).classifier_dropout == 0.999
    assert BahdanauEncoderConfig(classifier_dropout=None).classifier_dropout is None
