"""One small tester per head: what the contract suite (``contract.py``) needs to know to drive it.

A tester builds a tiny float64 model of its head, a batch with padding (on the right, and on the left where the head
allows it), says which outputs are attention weights and over which input, gives labels with -100 entries and the
model's equations one example at a time (``hf_bahdanau.reference``) where the reference has them. It knows nothing of
the checks: those are ``contract.ContractTests``, the same for every head (as transformers' ``ModelTester`` classes
feed ``ModelTesterMixin``).

``TESTERS`` maps each family's name (``hf_bahdanau.families.FAMILIES``) to its testers: several where a family's
options change what is checked (the seq2seq decoders, the flat and the hierarchical classifier). A family registered
at run time passes its own ``Tester`` to the mixin.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import Tensor
from transformers import (
    AutoModel, AutoModelForImageTextToText, AutoModelForSeq2SeqLM, AutoModelForSequenceClassification,
    AutoModelForTokenClassification, AutoModelForVisualQuestionAnswering, PreTrainedModel,
)

from conftest import (BOS, PAD, VOCAB, left_padded, padded_batch, random_labels, tiny_encoder_config,
                      tiny_model)
from hf_bahdanau import (
    BahdanauForImageToText, BahdanauForPointerNetwork, BahdanauForSequenceClassification,
    BahdanauForTextPairClassification, BahdanauForTokenClassification, BahdanauForVisualQuestionAnswering,
    BahdanauImageProcessor, BahdanauImageToTextConfig, BahdanauMemoryNetworkConfig,
    BahdanauMemoryNetworkForSequenceClassification, BahdanauPointerConfig, BahdanauTextCoAttentionConfig,
    BahdanauVisualQuestionAnsweringConfig, PRESETS, reference,
)
from hf_bahdanau.modeling.pointing import END

Batch = dict[str, Tensor]


@dataclass
class Over:
    """An output [B, …] some of whose dimensions run over an input's positions: {dim: mask [B, …] (1 = real)}, the
    mask covering the output's dimensions dim, dim + 1, … (a sentence's words [B, L], a document's words by sentence
    [B, N, W]); the other dimensions (labels, target steps) belong to no input."""

    values: Tensor
    masks: dict[int, Tensor] = field(default_factory=dict)

    def real(self, row: int) -> Tensor:
        """Row ``row`` at its real positions only: the real positions of each mask in order, padding dropped."""
        values = self.values[row]
        for dim, mask in sorted(self.masks.items(), reverse=True):  # the later dimensions first: the earlier stay put
            covered = list(range(dim - 1, dim - 1 + mask.dim() - 1))
            values = values.movedim(covered, list(range(len(covered))))[mask[row].bool()].movedim(0, dim - 1)
        return values

    def padding(self) -> Tensor:
        """bool [B, …]: True where any mask marks padding."""
        padded = torch.zeros(self.values.shape, dtype=torch.bool)
        for dim, mask in self.masks.items():
            shape = [1] * self.values.dim()
            shape[0], shape[dim:dim + mask.dim() - 1] = mask.shape[0], mask.shape[1:]
            padded |= (mask == 0).reshape(shape)
        return padded


@dataclass
class Tester:
    """How the contract drives one head.

    model: a tiny model in float64 and eval mode, the same weights at every call.
    batch(left): its inputs, every input padded on the right (``left`` False) or on the left where ``left_padding``.
    padded: {input name: the name of the mask saying which of its positions are real}; an example alone is its row
        cut to its real extent (``alone``); ids among them are checked against bad values, masks against values ≠ 0/1.
    outputs(model, output, batch): the compared outputs by name ("logits" first), each an ``Over``.
    weights(model, output, batch): the attention weights by name, each an ``Over`` of the input it weighs.
    labels(batch): labels for the batch with some -100 entries.
    reference(model, batch): the logits of ``reference``'s equations, one example at a time; None where it has none.
    padding_rows(model): (embedding matrix, row) pairs that padding must never reach.
    float_inputs: {float input name: the mask name of its positions}: padding there gets no gradient.
    no_gradient: parameters that get no gradient from the loss by design (by name).
    known_failures: {contract test name: how it fails}: a contract the head does not keep yet, run as a strict xfail
        (it fails the suite once the head keeps it, so the entry is removed then).
    """

    name: str
    family: str
    auto_class: type
    model: Callable[[], PreTrainedModel]
    batch: Callable[[bool], Batch]
    padded: dict[str, str]
    outputs: Callable[[PreTrainedModel, object, Batch], dict[str, Over]]
    weights: Callable[[PreTrainedModel, object, Batch], dict[str, Over]]
    labels: Callable[[Batch], Tensor]
    reference: Callable[[PreTrainedModel, Batch], Tensor] | None = None
    left_padding: bool = True
    padding_rows: Callable[[PreTrainedModel], list[tuple[Tensor, int]]] = lambda model: []
    float_inputs: dict[str, str] = field(default_factory=dict)
    no_gradient: frozenset[str] = frozenset()
    config_fields: dict = field(default_factory=dict)  # a valid config's fields, for the bad-config checks
    known_failures: dict[str, str] = field(default_factory=dict)
    config_class: type | None = None  # None: the registered family's (``FAMILIES[family].config_class``)
    generate: dict | None = None  # generate()'s arguments for a head that generates
    continuous: bool = True  # False: the outputs jump where two choices tie (hard attention's arg-max), so no
    # rounding bound holds for them (mixed_precision's logits check)

    def alone(self, batch: Batch, row: int) -> Batch:
        """Row ``row`` of a right-padded batch as a batch of one, each padded input cut to the extent of its mask
        (its last real position along each of the mask's dimensions, at least 1)."""
        single = {}
        for key, value in batch.items():
            value = value[row:row + 1]
            if key in self.padded:
                mask = batch[self.padded[key]][row]
                offset = mask_offset(value[0], mask)
                for dim in range(mask.dim()):
                    value = value.narrow(1 + offset + dim, 0, extent(mask, dim))
            single[key] = value
        return single


def mask_offset(value: Tensor, mask: Tensor) -> int:
    """How many dimensions of a row of ``value`` come before those of a row's ``mask`` (pixels [C, H, W] and their
    mask [H, W]: 1; features [S, F] and theirs [S]: 0)."""
    return next(offset for offset in range(value.dim() - mask.dim() + 1)
                if value.shape[offset:offset + mask.dim()] == mask.shape)


def padded_positions(value: Tensor, mask: Tensor) -> Tensor:
    """bool, broadcastable to ``value`` [B, …]: True at the positions ``mask`` [B, …] marks as padding."""
    offset = mask_offset(value[0], mask[0])
    shape = list(mask.shape[:1]) + [1] * offset + list(mask.shape[1:])
    return (mask == 0).reshape(shape + [1] * (value.dim() - len(shape)))


def extent(mask: Tensor, dim: int) -> int:
    """1 + the last index along ``dim`` where ``mask`` has a real position (1 when it has none)."""
    others = tuple(other for other in range(mask.dim()) if other != dim)
    present = (mask != 0).long().amax(dim=others) if others else (mask != 0).long()
    return int(present.nonzero().max()) + 1 if present.any() else 1


def with_float64(batch: Batch) -> Batch:
    return {key: value.double() if value.is_floating_point() else value for key, value in batch.items()}


def redrawn(model: PreTrainedModel, scale: float, seed: int) -> PreTrainedModel:
    """Every weight redrawn from N(0, scale²): answers far from ties and no tanh in its flat tails."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * scale)
    return model


def text_rows(rows: list[list[int]], left: bool, extra: int = 1) -> tuple[Tensor, Tensor]:
    """ids and mask [B, longest + extra], each row padded with 0 on the left or the right."""
    width = max(map(len, rows)) + extra
    ids, mask = torch.zeros(len(rows), width, dtype=torch.long), torch.zeros(len(rows), width, dtype=torch.long)
    for b, words in enumerate(rows):
        columns = slice(width - len(words), width) if left else slice(0, len(words))
        ids[b, columns], mask[b, columns] = torch.tensor(words), 1
    return ids, mask


def real_ids(ids: Tensor, mask: Tensor) -> list[list[int]]:
    return [row[keep.bool()].tolist() for row, keep in zip(ids, mask)]


def ignored(labels: Tensor, *positions: tuple[int, ...]) -> Tensor:
    labels = labels.clone()
    for position in positions:
        labels[position] = -100
    return labels


def the_logits(model, output, batch) -> dict[str, Over]:
    return {"logits": Over(output.logits)}


# seq2seq ------------------------------------------------------------------------------------------------------------

LENGTHS = (7, 5, 2)


def seq2seq_batch(left: bool) -> Batch:
    input_ids, mask = padded_batch(LENGTHS)
    if left:
        input_ids, mask = left_padded(input_ids, mask)
    decoder_input_ids = torch.cat([torch.full((3, 1), BOS), random_labels(3, 4, seed=5)], dim=1)
    return dict(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids)


def cross_attention(model, output, batch) -> dict[str, Over]:
    if not output.cross_attentions:
        return {}
    return {f"cross_attentions[{layer}]": Over(weights, {3: batch["attention_mask"]})
            for layer, weights in enumerate(output.cross_attentions)}


def seq2seq(preset: str, known_failures: dict[str, str] | None = None, **overrides) -> Tester:
    return Tester(
        name=f"seq2seq-{preset}", family="seq2seq", auto_class=AutoModelForSeq2SeqLM,
        model=lambda: tiny_model(preset, **overrides).double(),
        batch=seq2seq_batch, padded={"input_ids": "attention_mask", "attention_mask": "attention_mask"},
        outputs=the_logits, weights=cross_attention,
        labels=lambda batch: ignored(random_labels(3, 5, seed=7), (1, slice(3, None)), (2, slice(1, None))),
        reference=lambda model, batch: reference.logits(model, batch["input_ids"], batch["attention_mask"],
                                                        batch["decoder_input_ids"]),
        padding_rows=lambda model: [(model.model.encoder.embed_tokens.weight, PAD)],
        config_fields=dict(vocab_size=VOCAB), known_failures=known_failures or {},
        generate=dict(max_new_tokens=4, num_beams=2),
    )


# the pointer network -------------------------------------------------------------------------------------------------

POINTS = (5, 3, 1)  # inputs per row


def pointer_labels(lengths=POINTS) -> Tensor:
    """Each row points at its inputs in reverse order, then at END; -100 after."""
    width = max(lengths) + 1
    return torch.tensor([[*range(n, 0, -1), END] + [-100] * (width - n - 1) for n in lengths])


def pointer_batch(left: bool) -> Batch:
    features = torch.rand(len(POINTS), max(POINTS), 2, generator=torch.Generator().manual_seed(1),
                          dtype=torch.float64)
    mask = (torch.arange(max(POINTS))[None] < torch.tensor(POINTS)[:, None]).long()
    labels = pointer_labels()
    decoder_input_ids = torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1].clamp(min=END)], dim=1)
    return dict(input_features=features * mask[..., None], attention_mask=mask, decoder_input_ids=decoder_input_ids)


def over_end_and_inputs(batch: Batch) -> Tensor:
    """The mask of the pointing distribution's [end; inputs]."""
    mask = batch["attention_mask"]
    return torch.cat([torch.ones_like(mask[:, :1]), mask], dim=1)


def pointer_model() -> BahdanauForPointerNetwork:
    torch.manual_seed(0)
    config = BahdanauPointerConfig(input_feature_size=2, hidden_size=16, embedding_size=8, attention_size=8)
    return BahdanauForPointerNetwork(config).double().eval()


POINTER = Tester(
    name="pointer", family="pointer", auto_class=AutoModel,
    model=pointer_model, batch=pointer_batch, left_padding=False,
    padded={"input_features": "attention_mask", "attention_mask": "attention_mask"},
    outputs=lambda model, output, batch: {"logits": Over(output.logits, {2: over_end_and_inputs(batch)})},
    weights=lambda model, output, batch: {"cross_attentions[0]": Over(output.cross_attentions[0],
                                                                      {3: over_end_and_inputs(batch)})},
    labels=lambda batch: ignored(pointer_labels(), (0, 1)),
    reference=lambda model, batch: reference.pointer_network(model, batch["attention_mask"],
                                                             batch["decoder_input_ids"],
                                                             input_features=batch["input_features"]),
    float_inputs={"input_features": "attention_mask"},
    config_fields=dict(input_feature_size=2), generate=dict(num_beams=2, forbid_repeats=True),
    # h̃_t = tanh(W_c [c_t; h_t]) reaches the pointer only through input feeding (the default has none)
    no_gradient=frozenset({"model.decoder.readout.proj.weight", "model.decoder.readout.proj.bias"}),
)


# the tagger and the classifiers ---------------------------------------------------------------------------------------

TAGS = 5


def encoder_batch(left: bool, lengths=LENGTHS) -> Batch:
    input_ids, mask = padded_batch(lengths)
    if left:
        input_ids, mask = left_padded(input_ids, mask)
    return dict(input_ids=input_ids, attention_mask=mask)


def encoder_head(head: type, **overrides) -> Callable[[], PreTrainedModel]:
    def build() -> PreTrainedModel:
        torch.manual_seed(0)
        return head(tiny_encoder_config(**overrides)).double().eval()
    return build


TEXT = {"input_ids": "attention_mask", "attention_mask": "attention_mask"}

TAGGER = Tester(
    name="tagger", family="tagger", auto_class=AutoModelForTokenClassification,
    model=encoder_head(BahdanauForTokenClassification, num_labels=TAGS, token_attention_type="additive"),
    batch=encoder_batch, padded=TEXT,
    outputs=lambda model, output, batch: {"logits": Over(output.logits, {1: batch["attention_mask"]})},
    weights=lambda model, output, batch: {"attentions[0]": Over(output.attentions[0], {2: batch["attention_mask"],
                                                                                      3: batch["attention_mask"]})},
    labels=lambda batch: ignored(torch.randint(0, TAGS, batch["input_ids"].shape, generator=torch.Generator(
    ).manual_seed(3)).masked_fill(batch["attention_mask"] == 0, -100), (0, 3)),
    padding_rows=lambda model: [(model.get_input_embeddings().weight, PAD)],
    config_fields=dict(vocab_size=VOCAB),
)

CLASSES = 3
SEP = 5  # the hierarchical classifier's sentence separator
DOCUMENTS = [[11, 12, SEP, 13, 14, 15, SEP, 16], [17, 18, SEP, 19, 20], [21, 22]]


def flat_reference(model, batch: Batch) -> Tensor:
    return torch.stack([reference.sequence_classifier(model, [torch.tensor(ids)])[0]
                        for ids in real_ids(batch["input_ids"], batch["attention_mask"])])


def split(ids: list[int]) -> list[Tensor]:
    sentences, current = [], []
    for token in ids + [SEP]:
        if token == SEP:
            if current:
                sentences.append(torch.tensor(current))
            current = []
        else:
            current.append(token)
    return sentences


def han_reference(model, batch: Batch) -> Tensor:
    return torch.stack([reference.sequence_classifier(model, split(ids))[0]
                        for ids in real_ids(batch["input_ids"], batch["attention_mask"])])


def pooling_weights(model, output, batch) -> dict[str, Over]:
    return {"attentions[0]": Over(output.attentions[0], {1: batch["attention_mask"]})}


def sentence_weights(model, output, batch) -> dict[str, Over]:
    """The word weights of each sentence α [B, N, W] and the sentence weights β [B, N], over the sentences the
    model splits the text into."""
    _, words = model.split_sentences(batch["input_ids"], batch["attention_mask"])
    word_weights, weights = output.attentions
    return {"attentions[0]": Over(word_weights, {1: words}), "attentions[1]": Over(weights, {1: words.any(-1).long()})}


def classifier(hierarchical: bool) -> Tester:
    return Tester(
        name="classifier-han" if hierarchical else "classifier-flat", family="classifier",
        auto_class=AutoModelForSequenceClassification,
        model=encoder_head(BahdanauForSequenceClassification, num_labels=CLASSES, hierarchical=hierarchical,
                           sentence_separator_token_id=SEP),
        batch=(lambda left: dict(zip(("input_ids", "attention_mask"), text_rows(DOCUMENTS, left)))) if hierarchical
        else encoder_batch,
        padded=TEXT, outputs=the_logits, weights=sentence_weights if hierarchical else pooling_weights,
        labels=lambda batch: torch.tensor([2, -100, 0]),
        reference=han_reference if hierarchical else flat_reference,
        padding_rows=lambda model: [(model.get_input_embeddings().weight, PAD)],
        config_fields=dict(vocab_size=VOCAB),
    )


# the memory network -------------------------------------------------------------------------------------------------

MEMORY_VOCAB = 23
STORIES = [[[1, 2, 3], [4, 5], [6, 7, 8, 9], [10]], [[11, 12], [13, 14, 15, 16, 17]], [[3]]]
QUESTIONS = [[18, 19, 2], [20, 21], [22]]


def memory_batch(left: bool) -> Batch:
    """Words padded on the left or the right of each sentence; an empty memory slot between each story's first two
    sentences (a slot without words is no memory)."""
    rows = [story[:1] + [[]] + story[1:] for story in STORIES]
    slots, width = max(map(len, rows)) + 1, max(len(words) for row in rows for words in row) + 1
    memory_ids = torch.zeros(len(rows), slots, width, dtype=torch.long)
    memory_mask = torch.zeros_like(memory_ids)
    for b, row in enumerate(rows):
        for i, words in enumerate(row):
            columns = slice(width - len(words), width) if left else slice(0, len(words))
            memory_ids[b, i, columns], memory_mask[b, i, columns] = torch.tensor(words, dtype=torch.long), 1
    input_ids, attention_mask = text_rows(QUESTIONS, left)
    return dict(input_ids=input_ids, attention_mask=attention_mask, memory_ids=memory_ids,
                memory_attention_mask=memory_mask)


def memory_reference(model, batch: Batch) -> Tensor:
    logits = []
    for b, question in enumerate(real_ids(batch["input_ids"], batch["attention_mask"])):
        story = [words for words in real_ids(batch["memory_ids"][b], batch["memory_attention_mask"][b]) if words]
        logits.append(reference.memory_network(model, story, question)[0])
    return torch.stack(logits)


def memory_model() -> BahdanauMemoryNetworkForSequenceClassification:
    torch.manual_seed(0)
    config = BahdanauMemoryNetworkConfig(vocab_size=MEMORY_VOCAB, hidden_size=6, num_labels=4, memory_size=8,
                                 sentence_encoding="position_encoding")
    return BahdanauMemoryNetworkForSequenceClassification(config).double().eval()


MEMORY = Tester(
    name="memory", family="memory", auto_class=AutoModelForSequenceClassification,
    model=memory_model, batch=memory_batch,
    padded={**TEXT, "memory_ids": "memory_attention_mask", "memory_attention_mask": "memory_attention_mask"},
    outputs=the_logits,
    weights=lambda model, output, batch: {
        f"attentions[{hop}]": Over(weights, {1: batch["memory_attention_mask"].any(-1).long()})
        for hop, weights in enumerate(output.attentions)},
    labels=lambda batch: torch.tensor([2, -100, 1]),
    reference=memory_reference,
    padding_rows=lambda model: [(table.weight, PAD) for table in model.memory_network.tying.word_tables],
    config_fields=dict(vocab_size=MEMORY_VOCAB),
)


# co-attention: a question and a passage, a question and an image ------------------------------------------------------

PASSAGE_VOCAB = 25
PASSAGE_QUESTIONS = [[1, 2, 3, 4], [5, 6], [7]]
PASSAGES = [[8, 9, 10, 11, 12], [13, 14, 15], [16, 17, 18, 19, 20, 21, 22]]


def passage_batch(left: bool) -> Batch:
    input_ids, attention_mask = text_rows(PASSAGE_QUESTIONS, left)
    context_ids, context_attention_mask = text_rows(PASSAGES, left, extra=2)
    return dict(input_ids=input_ids, attention_mask=attention_mask, context_ids=context_ids,
                context_attention_mask=context_attention_mask)


def passage_reference(model, batch: Batch) -> Tensor:
    return torch.stack([reference.text_coattention(model, question, context)[0] for question, context in zip(
        real_ids(batch["input_ids"], batch["attention_mask"]),
        real_ids(batch["context_ids"], batch["context_attention_mask"]))])


def coattention_weights(question_mask: Tensor, context_mask: Tensor, output) -> dict[str, Over]:
    weights = {}
    for level, (question, context) in enumerate(zip(output.question_attentions, output.context_attentions)):
        weights[f"question_attentions[{level}]"] = Over(question, {1: question_mask})
        weights[f"context_attentions[{level}]"] = Over(context, {1: context_mask})
    for level, affinity in enumerate(output.affinities or ()):
        weights[f"affinities[{level}]"] = Over(affinity, {1: question_mask, 2: context_mask})
    return weights


def passage_model() -> BahdanauForTextPairClassification:
    torch.manual_seed(0)
    config = BahdanauTextCoAttentionConfig(vocab_size=PASSAGE_VOCAB, hidden_size=6, attention_size=5,
                                           answer_hidden_size=7, context_hidden_size=4, num_labels=4)
    return BahdanauForTextPairClassification(config).double().eval()


PASSAGE = Tester(
    name="passage", family="passage", auto_class=AutoModelForSequenceClassification,
    model=passage_model, batch=passage_batch,
    padded={**TEXT, "context_ids": "context_attention_mask", "context_attention_mask": "context_attention_mask"},
    outputs=the_logits,
    weights=lambda model, output, batch: coattention_weights(batch["attention_mask"], batch["context_attention_mask"],
                                                             output),
    labels=lambda batch: torch.tensor([2, -100, 1]),
    reference=passage_reference,
    padding_rows=lambda model: [(model.coattention.embeddings.weight, PAD)],
    config_fields=dict(vocab_size=PASSAGE_VOCAB),
)

IMAGE_VOCAB, POOLS = 12, [[2, 2], [2, 3]]
IMAGE_SIZES = ((9, 14), (5, 7), (9, 3))  # (H, W); their grids under POOLS: 3 × 3, 2 × 2, 3 × 1 regions


def pixels(num_channels: int, seed: int = 0) -> Batch:
    """The processor's padded batch of random images of ``IMAGE_SIZES`` (not resized), in float64."""
    rng = np.random.default_rng(seed)
    images = [rng.integers(0, 256, size if num_channels == 1 else (*size, num_channels), dtype=np.uint8)
              for size in IMAGE_SIZES]
    batch = BahdanauImageProcessor(num_channels=num_channels, do_resize=False)(images, return_tensors="pt")
    return dict(pixel_values=batch["pixel_values"].double(), pixel_mask=batch["pixel_mask"])


def region_mask(pixel_mask: Tensor, regions: int) -> Tensor:
    """[B, regions]: 1 for each image's own H'_b·W'_b regions (its grid, row-major, first), 0 for padding."""
    heights, widths = pixel_mask.any(2).sum(1), pixel_mask.any(1).sum(1)
    for pool_height, pool_width in POOLS:
        heights, widths = (heights + pool_height - 1) // pool_height, (widths + pool_width - 1) // pool_width
    return (torch.arange(regions)[None] < (heights * widths)[:, None]).long()


def crops(batch: Batch) -> list[Tensor]:
    """Each image alone [1, C, H_b, W_b]."""
    return [batch["pixel_values"][b:b + 1, :, :height, :width] for b, (height, width) in enumerate(IMAGE_SIZES)]


def image_batch(left: bool) -> Batch:
    decoder_input_ids = torch.randint(3, IMAGE_VOCAB, (3, 5), generator=torch.Generator().manual_seed(3))
    decoder_input_ids[:, 0] = BOS
    return dict(**pixels(num_channels=1), decoder_input_ids=decoder_input_ids)


def image_model() -> BahdanauForImageToText:
    torch.manual_seed(0)
    config = BahdanauImageToTextConfig(vocab_size=IMAGE_VOCAB, embedding_size=8, hidden_size=16, attention_size=8,
                                       output_size=8, cnn_channels=[4, 8], cnn_pool_sizes=POOLS)
    return redrawn(BahdanauForImageToText(config), 1.0, 1000).double().eval()


IMAGE = {"pixel_values": "pixel_mask", "pixel_mask": "pixel_mask"}

IMAGE_TO_TEXT = Tester(
    name="image-to-text", family="image-to-text", auto_class=AutoModelForImageTextToText,
    model=image_model, batch=image_batch, left_padding=False, padded=IMAGE,
    outputs=the_logits,
    weights=lambda model, output, batch: {"cross_attentions[0]": Over(output.cross_attentions[0], {
        3: region_mask(batch["pixel_mask"], output.cross_attentions[0].shape[-1])})},
    labels=lambda batch: ignored(torch.randint(3, IMAGE_VOCAB, (3, 5), generator=torch.Generator().manual_seed(4)),
                                 (0, slice(3, None)), (2, slice(1, None))),
    reference=lambda model, batch: reference.image_to_text_logits(model, crops(batch), batch["decoder_input_ids"]),
    float_inputs={"pixel_values": "pixel_mask"},
    config_fields=dict(vocab_size=IMAGE_VOCAB, cnn_channels=[4, 8], cnn_pool_sizes=POOLS),
    generate=dict(max_new_tokens=4, num_beams=2),
)

VQA_VOCAB = 15
VQA_QUESTIONS = [[3, 4, 5, 6, 7, 8], [9, 10, 11, 12], [13, 14]]


def vqa_batch(left: bool) -> Batch:
    input_ids, attention_mask = text_rows(VQA_QUESTIONS, left)
    return dict(input_ids=input_ids, attention_mask=attention_mask, **pixels(num_channels=3, seed=1))


def vqa_reference(model, batch: Batch) -> Tensor:
    return torch.stack([reference.visual_question_answering(model, words, image)[0] for words, image in zip(
        real_ids(batch["input_ids"], batch["attention_mask"]), crops(batch))])


def vqa_model() -> BahdanauForVisualQuestionAnswering:
    torch.manual_seed(0)
    config = BahdanauVisualQuestionAnsweringConfig(vocab_size=VQA_VOCAB, hidden_size=6, attention_size=5,
                                                   answer_hidden_size=7, num_labels=5, phrase_windows=[1, 2, 3],
                                                   cnn_channels=[4, 8], cnn_pool_sizes=POOLS)
    return redrawn(BahdanauForVisualQuestionAnswering(config), 0.5, 1000).double().eval()


VQA = Tester(
    name="vqa", family="vqa", auto_class=AutoModelForVisualQuestionAnswering,
    model=vqa_model, batch=vqa_batch, padded={**TEXT, **IMAGE},
    outputs=the_logits,
    weights=lambda model, output, batch: coattention_weights(
        batch["attention_mask"], region_mask(batch["pixel_mask"], output.context_attentions[0].shape[-1]), output),
    labels=lambda batch: torch.tensor([2, -100, 4]),
    reference=vqa_reference,
    padding_rows=lambda model: [(model.coattention.embeddings.weight, PAD)],
    float_inputs={"pixel_values": "pixel_mask"},
    config_fields=dict(vocab_size=VQA_VOCAB, cnn_channels=[4, 8], cnn_pool_sizes=POOLS),
)

# every family's testers: every seq2seq preset, and the pointer-generator and coverage with hard attention on
# Bahdanau's decoder; both classifiers
TESTERS: dict[str, list[Tester]] = {
    "seq2seq": [*(seq2seq(preset) for preset in sorted(PRESETS)),
                replace(seq2seq("rnnsearch+coverage+hard"), continuous=False), seq2seq("rnnsearch+copy")],
    "pointer": [POINTER],
    "tagger": [TAGGER],
    "classifier": [classifier(hierarchical=False), classifier(hierarchical=True)],
    "memory": [MEMORY],
    "passage": [PASSAGE],
    "image-to-text": [IMAGE_TO_TEXT],
    "vqa": [VQA],
}
