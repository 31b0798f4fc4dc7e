"""A ``memory-question-answering`` pipeline for the end-to-end memory network: a memory of sentences (a story, or a
user's knowledge base as a list of texts) and a question in, the answer and each hop's attention out.

transformers 5 has no question-answering pipeline for a model that picks its answer from a vocabulary; this one is
saved with every memory network (``custom_pipelines`` in ``config.json``, this file next to the weights), so

    answerer = pipeline(model="path/or/repo", trust_remote_code=True)
    answerer(memory=["Mary moved to the bathroom.", "John went to the hallway."], question="Where is Mary?")
    # {"answer": "bathroom", "score": 0.98, "hop_attentions": [[0.99, 0.01], …]}

The sentences are tokenized one by one without special tokens. With temporal encoding the model reads at most
``config.memory_size`` sentences: the most recent are kept, as in the paper, and the older ones get attention 0 in
``hop_attentions`` (one list per hop, one weight per given sentence). ``top_k`` > 1 returns the k likeliest answers.
A memory without a sentence (or without a word the tokenizer writes) is refused with a ValueError: the model would
answer from the question alone. Unknown words in the memory or the question are logged as warnings.
"""

import torch
from transformers import Pipeline

from .pipeline_answers import answer_parameters, answer_record
from .pipeline_inputs import check_batch
from .source_warnings import warn_about_source
from .old_names import old_names

__all__ = ["BahdanauMemoryQuestionAnsweringPipeline"]


class BahdanauMemoryQuestionAnsweringPipeline(Pipeline):
    """``{"memory": [sentences], "question": text}`` (or ``memory=``, ``question=``) -> ``{"answer", "score",
    "hop_attentions"}``; ``top_k`` > 1: ``{"answers": [{"answer", "score"}, …], "hop_attentions"}``, likeliest
    first."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def _sanitize_parameters(self, top_k: int | None = None, **kwargs):
        return {}, {}, answer_parameters(top_k)

    def __call__(self, inputs: dict | list[dict] | None = None, *, memory: list[str] | None = None,
                 question: str | None = None, **kwargs):
        """One question (a dict, or ``memory=`` and ``question=``) -> one record; a list of dicts -> a record each."""
        if inputs is None:
            inputs = {"memory": memory, "question": question}
        for item in check_batch(inputs, "inputs", "a dict with 'memory' and 'question'"):
            _check_item(item)
        return super().__call__(inputs, **kwargs)

    def preprocess(self, item: dict) -> dict:
        sentences = list(item["memory"])
        kept = sentences[-self.model.config.memory_size:] if self.model.config.temporal_encoding else sentences
        question = self.tokenizer(item["question"], add_special_tokens=False)["input_ids"]
        if not question:
            raise ValueError(f"`question` {item['question']!r} has no token the tokenizer knows how to write.")
        words = [self.tokenizer(sentence, add_special_tokens=False)["input_ids"] for sentence in kept]
        if not any(words):
            raise ValueError(f"`memory` {kept!r:.200} has no word the tokenizer knows how to write: there is nothing "
                             "to answer from.")
        warn_about_source(" ".join(kept), [token for sentence in words for token in sentence], self.tokenizer,
                          self.model.config)
        warn_about_source(item["question"], question, self.tokenizer, self.model.config)
        width = max([len(sentence) for sentence in words] + [1])
        pad = self.model.config.pad_token_id or 0
        memory_ids = torch.full((1, max(len(words), 1), width), pad, dtype=torch.long)
        memory_mask = torch.zeros_like(memory_ids)
        for index, sentence in enumerate(words):
            memory_ids[0, index, :len(sentence)] = torch.tensor(sentence, dtype=torch.long)
            memory_mask[0, index, :len(sentence)] = 1
        return {"input_ids": torch.tensor([question]), "attention_mask": torch.ones(1, len(question), dtype=torch.long),
                "memory_ids": memory_ids, "memory_attention_mask": memory_mask,
                "dropped": len(sentences) - len(kept), "given": len(sentences)}

    def _forward(self, model_inputs: dict) -> dict:
        dropped, given = model_inputs.pop("dropped"), model_inputs.pop("given")
        outputs = self.model(**model_inputs, output_attentions=True)
        return {"logits": outputs.logits, "attentions": outputs.attentions, "dropped": dropped, "given": given}

    def postprocess(self, model_outputs: dict, top_k: int = 1):
        dropped, given = model_outputs["dropped"], model_outputs["given"]
        hops = [[0.0] * dropped + hop[0, :given - dropped].tolist() for hop in model_outputs["attentions"]]
        return {**answer_record(model_outputs["logits"][0], self.model.config.id2label, top_k), "hop_attentions": hops}


def _check_item(item) -> None:
    """A dict with ``memory`` (a list of at least one non-blank string) and ``question`` (a non-blank string)."""
    if not isinstance(item, dict) or set(item) != {"memory", "question"}:
        raise ValueError(f"Each input must be a dict with the keys 'memory' (a list of sentences) and 'question', "
                         f"got {item!r:.200}.")
    memory, question = item["memory"], item["question"]
    if isinstance(memory, str) or not isinstance(memory, (list, tuple)) or not all(
            isinstance(sentence, str) for sentence in memory):
        raise ValueError(f"`memory` must be a list of sentences (strings), got {memory!r:.200}.")
    if not memory:
        raise ValueError("`memory` is an empty list: a memory network answers from its memory; give it at least one "
                         "sentence.")
    for index, sentence in enumerate(memory):
        if not sentence.strip():
            raise ValueError(f"`memory[{index}]` is {'empty' if not sentence else 'blank'} ({sentence!r}): remove it "
                             "or give a sentence.")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"`question` must be a non-blank string, got {question!r:.200}.")


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "MemoryQuestionAnsweringPipeline": BahdanauMemoryQuestionAnsweringPipeline,
})
