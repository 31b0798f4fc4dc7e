"""BahdanauEnsembleForConditionalGeneration: generate() over p = (1/M) Σ_m p_m, checked against each member's own
forward and generate(), by hand; mismatched members refused by field; hf-bahdanau-translate --ensemble prints what the
Python API decodes."""

import pytest
import torch

from conftest import EOS, PAD, padded_batch, tiny_model
from hf_bahdanau import BahdanauEnsembleForConditionalGeneration
from hf_bahdanau.cli import main as translate_main, parse_args
from hf_bahdanau.modeling.translation import translate
from hf_bahdanau.onnx.runtime import MANIFEST
from training.common.tokenization import train_tokenizer

STEPS = 6
EPS = torch.finfo(torch.float32).eps


@pytest.fixture(scope="module")
def members(one_thread):
    """Two different tiny models: a GRU RNNsearch (additive attention) and a 2-layer LSTM with Luong's general
    attention, other sizes too."""
    return (tiny_model("rnnsearch", seed=0),
            tiny_model("luong-general", seed=1, rnn_type="lstm", hidden_size=20, output_size=14))


def score_tolerance(scores: torch.Tensor) -> float:
    """Two float32 paths to a beam score, a sum of ≤ STEPS log-probabilities each rounded a few times (log-softmax
    again, logsumexp, − log M): 4 ε per step relative to the score's size plus the log M term."""
    return 4 * EPS * STEPS * (1 + float(scores.abs().max()) * STEPS)


@torch.no_grad()
def mean_log_probs_by_hand(models, input_ids, mask, decoder_input_ids) -> torch.Tensor:
    """log((1/M) Σ_m softmax(logits_m)) of each member's own teacher-forced forward [B, T, V]."""
    probs = [torch.softmax(model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids)
                           .logits.double(), -1) for model in models]
    return torch.log(sum(probs) / len(probs))


@pytest.mark.parametrize("options", [dict(num_beams=1), dict(num_beams=4, length_penalty=0.6),
                                     dict(num_beams=4, num_return_sequences=2, length_penalty_style="gnmt",
                                          length_penalty=0.8)])
@pytest.mark.parametrize("copies", [1, 2])
def test_one_model_or_copies_of_it_decode_as_the_model(members, options, copies):
    """p̄ = p when every member is the same model: the model's own sequences, and its scores (greedy: its logits'
    log-softmax, the ensemble's logits being log p̄)."""
    model = members[0]
    input_ids, mask = padded_batch()
    kwargs = dict(attention_mask=mask, max_new_tokens=STEPS, output_scores=True, return_dict_in_generate=True,
                  **options)
    own = model.generate(input_ids, **kwargs)
    ensemble = BahdanauEnsembleForConditionalGeneration([model] * copies).generate(input_ids, **kwargs)
    assert torch.equal(ensemble.sequences, own.sequences)
    if options["num_beams"] == 1:
        expected = torch.stack([torch.log_softmax(step, -1) for step in own.scores])
        torch.testing.assert_close(torch.stack(ensemble.scores), expected, rtol=0,
                                   atol=score_tolerance(expected) / STEPS)
    else:
        torch.testing.assert_close(ensemble.sequences_scores, own.sequences_scores, rtol=0,
                                   atol=score_tolerance(own.sequences_scores))


def test_scores_are_the_log_of_the_members_mean_probability(members):
    """forward's logits (float64 members) and generate()'s first scores (float32 search) = log((p1 + p2) / 2) of
    each member's own forward."""
    input_ids, mask = padded_batch()
    start = torch.full((3, 1), members[0].config.decoder_start_token_id)
    doubles = [model.double() for model in members]
    try:
        expected = mean_log_probs_by_hand(doubles, input_ids, mask, start)[:, 0]
        ensemble = BahdanauEnsembleForConditionalGeneration(doubles)
        with torch.no_grad():
            logits = ensemble(input_ids=input_ids, attention_mask=mask, decoder_input_ids=start).logits[:, 0]
        assert logits.dtype == torch.float64
        torch.testing.assert_close(logits, expected, rtol=0, atol=1e-12 * float(expected.abs().max()))
    finally:
        for model in members:
            model.float()
    ensemble = BahdanauEnsembleForConditionalGeneration(members)
    first = ensemble.generate(input_ids, attention_mask=mask, max_new_tokens=1, output_scores=True,
                              return_dict_in_generate=True).scores[0]
    torch.testing.assert_close(first.double(), expected, rtol=0, atol=8 * EPS * float(expected.abs().max()))


def test_greedy_decoding_equals_a_greedy_loop_over_the_members_forwards(members):
    """Each step: argmax_y (p1(y) + p2(y)) / 2 of the members' teacher-forced forwards over the whole prefix (no
    cache), padding after EOS."""
    input_ids, mask = padded_batch()
    sequences = torch.full((3, 1), members[0].config.decoder_start_token_id)
    finished = torch.zeros(3, dtype=torch.bool)
    for _ in range(STEPS):
        token = mean_log_probs_by_hand(members, input_ids, mask, sequences)[:, -1].argmax(-1)
        token = token.masked_fill(finished, PAD)
        sequences = torch.cat([sequences, token[:, None]], 1)
        finished |= token == EOS
        if finished.all():
            break
    generated = BahdanauEnsembleForConditionalGeneration(members).generate(input_ids, attention_mask=mask,
                                                                   max_new_tokens=STEPS)
    assert torch.equal(generated, sequences)


def test_beam_scores_are_the_ensembles_teacher_forced_log_probability(members):
    """Beam search (the members' caches reordered together): each returned hypothesis scores Σ_t log p̄(y_t) / |Y|^α
    with p̄ from the members' own teacher-forced forwards."""
    input_ids, mask = padded_batch()
    alpha = 0.6
    out = BahdanauEnsembleForConditionalGeneration(members).generate(
        input_ids, attention_mask=mask, max_new_tokens=STEPS, num_beams=4, num_return_sequences=2,
        length_penalty=alpha, output_scores=True, return_dict_in_generate=True)
    rows = torch.arange(3).repeat_interleave(2)
    log_probs = mean_log_probs_by_hand(members, input_ids[rows], mask[rows], out.sequences[:, :-1])
    tokens = log_probs.gather(-1, out.sequences[:, 1:, None])[..., 0]
    lengths = (out.beam_indices >= 0).sum(1)
    counted = torch.arange(tokens.shape[1])[None] < lengths[:, None]
    expected = tokens.masked_fill(~counted, 0).sum(1) / lengths.double() ** alpha
    torch.testing.assert_close(out.sequences_scores.double(), expected, rtol=0, atol=score_tolerance(expected))


def test_a_padded_batch_decodes_as_each_row_alone(members):
    input_ids, mask = padded_batch()
    ensemble = BahdanauEnsembleForConditionalGeneration(members)
    kwargs = dict(max_new_tokens=STEPS, num_beams=3, output_scores=True, return_dict_in_generate=True)
    batch = ensemble.generate(input_ids, attention_mask=mask, **kwargs)
    for row in range(3):
        length = int(mask[row].sum())
        alone = ensemble.generate(input_ids[row:row + 1, :length], **kwargs)
        width = alone.sequences.shape[1]
        assert torch.equal(batch.sequences[row, :width], alone.sequences[0])
        assert (batch.sequences[row, width:] == PAD).all()
        torch.testing.assert_close(batch.sequences_scores[row], alone.sequences_scores[0], rtol=0,
                                   atol=score_tolerance(alone.sequences_scores))


@pytest.mark.parametrize("field, overrides", [("vocab_size", dict(vocab_size=41)), ("eos_token_id", dict(eos_token_id=5)),
                                              ("decoder_start_token_id", dict(decoder_start_token_id=4))])
def test_members_of_another_vocabulary_or_special_tokens_are_refused_by_field(members, field, overrides):
    other = tiny_model("rnnsearch", seed=2, **overrides)
    with pytest.raises(ValueError, match=f"Ensemble member 1 has {field}={overrides[field]} in its config, member 0 "
                                         f"has {getattr(members[0].config, field)}"):
        BahdanauEnsembleForConditionalGeneration([members[0], other])


def test_what_an_ensemble_cannot_decode_is_refused(members):
    input_ids, mask = padded_batch()
    ensemble = BahdanauEnsembleForConditionalGeneration(members)
    with pytest.raises(ValueError, match="`coverage_penalty=0.2`: GNMT's coverage penalty scores one model's"):
        ensemble.generate(input_ids, attention_mask=mask, num_beams=2, coverage_penalty=0.2)
    with pytest.raises(ValueError, match="`output_attentions=True`: each member of an ensemble has its own"):
        ensemble.generate(input_ids, attention_mask=mask, output_attentions=True, return_dict_in_generate=True)
    with pytest.raises(ValueError, match="Ensemble member 1 has copy_attention=True"):
        BahdanauEnsembleForConditionalGeneration([members[0], tiny_model("rnnsearch+copy")])
    with pytest.raises(ValueError, match="wrap a single name in a list"):
        BahdanauEnsembleForConditionalGeneration.from_pretrained("outputs/model")


SENTENCES = ["le 3 mars 2015", "3/14/15"]


def test_the_command_line_ensemble_prints_the_python_apis_translations(members, tmp_path, capsys):
    tokenizer = train_tokenizer(SENTENCES + ["2015-03-03"], kind="char")
    folders = []
    for index, preset in enumerate(("rnnsearch", "luong-general")):
        model = tiny_model(preset, seed=index, vocab_size=len(tokenizer), rnn_type=("gru", "lstm")[index])
        model.generation_config.max_new_tokens = STEPS
        folders.append(tmp_path / preset)
        model.save_pretrained(folders[-1])
    tokenizer.save_pretrained(folders[0])  # the main model's; the member's folder has none
    ensemble = BahdanauEnsembleForConditionalGeneration.from_pretrained(folders)
    expected = [result.translation for result in translate(ensemble, tokenizer, SENTENCES, num_beams=3)]
    alone = [result.translation for result in translate(ensemble.members[0], tokenizer, SENTENCES, num_beams=3)]
    assert expected != alone  # the second member changes the output
    capsys.readouterr()
    translate_main([str(folders[0]), "--ensemble", str(folders[1]), "--num_beams", "3", *SENTENCES])
    assert capsys.readouterr().out.splitlines() == expected

    onnx = tmp_path / "exported"
    onnx.mkdir()
    (onnx / MANIFEST).write_text("{}")
    for arguments, error in (([str(folders[0]), "--ensemble", str(onnx), "--", "x"], "is a folder written by "
                              "hf-bahdanau-export: an ensemble's members are PyTorch model folders"),
                             ([str(folders[0]), "x", "--ensemble", str(folders[1]), "--backend", "onnxruntime"],
                              "it does not run with --backend onnxruntime"),
                             ([str(folders[0]), "--ensemble", str(folders[1]), "--", "x", "--num_beams", "3"],
                              "'--num_beams' is an option of this command, not a sentence"),
                             ([str(folders[0]), "--", "x", "--max_new_tokens=3"],
                              "'--max_new_tokens=3' is an option of this command, not a sentence")):
        with pytest.raises(SystemExit):
            parse_args(arguments)
        assert error in capsys.readouterr().err

    other = tmp_path / "other-eos"
    tiny_model("rnnsearch", vocab_size=len(tokenizer), eos_token_id=4).save_pretrained(other)
    with pytest.raises(SystemExit, match=f"Ensemble member 1 has eos_token_id=4 in its config, member 0 has 2: .* "
                                         f"member 1 is '{other}'"):
        translate_main([str(folders[0]), "--ensemble", str(other), "--", *SENTENCES])
