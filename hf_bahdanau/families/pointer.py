"""The pointer network family (Vinyals et al., 2015): the recurrent decoder's attention over its inputs is its output
(``BahdanauForPointerNetwork``, model type ``bahdanau-pointer``)."""

import json
import textwrap
from typing import Any

from transformers import AutoModel

from hf_bahdanau.families import CardWords, Family, Head, register_family
from hf_bahdanau.families.recurrent import (ALIGNMENTS, decoder_lines, encoder_line, matching_preset, paper_of,
                                            recurrent_limitations, rnn_tags)
from hf_bahdanau.families.words import Architecture, dropout_lines
from hf_bahdanau.modeling.collators import DataCollatorForPointing
from hf_bahdanau.modeling.configuration_bahdanau import BahdanauPointerConfig
from hf_bahdanau.modeling.modeling_pointer import BahdanauForPointerNetwork

__all__ = ["POINTER", "describe_pointer"]

TASK = "pointer-network"
OUTPUT = ("**Output**: a pointer (Vinyals et al., 2015): p(C_i = j) = softmax_j(u_ij), the decoder's attention scores "
          "over a learned end position and the inputs; the decoder reads the input it pointed at last")


def metric_names(name: str) -> str | None:
    """The words of the convex hull task's own metrics (run_pointer.py)."""
    return {"area_coverage": "Area coverage", "invalid_fraction": "Not a simple polygon"}.get(name)


def describe_pointer(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """The encoder's line, then the decoder's with the pointer as its output, and the dropout."""
    preset = matching_preset(config)
    lines = [encoder_line(config), *decoder_lines(config, OUTPUT), *dropout_lines(config)]
    return Architecture(preset, paper_of(preset), lines)


def description(config: dict[str, Any], processor: dict[str, Any]) -> str:
    return ("Its outputs are positions of its inputs (Vinyals et al., 2015): pointer id j + 1 points at input j "
            "and 0 ends the output. At each step the output distribution is the decoder's attention over the "
            "inputs and an end position; `generate()` (greedy or beam search, `forbid_repeats=True` to point at "
            "each input at most once) returns pointer ids after the start id 0.")


def usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
          remote: bool) -> str:
    """The first example (a JSON list of input vectors) pointed at through ``AutoModel``."""
    trust = ", trust_remote_code=True" if remote else ""
    return textwrap.dedent(f"""\
        import json

        import torch
        from transformers import AutoModel

        model_id = {json.dumps(model_id)}
        model = AutoModel.from_pretrained(model_id{trust})
        inputs = torch.tensor([json.loads({json.dumps(examples[0])})])  # [1, n, input_feature_size]
        pointers = model.generate(input_features=inputs, forbid_repeats=True)
        print([j - 1 for j in pointers[0, 1:].tolist() if j > 0])  # the input positions, in order""")


POINTER = register_family(Family(
    name="pointer", task=TASK, config_class=BahdanauPointerConfig,
    heads=(Head(AutoModel, BahdanauForPointerNetwork),),
    card=CardWords(task_words="Pointer Network", architecture=describe_pointer, tags=rnn_tags(),
                   description=description, usage=usage, metric_names=metric_names, pictures=(ALIGNMENTS,),
                   limitations=lambda config, processor: recurrent_limitations(config, (
                       "It can only point at its own inputs, and its accuracy falls for more inputs than it was "
                       "trained on (Vinyals et al., 2015, table 1)."))),
    refusal=("is a pointer network: it outputs positions of its inputs, not text; use "
             "AutoModel.from_pretrained(...).generate(input_features=...) or training/run_pointer.py."),
    collator=DataCollatorForPointing,
))
