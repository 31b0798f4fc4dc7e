"""The card of the Transformer baseline (``training/run_seq2seq.py --architecture transformer``): transformers' own
``MarianMTModel`` trained from scratch on the same data and tokenizer as an RNN it is compared with. ``BASELINES``
describes it as a family the card engine reads (not registered: transformers loads it alone, no remote code, no
plugin), so its usage is one block of plain transformers code.
"""

import json
import textwrap
from typing import Any

from transformers import AutoModelForSeq2SeqLM, MarianConfig, MarianMTModel

from hf_bahdanau.families import CardWords, Family, Head
from hf_bahdanau.families.recurrent import ALIGNMENTS
from hf_bahdanau.families.seq2seq import short_outputs_note
from hf_bahdanau.families.words import Architecture, generate_kwargs

__all__ = ["BASELINES", "TRANSFORMER_MODEL_TYPES", "TRANSFORMER_PAPER", "TRANSFORMER_TAGS", "describe_transformer",
           "transformer_limitations", "transformer_summary", "transformer_task_description", "transformer_usage"]

TRANSFORMER_PAPER = ("Vaswani et al., 2017", "Attention Is All You Need", "https://arxiv.org/abs/1706.03762")
TRANSFORMER_TAGS = ("transformer", "marian", "baseline", "translation")  # all its card's: it is no hf_bahdanau family


def describe_transformer(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """The sizes of a ``MarianConfig`` dict, one bullet line per part."""
    shared = ("one matrix shared by the encoder, the decoder and the output layer"
              if config.get("share_encoder_decoder_embeddings") and config.get("tie_word_embeddings") else
              "separate encoder, decoder and output matrices")
    scaled = ", scaled by √d_model" if config.get("scale_embedding") else ""

    def count(number: int, noun: str) -> str:
        return f"{number} {noun}" + ("s" if number != 1 else "")

    return Architecture(preset=None, paper=TRANSFORMER_PAPER, family="a Marian-architecture Transformer "
                        "encoder–decoder trained from scratch", lines=[
        f"**Encoder**: {count(config['encoder_layers'], 'layer')}, d_model {config['d_model']}, "
        f"{count(config['encoder_attention_heads'], 'attention head')}, feed-forward {config['encoder_ffn_dim']} "
        f"({config['activation_function']})",
        f"**Decoder**: {count(config['decoder_layers'], 'layer')}, d_model {config['d_model']}, "
        f"{count(config['decoder_attention_heads'], 'attention head')} (self- and cross-attention), feed-forward "
        f"{config['decoder_ffn_dim']}",
        f"**Embeddings**: {config['vocab_size']:,} tokens, {shared}{scaled}; fixed sinusoidal positions for "
        f"{config['max_position_embeddings']} tokens (computed, not learned); the parameters below include Marian's "
        f"output bias `final_logits_bias` ({config['vocab_size']:,} values kept at 0, not learned)",
        f"**Dropout**: {config['dropout']} (attention {config['attention_dropout']}, activation "
        f"{config['activation_dropout']})",
    ])


def transformer_summary(architecture: Architecture, task_name: str, trained: str) -> str:
    return (f"{architecture.title[0].upper()}{architecture.title[1:]}, for {task_name.lower()}{trained}: transformers' "
            "own `MarianMTModel`, trained with hf_bahdanau's `training/run_seq2seq.py --architecture transformer` as "
            "the baseline its RNN encoder–decoders are compared with (same data, tokenizer and training script).")


def transformer_task_description() -> str:
    return ("It reads the source with self-attention over all its tokens at once and generates the output token by "
            "token with `generate()` (greedy or beam search, transformers' own; `length_penalty` α scores a finished "
            "hypothesis log P / |Y|^α).")


def transformer_usage(model_id: str, examples: list[str], generate_kwargs: str) -> str:
    """Plain transformers code: the folder needs neither hf_bahdanau nor remote code."""
    return textwrap.dedent(f"""\
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        model_id = {json.dumps(model_id)}
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        model = AutoModelForSeq2SeqLM.from_pretrained(model_id)  # a MarianMTModel
        inputs = tokenizer({json.dumps(examples)}, return_tensors="pt", padding=True)
        outputs = model.generate(**inputs, {generate_kwargs})
        print(tokenizer.batch_decode(outputs, skip_special_tokens=True))""")


def transformer_limitations(config: dict[str, Any]) -> list[str]:
    return [f"Inputs and outputs longer than {config['max_position_embeddings']} tokens do not fit its position "
            "table.",
            "Closed vocabulary: tokens absent from the tokenizer's training data become `<unk>`.",
            "A small model trained from scratch as a baseline, not a pretrained translation model; it knows only its "
            "training distribution."]


def usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
          remote: bool) -> str:
    """``transformer_usage``; "" for remote code, which the folder does not need."""
    return "" if remote else transformer_usage(model_id, examples, generate_kwargs(generation))


BASELINES = {  # transformers' own model types a card is written for, by model type
    MarianConfig.model_type: Family(
        name="transformer-baseline", task="translation", config_class=MarianConfig,
        heads=(Head(AutoModelForSeq2SeqLM, MarianMTModel),),
        card=CardWords(task_words="Translation", pipeline_tag="translation", architecture=describe_transformer,
                       tags=TRANSFORMER_TAGS, usage=usage, results_note=short_outputs_note,
                       description=lambda config, processor: transformer_task_description(),
                       limitations=lambda config, processor: transformer_limitations(config),
                       summary=transformer_summary, pictures=(ALIGNMENTS,))),
}
TRANSFORMER_MODEL_TYPES = tuple(BASELINES)
