"""The Transformer a user would pick instead of our RNNs: transformers' own ``MarianMTModel``, built from scratch from
a ``MarianConfig`` over the run's tokenizer (one embedding matrix shared by the encoder, the decoder and the output
layer, as Marian shares them), optionally sized to a number of parameters.

    config = transformer_config(len(tokenizer), pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                overrides={"encoder_layers": 4}, parameters=2_500_000)
    model = MarianMTModel(config)

The parameters training learns, with d = d_model, f = the feed-forward size, V = the vocabulary, L_e and L_d layers:

    P(d) = V·d + L_e·(4d² + 2df + f + 9d) + L_d·(8d² + 2df + f + 15d)

(V·d the shared embeddings; per encoder layer the self-attention's four d×d maps with biases, the feed-forward
d→f→d and two layer norms; a decoder layer adds the cross-attention and a third layer norm). The sinusoidal position
tables are fixed, so not counted. ``learned_parameters`` counts them on the model itself (on the meta device).
"""

import math
from functools import cache
from typing import Any

import torch
from transformers import GenerationConfig, MarianConfig, MarianMTModel, PreTrainedModel
from transformers.initialization import no_init_weights
from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

from hf_bahdanau.modeling.search import BEAM_PENALTY_OPTIONS

__all__ = ["DEFAULTS", "TOLERANCE", "check_generation_options", "freeze_position_tables", "learned_parameters",
           "size_d_model", "transformer_config"]

# a small Transformer (MarianConfig's own defaults are Marian's 12+12 layers of 1024); --config_overrides change them
DEFAULTS = {"d_model": 256, "encoder_layers": 3, "decoder_layers": 3, "encoder_attention_heads": 4,
            "decoder_attention_heads": 4, "max_position_embeddings": 512, "scale_embedding": True}
FFN_FIELDS = ("encoder_ffn_dim", "decoder_ffn_dim")  # 4·d_model unless given
FFN_MULTIPLE = 4
TOLERANCE = 0.03  # the sized model's parameters are within 3% of the target
TOKENIZER_FIELDS = ("vocab_size", "decoder_vocab_size", "pad_token_id", "bos_token_id", "eos_token_id",
                    "decoder_start_token_id", "forced_eos_token_id", "share_encoder_decoder_embeddings",
                    "tie_word_embeddings")  # set from the tokenizer (and Marian's sharing), never by overrides


def learned_parameters(model_or_config: PreTrainedModel | MarianConfig) -> int:
    """The parameters training learns: every parameter of the model once (shared matrices once), Marian's sinusoidal
    position tables left out (fixed by their formula; a new model freezes them, but from_pretrained hands them back
    with requires_grad=True, so requires_grad cannot tell). A config is built into a model on the meta device,
    uninitialised (no memory is allocated)."""
    model = model_or_config
    if not isinstance(model, PreTrainedModel):
        with torch.device("meta"), no_init_weights():
            model = MarianMTModel(model_or_config)
        model.tie_weights()  # no_init_weights skips the tying too: without it V·d would count three times
    fixed = {id(parameter) for parameter in position_tables(model)}
    return sum(parameter.numel() for parameter in model.parameters() if id(parameter) not in fixed)


def position_tables(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [parameter for module in model.modules() if isinstance(module, MarianSinusoidalPositionalEmbedding)
            for parameter in module.parameters()]


def freeze_position_tables(model: torch.nn.Module) -> None:
    """Freeze the sinusoidal position tables of a loaded Marian model, as a new one has them: from_pretrained
    recomputes them (they are not saved) but leaves them trainable, and training on would move them off the
    sinusoids."""
    for parameter in position_tables(model):
        parameter.requires_grad_(False)


def transformer_config(vocab_size: int, *, pad_token_id: int, bos_token_id: int, eos_token_id: int,
                       overrides: dict[str, Any] | None = None, parameters: int | None = None,
                       argument: str = "--transformer_parameters") -> MarianConfig:
    """A ``MarianConfig`` for a new model over a tokenizer of ``vocab_size`` tokens (decoding starts with
    ``bos_token_id`` and is forced to end with ``eos_token_id``, as our RNNs): DEFAULTS, then ``overrides``
    (MarianConfig fields, e.g. from ``--config_overrides``); the feed-forward sizes are 4·d_model unless overridden.
    With ``parameters``, d_model is chosen by ``size_d_model`` (``argument`` names the target in errors)."""
    overrides = dict(overrides or {})
    fixed = sorted(set(overrides) & set(TOKENIZER_FIELDS))
    if fixed:
        raise ValueError(f"`--config_overrides` cannot set {fixed} of the Transformer: the vocabulary and special "
                         "tokens come from the tokenizer, and the embeddings are shared as Marian shares them.")
    if parameters is not None and "d_model" in overrides:
        raise ValueError(f"`{argument}` chooses d_model: leave d_model={overrides['d_model']} out of "
                         "`--config_overrides` (or drop the target).")
    values = {**DEFAULTS, **overrides, "vocab_size": vocab_size, "decoder_vocab_size": vocab_size,
              "pad_token_id": pad_token_id, "bos_token_id": bos_token_id, "eos_token_id": eos_token_id,
              "decoder_start_token_id": bos_token_id, "forced_eos_token_id": eos_token_id,
              "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True}
    free_ffn = [name for name in FFN_FIELDS if name not in overrides]
    for name in ("encoder_attention_heads", "decoder_attention_heads"):
        if not isinstance(values[name], int) or values[name] < 1:
            raise ValueError(f"`--config_overrides` {name} must be a positive integer, got {values[name]!r}.")
    if parameters is not None:
        values["d_model"] = size_d_model(values, parameters, free_ffn, argument)
    values.update({name: FFN_MULTIPLE * values["d_model"] for name in free_ffn})
    for name in ("encoder_attention_heads", "decoder_attention_heads"):
        if values["d_model"] % values[name]:
            raise ValueError(f"`--config_overrides` d_model={values['d_model']} must be a multiple of {name}="
                             f"{values[name]} (each head reads d_model / heads features).")
    return MarianConfig(**values)


def size_d_model(values: dict[str, Any], target: int, free_ffn: list[str], argument: str) -> int:
    """The multiple of both head counts whose model (``values``: MarianConfig fields; the ``free_ffn`` fields follow
    as 4·d_model) has the learned parameter count P(d) closest to ``target``; ValueError naming ``argument`` when
    even that one is more than TOLERANCE away. P grows with d, so the two multiples around the target are found by
    doubling then bisection."""
    if target < 1:
        raise ValueError(f"`{argument}` must be a positive number of parameters, got {target}.")
    step = math.lcm(values["encoder_attention_heads"], values["decoder_attention_heads"])

    @cache
    def count(multiple: int) -> int:
        d_model = multiple * step
        return learned_parameters(MarianConfig(**{**values, "d_model": d_model,
                                                  **{name: FFN_MULTIPLE * d_model for name in free_ffn}}))

    low, high = 0, 1  # count(low) < target ≤ count(high); multiple 0 stands for "below the smallest model"
    while count(high) < target:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if count(middle) < target else (low, middle)
    nearest = min((multiple for multiple in (low, high) if multiple > 0),
                  key=lambda multiple: abs(count(multiple) - target))
    if abs(count(nearest) - target) > TOLERANCE * target:
        around = ", ".join(f"d_model={multiple * step}: {count(multiple):,}" for multiple in (low, high) if multiple)
        raise ValueError(f"`{argument}`={target:,} cannot be met within {TOLERANCE:.0%}: d_model is a multiple of "
                         f"{step} (the attention heads), and the nearest sizes have {around} learned parameters "
                         f"(vocabulary {values['vocab_size']:,}, {values['encoder_layers']}+{values['decoder_layers']}"
                         " layers). Change the target, the layers or the heads.")
    return nearest * step


def check_generation_options(generation_config: GenerationConfig) -> None:
    """ValueError where ``generation_config`` asks for GNMT's beam penalties (``length_penalty_style="gnmt"``,
    ``coverage_penalty``): they are hf_bahdanau's beam search, and a Marian model decodes with transformers' own,
    which would ignore them silently; its standard ``length_penalty`` (score log P / |Y|^α) applies instead."""
    asked = {name: getattr(generation_config, name, None) for name in BEAM_PENALTY_OPTIONS}
    asked = {name: value for name, value in asked.items() if value not in (None, 0, 0.0, "transformers")}
    if asked:
        raise ValueError(f"The Transformer decodes with transformers' beam search, which has no GNMT penalties: "
                         f"remove {', '.join(f'{name}={value!r}' for name, value in asked.items())} from the "
                         "generation config (`--generation_config`); its `length_penalty` α (log P / |Y|^α) "
                         "applies instead.")
