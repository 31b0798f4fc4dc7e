"""Pointer networks (``BahdanauForPointerNetwork``): the output distribution against Vinyals et al.'s equations
(``reference.pointer_network``), teacher forcing == cache stepping, generate() (greedy, beam, forbid_repeats), the
loss, the collator, bad inputs, what a saved folder carries. What every head does (save/load through the Auto class,
remote code in a fresh process) is tests/contract/'s."""

import json

import pytest
import torch

from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig, reference
from hf_bahdanau.modeling.attention import ATTENTION_SCORES
from hf_bahdanau.modeling.recurrent import RNN_TYPES
from hf_bahdanau.modeling.collators import DataCollatorForPointing
from hf_bahdanau.modeling.pointing import END, ForbidRepeatedPointers, positions

from conftest import assert_float64_close, softmax_sum_tolerance
from hf_bahdanau.modeling.transformers_private import cache_of

SIZES = dict(hidden_size=16, embedding_size=8, attention_size=8)
VARIANTS = {
    "additive-gru": dict(),
    "dot-lstm-feeding": dict(attention_type="dot", rnn_type="lstm", input_feeding=True, bidirectional=False),
    "general-2-layers-mean": dict(attention_type="general", encoder_layers=2, decoder_layers=2, bridge="mean"),
    "multihead": dict(attention_type="multihead", num_attention_heads=2),
    "concat-rnn-zero": dict(attention_type="concat", rnn_type="rnn", bridge="zero"),
    "scaled-dot-tokens": dict(attention_type="scaled_dot", bidirectional=False, vocab_size=12),
}
LENGTHS = (5, 3, 1)


def pointer_model(variant: str = "additive-gru", seed: int = 0) -> BahdanauForPointerNetwork:
    overrides = VARIANTS[variant]
    features = None if "vocab_size" in overrides else 2
    torch.manual_seed(seed)
    return BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=features, **SIZES, **overrides)).eval()


def pointer_batch(model: BahdanauForPointerNetwork, seed: int = 1) -> dict[str, torch.Tensor]:
    """Rows of LENGTHS inputs, right-padded, whose labels point at every input in reverse order, then END."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for n in LENGTHS:
        inputs = (torch.rand(n, 2, generator=generator).tolist() if model.config.input_feature_size
                  else torch.randint(1, model.config.vocab_size, (n,), generator=generator).tolist())
        key = "input_features" if model.config.input_feature_size else "input_ids"
        rows.append({key: inputs, "labels": [*range(n, 0, -1), END]})
    return DataCollatorForPointing()(rows)


def inputs_of(batch: dict) -> dict:
    return {key: value for key, value in batch.items() if key != "labels"}


def teacher_forced(labels: torch.Tensor) -> torch.Tensor:
    """The decoder inputs of labels: start 0, then the labels shifted right (-100 read as 0)."""
    return torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1].clamp(min=END)], dim=1)


def float64(model, batch):
    model = model.double()
    return model, {key: value.double() if value.is_floating_point() else value for key, value in batch.items()}


def assert_log_probs_close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Equal −∞ (padding) and float64-close finite log-probabilities."""
    finite = torch.isfinite(expected)
    assert torch.equal(torch.isfinite(actual), finite)
    assert (expected[~finite] == float("-inf")).all() and (actual[~finite] == float("-inf")).all()
    assert_float64_close(actual[finite], expected[finite])


# 1. the equations ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_logits_are_the_log_of_the_attention_over_end_and_inputs(variant):
    model, batch = float64(*(lambda m: (m, pointer_batch(m)))(pointer_model(variant)))
    decoder_input_ids = teacher_forced(batch["labels"])
    with torch.no_grad():
        output = model(**batch, output_attentions=True)
        expected = reference.pointer_network(model, batch["attention_mask"], decoder_input_ids,
                                             input_features=batch.get("input_features"),
                                             input_ids=batch.get("input_ids"))
    assert output.logits.shape == (3, max(LENGTHS) + 1, max(LENGTHS) + 1)
    assert_log_probs_close(output.logits, expected)
    # the distribution is the decoder's attention (averaged over heads), returned as cross_attentions
    assert_float64_close(output.cross_attentions[0][:, 0], output.logits.exp())
    real = torch.cat([torch.ones(3, 1, dtype=torch.bool), batch["attention_mask"].bool()], dim=1)
    assert (output.logits.exp().sum(-1) - 1).abs().max() <= softmax_sum_tolerance(max(LENGTHS) + 1, torch.float64)
    assert (output.logits.isinf() == ~real[:, None, :]).all()


def test_first_step_by_hand():
    """p(C_1 = j) = softmax_j(v_aᵀ tanh(W_a d_1 + U_a e_j)), d_1 = GRU(x_start, s_0), s_0 = tanh(W_s ←h_1)."""
    model = pointer_model().double()
    points = torch.rand(1, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits = model(points, decoder_input_ids=torch.zeros(1, 1, dtype=torch.long)).logits[0, 0]
        encoder = model.model.encoder.rnn.layers[0]
        annotations, final = encoder(model.feature_projection(points))
        backward_first = final[1]  # ←h_1 [1, H/2]
        s0 = torch.tanh(model.model.decoder.bridge.proj(backward_first))
        cell = model.model.decoder.rnn.layers[0]
        _, d1 = cell(model.start_input[None, None], s0[None])
        attention = model.model.decoder.attention
        pointed = torch.cat([model.end_annotation[None], annotations[0]])  # [e_0; h_1 … h_4]
        energies = attention.energy_proj(torch.tanh(attention.query_proj(d1[0]) + attention.key_proj(pointed)))[:, 0]
    assert_float64_close(logits, torch.log_softmax(energies, dim=-1))


SWEEP = [(score, cell, feeding) for score in ATTENTION_SCORES for cell in RNN_TYPES for feeding in (False, True)
         if not ATTENTION_SCORES[score].reads_previous_alignment]  # refused: a pointer scores its steps at once


@pytest.mark.parametrize("score, cell, feeding", SWEEP, ids=["-".join(map(str, case)) for case in SWEEP])
def test_every_score_cell_and_input_feeding(score, cell, feeding):
    """Every registered score and cell, with and without input feeding: the equations, teacher forcing == cache
    stepping, and training gradients that reach the pointer's score."""
    torch.manual_seed(0)
    same_size = ATTENTION_SCORES[score].same_size_required
    config = BahdanauPointerConfig(input_feature_size=2, attention_type=score, rnn_type=cell, input_feeding=feeding,
                                   bidirectional=not same_size, num_attention_heads=2 if score == "multihead" else 1,
                                   **SIZES)
    model = BahdanauForPointerNetwork(config).double().eval()
    batch = {key: value.double() if value.is_floating_point() else value
             for key, value in pointer_batch(model).items()}
    decoder_input_ids = teacher_forced(batch["labels"])
    with torch.no_grad():
        full = model(**inputs_of(batch), decoder_input_ids=decoder_input_ids).logits
        expected = reference.pointer_network(model, batch["attention_mask"], decoder_input_ids,
                                             input_features=batch["input_features"])
        encoded, cache, steps = model.encode(batch["input_features"], attention_mask=batch["attention_mask"]), None, []
        for step in range(decoder_input_ids.shape[1]):
            output = model(encoder_outputs=encoded, decoder_input_ids=decoder_input_ids[:, step:step + 1],
                           past_key_values=cache, use_cache=True)
            cache = cache_of(output)
            steps.append(output.logits)
    assert_log_probs_close(full, expected)
    assert_log_probs_close(torch.cat(steps, dim=1), full)
    model.train()
    model(**batch).loss.backward()
    # the multi-head values and output map pool the context, which reaches the pointer only through input feeding
    score_gradients = [parameter.grad for name, parameter in model.model.decoder.attention.named_parameters()
                       if feeding or not name.startswith(("v_proj", "out_proj"))]
    assert all(gradient is not None and torch.isfinite(gradient).all() and gradient.abs().sum() > 0
               for gradient in score_gradients)
    assert model.start_input.grad.abs().sum() > 0
    if score != "location":  # the location score reads no keys, so not the end annotation either
        assert model.end_annotation.grad.abs().sum() > 0


# 2. paths: cache stepping, generate() ----------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["additive-gru", "dot-lstm-feeding", "multihead", "scaled-dot-tokens"])
def test_cache_stepping_equals_teacher_forcing(variant):
    model, batch = float64(*(lambda m: (m, pointer_batch(m)))(pointer_model(variant)))
    decoder_input_ids = teacher_forced(batch["labels"])
    with torch.no_grad():
        full = model(**inputs_of(batch), decoder_input_ids=decoder_input_ids).logits
        cache, steps = None, []
        encoded = model.encode(batch.get("input_features"), batch.get("input_ids"), batch["attention_mask"])
        for step in range(decoder_input_ids.shape[1]):
            output = model(encoder_outputs=encoded, decoder_input_ids=decoder_input_ids[:, step:step + 1],
                           past_key_values=cache, use_cache=True)
            cache = cache_of(output)
            steps.append(output.logits)
    assert_log_probs_close(torch.cat(steps, dim=1), full)
    assert torch.equal(cache.output_layer_inputs, model.pointer_inputs(encoded))  # [x_start; x_1 … x_S], kept when built


def test_beams_read_their_own_sources_inputs_through_rows_per_source():
    """Two decoder rows per source (generate()'s beams) read their own source's inputs; the rows are never inferred:
    without ``rows_per_source`` the same rows are refused by name."""
    model, batch = float64(*(lambda m: (m, pointer_batch(m)))(pointer_model()))
    decoder_input_ids = teacher_forced(batch["labels"])
    with torch.no_grad():
        single = model(**inputs_of(batch), decoder_input_ids=decoder_input_ids).logits
        doubled = model(**inputs_of(batch), decoder_input_ids=decoder_input_ids.repeat_interleave(2, 0),
                        rows_per_source=2).logits
        assert_log_probs_close(doubled, single.repeat_interleave(2, 0))
        with pytest.raises(ValueError, match=r"`rows_per_source` = 1 rows for each of the \d+ input rows"):
            model(**inputs_of(batch), decoder_input_ids=decoder_input_ids.repeat_interleave(2, 0))


def score_of(model, batch, sequences: torch.Tensor, rows_per_source: int) -> torch.Tensor:
    """Σ log p of each generated sequence (after its start id, up to and with its first END), teacher-forced."""
    expanded = {key: value.repeat_interleave(rows_per_source, 0) for key, value in inputs_of(batch).items()}
    generated = sequences[:, 1:]
    ended = (generated == END).long().cumsum(1)
    keep = (ended == 0) | ((ended == 1) & (generated == END))
    labels = generated.masked_fill(~keep, -100)
    with torch.no_grad():
        log_probs = model(**expanded, decoder_input_ids=sequences[:, :-1]).logits
    picked = log_probs.gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    return (picked * keep).sum(1), keep.sum(1)


def test_greedy_is_the_argmax_of_the_teacher_forced_distribution():
    model, batch = float64(*(lambda m: (m, pointer_batch(m)))(pointer_model()))
    with torch.no_grad():
        sequences = model.generate(**inputs_of(batch))
        log_probs = model(**inputs_of(batch), decoder_input_ids=sequences[:, :-1]).logits
    assert sequences.shape[1] <= max(LENGTHS) + 2  # by default at most S + 1 new ids
    assert sequences[:, 0].eq(END).all()
    for row, length in enumerate(LENGTHS):
        for step in range(sequences.shape[1] - 1):
            if END in sequences[row, 1:step + 1].tolist():
                break
            assert sequences[row, step + 1] == log_probs[row, step].argmax()
            assert sequences[row, step + 1] <= length  # never a padded input


def test_beam_search_scores_are_the_sequences_log_probabilities():
    model, batch = float64(*(lambda m: (m, pointer_batch(m)))(pointer_model("dot-lstm-feeding")))
    with torch.no_grad():
        beams = model.generate(**inputs_of(batch), num_beams=4, num_return_sequences=4, output_scores=True,
                               return_dict_in_generate=True, length_penalty=0.0, forbid_repeats=True)
        greedy = model.generate(**inputs_of(batch), output_scores=True, return_dict_in_generate=True,
                                forbid_repeats=True)
    scores, lengths = score_of(model, batch, beams.sequences, 4)
    # transformers keeps beam scores in float32: each of the ≤ S + 1 additions rounds by ε32 of the running total
    found = beams.sequences_scores > -1e8  # the one-input row has two sequences; transformers fills the rest with -1e9
    assert found.sum() == 4 + 4 + 2
    tolerance = (max(LENGTHS) + 1) * torch.finfo(torch.float32).eps * float(scores[found].abs().max())
    torch.testing.assert_close(beams.sequences_scores[found].double(), scores[found], atol=tolerance, rtol=0)
    # forbidding repeats changes the distribution the search scores, so compare with the processed greedy scores
    processed = sum(step.gather(-1, greedy.sequences[:, i + 1:i + 2])[:, 0].masked_fill(
        greedy.sequences[:, 1:i + 1].eq(END).any(1), 0) for i, step in enumerate(greedy.scores))
    best = beams.sequences_scores.view(3, 4)[:, 0].double()
    assert (best >= processed - tolerance).all()  # beam search finds at least greedy's (processed) score
    assert (beams.sequences_scores.view(3, 4).diff(dim=1) <= 0).all()  # best first
    assert lengths.max() <= max(LENGTHS) + 1


def test_forbid_repeats_points_at_each_input_at_most_once():
    model, batch = pointer_model(seed=0), None
    batch = pointer_batch(model)
    with torch.no_grad():
        free = model.generate(**inputs_of(batch))
        outputs = [model.generate(**inputs_of(batch), forbid_repeats=True),
                   model.generate(**inputs_of(batch), forbid_repeats=True, num_beams=3, num_return_sequences=3)]
    assert any(len(set(positions(row[1:]))) < len(positions(row[1:])) for row in free)  # it repeats when allowed
    for sequences in outputs:
        for row in sequences:
            pointed = positions(row[1:])
            assert len(set(pointed)) == len(pointed)


def test_forbid_repeated_pointers_processor():
    scores = torch.zeros(2, 5)
    processed = ForbidRepeatedPointers()(torch.tensor([[0, 3, 1], [0, 0, 0]]), scores)
    assert processed[0].tolist() == [0, float("-inf"), 0, float("-inf"), 0]
    assert processed[1].tolist() == [0] * 5  # END is never forbidden


# 3. training ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["general-2-layers-mean", "dot-lstm-feeding"])
def test_loss_is_the_mean_negative_log_probability_of_the_labels_and_reaches_every_parameter(variant):
    model = pointer_model(variant).train()
    batch = pointer_batch(model)
    output = model(**batch)
    labels = batch["labels"]
    picked = output.logits.gather(-1, labels.clamp(min=0)[..., None])[..., 0][labels != -100]
    torch.testing.assert_close(output.loss, -picked.mean())
    output.loss.backward()
    missing = [name for name, parameter in model.named_parameters()
               if parameter.grad is None or not parameter.grad.abs().sum() > 0]
    # h̃_t = tanh(W_c [c_t; h_t]) reaches the pointer only through input feeding
    assert missing == ([] if model.config.input_feeding else ["model.decoder.readout.proj.weight",
                                                              "model.decoder.readout.proj.bias"])


def test_collator_pads_inputs_right_and_labels_with_minus_100():
    batch = DataCollatorForPointing()([{"input_features": [[1.0, 2.0]], "labels": [1, 0]},
                                       {"input_features": [[3.0, 4.0], [5.0, 6.0]], "labels": [2, 1, 0]}])
    assert batch["input_features"].tolist() == [[[1.0, 2.0], [0.0, 0.0]], [[3.0, 4.0], [5.0, 6.0]]]
    assert batch["attention_mask"].tolist() == [[1, 0], [1, 1]]
    assert batch["labels"].tolist() == [[1, 0, -100], [2, 1, 0]]
    ids = DataCollatorForPointing(pad_token_id=7)([{"input_ids": [4]}, {"input_ids": [5, 6]}])
    assert ids["input_ids"].tolist() == [[4, 7], [5, 6]] and "labels" not in ids
    assert positions([3, 1, 2, END, 4]) == [2, 0, 1]


# 4. bad inputs -------------------------------------------------------------------------------------------


def test_bad_inputs_are_refused_by_name():
    model = pointer_model()
    points = torch.rand(2, 3, 2)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    cases = [
        (dict(input_features=points, attention_mask=torch.tensor([[1, 1, 1], [0, 1, 1]]),
              decoder_input_ids=torch.zeros(2, 1, dtype=torch.long)), "right-padded"),
        (dict(input_features=points, attention_mask=mask, labels=torch.tensor([[3, 0], [3, 0]])), "labels[1, 0]"),
        (dict(input_features=points, labels=torch.tensor([[4, 0], [1, 0]])), "labels"),
        (dict(input_features=torch.rand(2, 3, 3), decoder_input_ids=torch.zeros(2, 1, dtype=torch.long)),
         "input_features"),
        (dict(input_features=points.masked_fill(points > 0.5, float("nan")),
              decoder_input_ids=torch.zeros(2, 1, dtype=torch.long)), "finite"),
        (dict(input_ids=torch.ones(2, 3, dtype=torch.long), decoder_input_ids=torch.zeros(2, 1, dtype=torch.long)),
         "input_features"),
        (dict(input_features=points), "decoder_input_ids"),
        (dict(input_features=points, decoder_input_ids=torch.full((2, 1), 4)), "decoder_input_ids"),
        (dict(input_features=points, decoder_input_ids=torch.zeros(3, 1, dtype=torch.long)), "decoder_input_ids"),
        (dict(input_features=points, attention_mask=torch.tensor([[1, 1, 1], [0, 0, 0]]),
              decoder_input_ids=torch.zeros(2, 1, dtype=torch.long)), "at least one"),
    ]
    for kwargs, named in cases:
        with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
            model(**kwargs)
    with pytest.raises(ValueError, match="forbid_repeats"):
        model.generate(points, forbid_repeats="yes")
    with pytest.raises(TypeError, match="BahdanauPointerNetworkEncoderOutput"):
        model(encoder_outputs=model.model.encoder(inputs_embeds=torch.rand(2, 3, 8)),
              decoder_input_ids=torch.zeros(2, 1, dtype=torch.long))


def test_decoder_inputs_must_fit_the_labels_and_point_at_real_inputs():
    model = pointer_model()
    points = torch.rand(2, 3, 2)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    labels = torch.tensor([[3, 1, 0], [2, 0, -100]])
    with pytest.raises(ValueError, match=r"`labels` must have the shape of `decoder_input_ids` \[2, 2\] "
                                         r"\(\[batch, steps\]\), got \[2, 3\]"):
        model(input_features=points, attention_mask=mask, labels=labels, decoder_input_ids=teacher_forced(labels)[:, :2])
    pointing_at_padding = torch.tensor([[0, 3], [0, 3]])  # row 1 has 2 inputs: pointer id 3 is its padding
    with pytest.raises(ValueError, match=r"`decoder_input_ids\[1, 1\]` = 3 points at input position 2, which is "
                                         r"padding in that row \(it has 2 inputs\)"):
        model(input_features=points, attention_mask=mask, decoder_input_ids=pointing_at_padding)
    fitting = model(input_features=points, attention_mask=mask, labels=labels, decoder_input_ids=teacher_forced(labels))
    assert fitting.logits.shape == (2, 3, 4) and torch.isfinite(fitting.loss)


def test_resizing_token_embeddings_is_refused_by_name():
    model = pointer_model("scaled-dot-tokens")
    with pytest.raises(NotImplementedError, match="resize_token_embeddings does not apply to a pointer network"):
        model.resize_token_embeddings(20)
    assert model.get_input_embeddings().num_embeddings == 12


def test_collator_refuses_rows_with_different_feature_counts():
    rows = [{"input_features": [[1.0, 2.0]], "labels": [1, 0]},
            {"input_features": [[3.0, 4.0, 5.0]], "labels": [1, 0]}]
    with pytest.raises(ValueError, match=r"row 1's input_features have \[3\] features per input and row 0's \[2\]"):
        DataCollatorForPointing()(rows)


@pytest.mark.parametrize("overrides, named", [
    (dict(decoder_style="bahdanau"), "decoder_style"),
    (dict(attention_type="none"), "attention_type"),
    (dict(attention_scope="local-m"), "attention_scope"),
    (dict(attention_mode="hard"), "attention_mode"),
    (dict(use_coverage=True), "use_coverage"),
    (dict(input_feature_size=0), "input_feature_size"),
])
def test_config_refuses_what_a_pointer_cannot_use(overrides, named):
    with pytest.raises(ValueError, match=named):
        BahdanauPointerConfig(**overrides)


# 5. saving and loading ------------------------------------------------------------------------------------


def test_a_saved_folder_carries_the_pointer_code_and_names_it(tmp_path):
    """(Loading it through the Auto class, here and in a process without the package: tests/contract/.)"""
    pointer_model("dot-lstm-feeding").save_pretrained(tmp_path)
    assert {"modeling_pointer.py", "pointing.py", "configuration_bahdanau.py", "decoder.py"} <= {
        path.name for path in tmp_path.iterdir()}
    assert json.loads((tmp_path / "config.json").read_text())["auto_map"] == {
        "AutoConfig": "configuration_bahdanau.BahdanauPointerConfig",
        "AutoModel": "modeling_pointer.BahdanauForPointerNetwork"}
