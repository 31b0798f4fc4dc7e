"""The memory network family: the end-to-end memory network answering a question about a memory of sentences
(Sukhbaatar et al., 2015; ``BahdanauMemoryNetworkForSequenceClassification``, model type ``bahdanau-memory``)."""

import json
import re
import textwrap
from typing import Any

from transformers import AutoModel, AutoModelForSequenceClassification

from hf_bahdanau.explorer.memory_page import MEMORY_EXPLORER
from hf_bahdanau.families import CardWords, Family, Head, register_family
from hf_bahdanau.families.recurrent import ALIGNMENTS
from hf_bahdanau.families.words import (DISTRIBUTION, WORD_VOCABULARY, Architecture, answerer_usage, closed_answers,
                                        json_example, label_names, text_examples)
from hf_bahdanau.modeling.axes import SENTENCE_ENCODINGS, WEIGHT_TYINGS
from hf_bahdanau.modeling.collators import DataCollatorForMemoryNetwork
from hf_bahdanau.modeling.configuration_memory import BahdanauMemoryNetworkConfig
from hf_bahdanau.modeling.modeling_memory_network import (BahdanauMemoryNetworkForSequenceClassification,
                                                          BahdanauMemoryNetworkModel)

__all__ = ["MEMORY", "MEMORY_EXAMPLE", "describe_memory_network", "memory_example"]

TASK = "memory-question-answering"
MEMORY_NETWORK_PAPER = ("Sukhbaatar et al., 2015", "End-To-End Memory Networks", "https://arxiv.org/abs/1503.08895")
MEMORY_EXAMPLE = json.dumps({"memory": ["Mary moved to the bathroom.", "John went to the hallway."],
                             "question": "Where is Mary?"})
HOP_ON_SUPPORT = re.compile(r"hop_(\d+)_on_support")  # run_memory_qa.py's hop statistics
LINEAR_START_CALLBACK = "LinearStartCallback"  # memory_training's, as trainer_state.json's stateful_callbacks name it


def describe_memory_network(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauMemoryNetworkConfig`` dict (Sukhbaatar et al., 2015): hops,
    sentence encoding, weight tying, temporal encoding with random noise, linear start (the config's, or when
    trainer_state.json ``trainer_state`` records that ``LinearStartCallback`` ended it, that training's) and the
    answers."""
    hops = config["num_hops"]
    lines = [f"**Memory**: K = {hops} hop{'s' if hops > 1 else ''} of attention over the memory sentences, d = "
             f"{config['hidden_size']}, a vocabulary of {config['vocab_size']:,} words; hop k reads p_i = "
             "softmax_i(u^kᵀ m_i), o^k = Σ_i p_i c_i from the question state u^k (u^1: the question's encoding)",
             "**Sentence encoding** (memory sentences and question alike): "
             + SENTENCE_ENCODINGS.describe(config["sentence_encoding"]),
             f"**Weight tying**: {WEIGHT_TYINGS.describe(config['weight_tying'])}"]
    if config["temporal_encoding"]:
        temporal = ("T_A(t_i) and T_C(t_i) are added to m_i and c_i, t_i = the number of sentences after x_i (TE); at "
                    f"most memory_size = {config['memory_size']} sentences")
        if config["random_noise"]:
            temporal += (f"; random noise (RN) in training: up to ⌈{config['random_noise']} n⌉ empty memories "
                         "inserted at random among the n sentences")
    else:
        temporal = "none: the sentences' order is not seen (the memory is a set)"
    lines.append(f"**Temporal encoding**: {temporal}")
    ended = (((trainer_state or {}).get("stateful_callbacks") or {}).get(LINEAR_START_CALLBACK) or {}).get(
        "attributes", {}).get("ended_at_epoch")
    if config["linear_start"]:
        linear_start = "on: the hops' softmax is left out (p_i = u^kᵀ m_i), as in the first epochs of training"
    elif ended is not None:
        linear_start = (f"in training: the hops' softmax was left out (p_i = u^kᵀ m_i) for the first {ended:g} "
                        "epochs, then put back; every hop of the saved model is a softmax")
    else:
        linear_start = "off: every hop's attention is a softmax"
    lines.append(f"**Linear start**: {linear_start}")
    answers = (f"**Answers**: one of {len(config.get('id2label') or {})} answers (a closed answer vocabulary), â = "
               "softmax(W u^{K+1}); ")
    tied = config.get("answer_token_ids") is not None and config["weight_tying"] == "adjacent"
    lines.append(answers + ("W is tied to the last output embedding, W^T = C^K (the answers' word rows)" if tied
                            else "W is its own [answers, d] matrix"))
    return Architecture(None, MEMORY_NETWORK_PAPER, lines, family="an end-to-end memory network, MemN2N")


def metric_names(name: str) -> str | None:
    """The words of a memory network's own metrics (run_memory_qa.py): each hop's peak on a supporting fact, and
    every supporting fact found by some hop."""
    if match := HOP_ON_SUPPORT.fullmatch(name):
        return f"Hop {match.group(1)} peaks on a supporting fact"
    return {"supports_covered": "Supporting facts all found by some hop's peak"}.get(name)


def memory_example(example: str) -> dict[str, Any]:
    """One example input of a memory network: a JSON object {"memory": [sentences], "question": text}."""
    return json_example(example, {"memory": lambda memory: isinstance(memory, list) and all(
        isinstance(sentence, str) for sentence in memory), "question": lambda text: isinstance(text, str)
        and bool(text.strip())}, "a memory network", '{"memory": [sentences], "question": text}')


def description(config: dict[str, Any], processor: dict[str, Any]) -> str:
    count, names = label_names(config)
    return ("It reads a memory of sentences (a story, or any list of texts: a small knowledge base) and a question "
            f"about it, and picks the answer from a closed vocabulary of {count} answers: {names}. Each of "
            f"its {config['num_hops']} hops attends over the memory sentences; `output_attentions=True` returns "
            "one [batch, sentences] distribution per hop (the pipeline's `hop_attentions`, one list per hop with "
            "a weight per given sentence).")


def usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
          remote: bool) -> str:
    """A memory network answering the first example's question: through the pipeline its folder ships (remote
    code), or with the plugin through that pipeline's class, then each hop's attention as a heat map."""
    item = memory_example(examples[0])
    question = f"""\
        memory = {json.dumps(item["memory"], ensure_ascii=False)}
        question = {json.dumps(item["question"], ensure_ascii=False)}
        answered = answerer(memory=memory, question=question)
        print(answered["answer"], answered["score"])  # and answered["hop_attentions"]: [hops][sentences]"""
    usage = answerer_usage(model_id, "pipeline_memory", "BahdanauMemoryQuestionAnsweringPipeline", question, remote,
                           plugin_import="from hf_bahdanau.pictures import plot_memory_hops\n")
    if remote:
        return usage
    return usage + textwrap.dedent("""

        # each hop's attention over the memory sentences as a heat map (needs matplotlib)
        plot_memory_hops(memory, question, answered["hop_attentions"], answer=answered["answer"], path="hops.png")""")


def limitations(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    """What an end-to-end memory network cannot do, from its config."""
    lines = [closed_answers(config),
             WORD_VOCABULARY]
    if config["sentence_encoding"] == "bag_of_words":
        lines.append("Bag of words: a sentence is the sum of its words' embeddings, so word order within a sentence "
                     "is lost (\"John gave Mary the ball\" reads as \"Mary gave John the ball\").")
    else:
        lines.append("Position encoding keeps word order within a sentence only through fixed weights per position "
                     "and feature: the words are not read in sequence.")
    if config["temporal_encoding"]:
        lines.append(f"With temporal encoding it reads at most {config['memory_size']} sentences: the pipeline keeps "
                     "the most recent ones and drops the older ones (their attention is 0).")
    else:
        lines.append("Without temporal encoding the order of the sentences is not seen: questions about what "
                     "happened last cannot be told from the memory.")
    lines += ["Hop attention is learned without being shown the supporting facts: it often, not always, lands on "
              "them.",
              DISTRIBUTION]
    return lines


MEMORY = register_family(Family(
    name="memory", task=TASK, config_class=BahdanauMemoryNetworkConfig,
    heads=(Head(AutoModel, BahdanauMemoryNetworkModel),
           Head(AutoModelForSequenceClassification, BahdanauMemoryNetworkForSequenceClassification)),
    card=CardWords(task_words="Memory Question Answering", architecture=describe_memory_network,
                   tags=("memory-network", "attention"), description=description, usage=usage,
                   limitations=limitations, examples=text_examples(MEMORY_EXAMPLE, memory_example),
                   metric_names=metric_names, pictures=(ALIGNMENTS,)),
    explorer=MEMORY_EXPLORER,
    collator=DataCollatorForMemoryNetwork,
))
