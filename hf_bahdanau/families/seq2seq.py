"""The seq2seq family: the RNN encoder–decoder that translates text (``BahdanauForConditionalGeneration``, model type
``bahdanau``; a folder of this type that names no other family's head in ``architectures`` is this family's)."""

import json
import textwrap
from typing import Any

from transformers import AutoModel, AutoModelForSeq2SeqLM

from hf_bahdanau.explorer.alignment_page import ALIGNMENT_EXPLORER
from hf_bahdanau.families import CardWords, Family, Head, register_family
from hf_bahdanau.families.recurrent import (ALIGNMENTS, decoder_lines, encoder_line, matching_preset, paper_of,
                                            recurrent_limitations, rnn_tags, vocabulary_output)
from hf_bahdanau.families.words import Architecture, dropout_lines, generate_kwargs
from hf_bahdanau.modeling.collators import DataCollatorWithRightPaddedLabels
from hf_bahdanau.modeling.configuration_bahdanau import BahdanauConfig
from hf_bahdanau.modeling.modeling_bahdanau import BahdanauForConditionalGeneration, BahdanauModel

__all__ = ["SEQ2SEQ", "describe_seq2seq", "short_outputs_note"]

TASK = "translation"


def describe_seq2seq(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """The encoder's line, then the decoder's (attention, decoder, initial state, output) and the dropout."""
    preset = matching_preset(config)
    lines = [encoder_line(config), *decoder_lines(config, vocabulary_output(config)), *dropout_lines(config)]
    return Architecture(preset, paper_of(preset), lines)


def description(config: dict[str, Any], processor: dict[str, Any]) -> str:
    return ("It reads the source into annotations h_1..h_S and generates the output token by token with "
            "`generate()` (greedy or beam search); with attention, every step's soft alignment is returned as "
            "`cross_attentions` when `output_attentions=True`.")


def usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
          remote: bool) -> str:
    """The examples translated through the Auto classes; with the plugin and attention, then the first example's
    alignment as a heat map."""
    trust = ", trust_remote_code=True" if remote else ""
    code = textwrap.dedent(f"""\
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        model_id = {json.dumps(model_id)}
        tokenizer = AutoTokenizer.from_pretrained(model_id{trust})
        model = AutoModelForSeq2SeqLM.from_pretrained(model_id{trust})
        inputs = tokenizer({json.dumps(examples)}, return_tensors="pt", padding=True)
        outputs = model.generate(**inputs, {generate_kwargs(generation)})
        print(tokenizer.batch_decode(outputs, skip_special_tokens=True))""")
    if remote or config.get("attention_type") == "none":
        return code
    return code + "\n\n" + textwrap.dedent(f"""\
        # the soft alignment of the first example as a heat map (needs matplotlib)
        from hf_bahdanau.modeling.alignments import alignments_from_generate
        from hf_bahdanau.pictures import plot_alignment

        out = model.generate(**inputs, {generate_kwargs(generation)}, output_attentions=True,
                             return_dict_in_generate=True)
        weights = alignments_from_generate(out, index=0, eos_token_id=tokenizer.eos_token_id)
        source = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0][inputs["attention_mask"][0].bool()])
        target = tokenizer.convert_ids_to_tokens(out.sequences[0, 1:1 + len(weights)])
        plot_alignment(weights[:, :len(source)], source, target, path="alignment.png")""")


def pipeline_usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any]) -> str:
    """The translation pipeline the folder ships (its config's ``custom_pipelines``), "" when it ships none."""
    if not config.get("custom_pipelines"):
        return ""
    return textwrap.dedent(f"""\
        from transformers import pipeline

        model_id = {json.dumps(model_id)}
        translator = pipeline(model=model_id, trust_remote_code=True)
        print(translator({json.dumps(examples)}, {generate_kwargs(generation)}))""")


def short_outputs_note(splits: dict[str, dict[str, float]]) -> str:
    """What to read when BLEU says little: outputs shorter than BLEU's 4-grams (gen_len counts <s> and </s>)."""
    lengths = [metrics["gen_len"] - 2 for metrics in splits.values() if "gen_len" in metrics]
    if not lengths or min(lengths) >= 4:
        return ""
    return (f"The outputs are short (about {min(lengths):.3g} tokens on average): BLEU counts matching n-grams up to "
            "4 tokens, so it is near 0 or meaningless for them; read exact match and chrF.")


def limitations(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    """Whether its attention aligns (or, without attention, that the source passes through one vector), then the
    recurrent models' limitations."""
    if config.get("attention_type") == "none":
        first = ("No attention: the whole source passes through a fixed-size vector, so quality drops on long inputs "
                 "(Cho et al., 2014; Bahdanau et al., 2015, figure 2).")
    else:
        first = ("Attention weights are soft alignments learned without supervision: they usually, not always, point "
                 "at the source tokens a human would align.")
    return [first, *recurrent_limitations(config)]


SEQ2SEQ = register_family(Family(
    name="seq2seq", task=TASK, config_class=BahdanauConfig,
    heads=(Head(AutoModel, BahdanauModel), Head(AutoModelForSeq2SeqLM, BahdanauForConditionalGeneration)),
    card=CardWords(task_words="Translation", pipeline_tag=TASK, architecture=describe_seq2seq, tags=rnn_tags(),
                   description=description, usage=usage, limitations=limitations, pipeline_usage=pipeline_usage,
                   results_note=short_outputs_note, pictures=(ALIGNMENTS,)),
    text_to_text=True,
    explorer=ALIGNMENT_EXPLORER,
    collator=DataCollatorWithRightPaddedLabels,
))
