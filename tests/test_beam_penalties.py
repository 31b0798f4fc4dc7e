"""GNMT's coverage and length penalties in beam search (Wu et al. 2016, §7; ``search.BeamPenalties``):

    s(Y, X) = Σ_t log p(y_t | y_<t, x) / lp(Y) + β Σ_j log(min(Σ_t α_tj, 1))     over the real source positions j
    lp(Y) = ((5 + |Y|) / 6)^α  (length_penalty_style="gnmt")  or  |Y|^α  (transformers' own)

Every returned score is recomputed by hand from one teacher-forced float64 pass over the returned sequence; the
search itself scores in float32, as transformers does, so the tolerances are those of ``float32_search_error``.
"""

import re

import pytest
import torch
from transformers import GenerationConfig

from conftest import FLOAT64_PATHS_RTOL, assert_float64_close, left_padded, padded_batch
from hf_bahdanau import BahdanauForConditionalGeneration
from hf_bahdanau.modeling import search
from hf_bahdanau.modeling.search import BeamPenalties
from test_generation import LENGTHS, NEVER, NUM_BEAMS, SOMETIMES, decisive_model, float32_search_error, generated

SIZES = dict(embedding_size=8, hidden_size=12, attention_size=6)
EPS32 = torch.finfo(torch.float32).eps
PER_ROW_MEMORY = ["luong-local-p", "rnnsearch-monotonic"]  # one copy of the memory per beam: rows_per_source == 1

pytestmark = pytest.mark.usefixtures("one_thread")


def penalty_model(preset: str, eos: str = SOMETIMES) -> BahdanauForConditionalGeneration:
    """``decisive_model`` at the sizes above, in float64: only the search's own float32 steps round."""
    return decisive_model(preset, eos, **SIZES).double()


def beam_search(model, input_ids, attention_mask, **kwargs):
    options = dict(num_beams=NUM_BEAMS, num_return_sequences=NUM_BEAMS, max_new_tokens=6, output_scores=True,
                   return_dict_in_generate=True)
    with torch.no_grad():
        return model.generate(input_ids=input_ids, attention_mask=attention_mask, **{**options, **kwargs})


def length_penalty_by_hand(lengths: torch.Tensor, alpha: float, style: str) -> torch.Tensor:
    lengths = lengths.double()
    return ((5 + lengths) / 6) ** alpha if style == "gnmt" else lengths ** alpha


def scores_by_hand(model, input_ids, attention_mask, sequences, beta: float, alpha: float, style: str):
    """s(Y, X) [R] of each returned row from a teacher-forced pass over sequences[:, :-1] (no cache): its log-probs
    over the |Y| generated tokens (EOS included), and the attention weights α [R, T, S] of those |Y| steps over the
    caller's source columns. Also returns Σ_t log p [R], the coverage term Σ_j log(min(Σ_t α_tj, 1)) [R] (0 for
    β = 0) and a bound on |search score − s| [R]."""
    rows = sequences.shape[0] // input_ids.shape[0]
    sources, masks = input_ids.repeat_interleave(rows, 0), attention_mask.repeat_interleave(rows, 0)
    with torch.no_grad():
        out = model(input_ids=sources, attention_mask=masks, decoder_input_ids=sequences[:, :-1], use_cache=False,
                    output_attentions=beta > 0)
    lengths = torch.tensor([len(generated(row)) for row in sequences])
    steps = torch.arange(sequences.shape[1] - 1)[None] < lengths[:, None]  # [R, T]: the generated tokens' steps
    token_log_probs = out.logits.log_softmax(-1).gather(-1, sequences[:, 1:, None])[..., 0]
    log_prob = token_log_probs.masked_fill(~steps, 0.0).sum(1)
    coverage = torch.zeros_like(log_prob)
    if beta > 0:
        totals = (out.cross_attentions[0][:, 0] * steps[..., None]).sum(1)  # Σ_t α_tj [R, S]
        coverage = (torch.log(totals.clamp(min=1e-10, max=1.0)) * masks).sum(1)
    lp = length_penalty_by_hand(lengths, alpha, style)
    expected = log_prob / lp + beta * coverage
    # the log-prob part as in test_generation (÷ lp); β·coverage rounded to float32 (ε/2 |cp|) and added (ε/2 |s|);
    # the search's float64 attention totals differ from these by relative rounding only (≪ 1e-10 on each log)
    error = (float32_search_error(model, input_ids, attention_mask, sequences, 0.0) / lp
             + EPS32 * (beta * coverage.abs() + expected.abs()) + FLOAT64_PATHS_RTOL * beta * masks.sum(1))
    return expected, log_prob, coverage, error


def assert_scores_by_hand(model, input_ids, attention_mask, out, beta, alpha, style):
    expected, _, coverage, error = scores_by_hand(model, input_ids, attention_mask, out.sequences, beta, alpha, style)
    difference = (out.sequences_scores.double() - expected).abs()
    assert (difference <= error).all(), (difference, error)
    scores = out.sequences_scores.view(input_ids.shape[0], -1)
    assert (scores[:, :-1] >= scores[:, 1:]).all(), "hypotheses are returned best first"
    return coverage


# 1. every returned score = s(Y, X) recomputed from the returned sequence ---------------------------------


@pytest.mark.parametrize("padding", ["right", "left"])
@pytest.mark.parametrize("style, alpha", [("transformers", 1.0), ("gnmt", 0.6)])
@pytest.mark.parametrize("preset", ["rnnsearch", *PER_ROW_MEMORY])
def test_penalised_scores_equal_the_formula_on_the_returned_sequences(preset, style, alpha, padding):
    """rnnsearch: global additive attention, the k beams of a source share its memory (mask [B, S]); local-p and
    monotonic: one memory copy per beam (mask [B·k, S]). Left padding: the memory is right-padded, the caller's
    columns are not."""
    model = penalty_model(preset)
    input_ids, attention_mask = padded_batch(LENGTHS)
    if padding == "left":
        input_ids, attention_mask = left_padded(input_ids, attention_mask)
    beta = 0.5
    out = beam_search(model, input_ids, attention_mask, coverage_penalty=beta, length_penalty=alpha,
                      length_penalty_style=style)
    coverage = assert_scores_by_hand(model, input_ids, attention_mask, out, beta, alpha, style)
    assert (coverage < -0.1).any(), "some hypothesis leaves source unread: the penalty is not vacuous"
    lengths = torch.tensor([len(generated(row)) for row in out.sequences])
    assert lengths.min() < lengths.max(), "hypotheses of several lengths: the length penalty is not vacuous"


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-local-p"])
def test_penalised_search_through_forward_returns_alignments_that_follow_the_beams(preset):
    """output_attentions=True runs each step through ``forward`` (not ``_next_token_logits``): the same hypotheses
    and scores, and the returned per-step alignments gathered along ``beam_indices`` give each score's coverage."""
    model = penalty_model(preset)
    input_ids, attention_mask = padded_batch(LENGTHS)
    beta, alpha = 0.5, 0.6
    options = dict(coverage_penalty=beta, length_penalty=alpha, length_penalty_style="gnmt")
    plain = beam_search(model, input_ids, attention_mask, **options)
    out = beam_search(model, input_ids, attention_mask, output_attentions=True, **options)
    assert torch.equal(out.sequences, plain.sequences)
    assert torch.equal(out.sequences_scores, plain.sequences_scores)
    _, _, coverage, _ = scores_by_hand(model, input_ids, attention_mask, out.sequences, beta, alpha, "gnmt")
    masks = attention_mask.repeat_interleave(NUM_BEAMS, 0)
    for row, (indices, sequence) in enumerate(zip(out.beam_indices, out.sequences)):
        totals = sum(out.cross_attentions[step][0][indices[step], 0, 0] for step in range(len(generated(sequence))))
        returned = (torch.log(totals.clamp(min=1e-10, max=1.0)) * masks[row]).sum()
        assert_float64_close(returned, coverage[row], scale=float(masks[row].sum()) * 23.0)  # ≤ 23 per position


# 2. the coverage penalty changes the winner; off, it changes nothing --------------------------------------


def test_a_large_coverage_penalty_picks_the_hypothesis_that_covers_more_source():
    """Without EOS every hypothesis ends at max_new_tokens: the running beams never see cp, so both searches end
    with the same candidates of one length, and β picks among the best k of them the one with the highest
    log P / |Y| + β·coverage. Where that is not the best log P, it covers more of the source."""
    model = penalty_model("rnnsearch", NEVER)
    input_ids, attention_mask = padded_batch(LENGTHS)
    beta = 10.0
    plain = beam_search(model, input_ids, attention_mask, num_return_sequences=1)
    covered = beam_search(model, input_ids, attention_mask, num_return_sequences=1, coverage_penalty=beta)
    _, plain_log_prob, plain_coverage, _ = scores_by_hand(model, input_ids, attention_mask, plain.sequences, 1.0,
                                                          1.0, "transformers")
    score, log_prob, coverage, error = scores_by_hand(model, input_ids, attention_mask, covered.sequences, beta,
                                                      1.0, "transformers")
    assert ((covered.sequences_scores.double() - score).abs() <= error).all()
    changed = (covered.sequences != plain.sequences).any(1)
    assert changed.any() and not changed.all()
    assert (coverage[changed] > plain_coverage[changed] + 0.1).all()
    assert (log_prob[changed] < plain_log_prob[changed]).all()
    length = plain.sequences.shape[1] - 1
    plain_score = plain_log_prob / length + beta * plain_coverage
    assert (score[changed] > plain_score[changed]).all(), "the penalised winner beats the plain one under s(Y, X)"
    assert torch.equal(covered.sequences[~changed], plain.sequences[~changed])


@pytest.mark.parametrize("preset", ["rnnsearch", "luong-local-p"])
def test_penalties_off_give_exactly_a_plain_generate(preset):
    model = penalty_model(preset)
    input_ids, attention_mask = padded_batch(LENGTHS)
    plain = beam_search(model, input_ids, attention_mask, length_penalty=0.8)
    for options in (dict(coverage_penalty=0.0), dict(length_penalty_style="transformers"),
                    dict(coverage_penalty=0, length_penalty_style="transformers"), dict(coverage_penalty=None)):
        off = beam_search(model, input_ids, attention_mask, length_penalty=0.8, **options)
        for field in ("sequences", "sequences_scores", "beam_indices"):
            assert torch.equal(off[field], plain[field]), (options, field)


# 3. GNMT's length penalty ------------------------------------------------------------------------------------


def test_gnmt_length_penalty_equals_hand_numbers():
    assert BeamPenalties(0.0, 0.6, True).length_penalty(1) == 1.0  # (5 + 1) / 6 = 1, whatever α
    assert BeamPenalties(0.0, 0.6, True).length_penalty(3) == pytest.approx(1.1884016386, abs=1e-10)  # (8/6)^0.6
    assert BeamPenalties(0.0, 1.0, True).length_penalty(7) == 2.0  # 12 / 6
    assert BeamPenalties(0.0, 0.6, False).length_penalty(3) == pytest.approx(1.9331820449, abs=1e-10)  # 3^0.6
    assert BeamPenalties(0.0, 0.0, True).length_penalty(9) == 1.0


def test_gnmt_with_alpha_0_is_no_length_normalisation():
    model = penalty_model("rnnsearch")
    input_ids, attention_mask = padded_batch(LENGTHS)
    unnormalised = beam_search(model, input_ids, attention_mask, length_penalty=0.0)
    gnmt = beam_search(model, input_ids, attention_mask, length_penalty=0.0, length_penalty_style="gnmt")
    for field in ("sequences", "sequences_scores", "beam_indices"):
        assert torch.equal(gnmt[field], unnormalised[field]), field
    lengths = torch.tensor([len(generated(row)) for row in gnmt.sequences])
    assert lengths.min() < lengths.max()
    normalised = beam_search(model, input_ids, attention_mask, length_penalty=1.0, length_penalty_style="gnmt")
    assert not torch.equal(normalised.sequences_scores, gnmt.sequences_scores)


def test_early_stopping_bound_of_running_beams_by_hand():
    """cp ≤ 0: a running beam can reach at best log P / lp, at the longest length with early_stopping="never" and
    α > 0 (lp grows with |Y|), else at the current length, as transformers assumes for its own penalty."""
    running = torch.tensor([[-2.0, -3.0]])
    gnmt = BeamPenalties(0.5, 1.0, True)
    never = gnmt.best_running_scores(running, cur_len=4, max_length=11, prompt_length=1, early_stopping="never")
    assert torch.equal(never, running / ((5 + 10) / 6))
    current = gnmt.best_running_scores(running, cur_len=4, max_length=11, prompt_length=1, early_stopping=False)
    assert torch.equal(current, running / ((5 + 3) / 6))
    shorter = BeamPenalties(0.5, -1.0, True).best_running_scores(running, 4, 11, 1, "never")
    assert torch.equal(shorter, running / ((5 + 3) / 6) ** -1.0)
    assert torch.equal(BeamPenalties(0.5, 2.0, False).best_running_scores(running, 4, 11, 1, "never"), running / 100)


@pytest.mark.parametrize("style", ["transformers", "gnmt"])
def test_early_stopping_never_loses_the_best_penalised_hypothesis(style, monkeypatch):
    """With early_stopping="never" and α > 0 the bound above is exact (log-probs ≤ 0, cp ≤ 0): stopping when no
    running beam can beat the finished ones returns what running to max_new_tokens returns."""
    model = penalty_model("luong-general")
    input_ids, attention_mask = padded_batch(LENGTHS)
    options = dict(coverage_penalty=0.2, length_penalty=0.3, length_penalty_style=style, early_stopping="never",
                   max_new_tokens=20)
    stopped = beam_search(model, input_ids, attention_mask, **options)
    monkeypatch.setattr(search, "early_stop_unsatisfied", lambda open_sources, *args: open_sources)
    exhaustive = beam_search(model, input_ids, attention_mask, **options)
    assert len(stopped.scores) < len(exhaustive.scores) == 20, "the heuristic stopped the search early"
    for field in ("sequences", "sequences_scores", "beam_indices"):
        assert torch.equal(stopped[field], exhaustive[field]), field


# 4. arguments: checked, from the generation config, overridden by generate()'s ---------------------------


MUST_BE_NUMBER = "`coverage_penalty` must be a finite number ≥ 0 .*got "
BEAM_ONLY = ": for beam search only (num_beams > 1, do_sample=False), and this call runs "
GREEDY = dict(num_beams=1, num_return_sequences=1)


@pytest.mark.parametrize("options, message", [
    (dict(coverage_penalty=-0.1), MUST_BE_NUMBER + r"-0\.1"),
    (dict(coverage_penalty="0.2"), MUST_BE_NUMBER + r"'0\.2'"),
    (dict(coverage_penalty=True), MUST_BE_NUMBER + "True"),
    (dict(coverage_penalty=float("nan")), MUST_BE_NUMBER + "nan"),
    (dict(length_penalty_style="google"),
     re.escape("`length_penalty_style` must be one of ('transformers', 'gnmt'), got 'google'")),
    (dict(coverage_penalty=0.2, **GREEDY),
     re.escape("`coverage_penalty=0.2`" + BEAM_ONLY + "greedy_search (num_beams=1, do_sample=False)")),
    (dict(length_penalty_style="gnmt", **GREEDY), re.escape("`length_penalty_style='gnmt'`" + BEAM_ONLY)),
    (dict(coverage_penalty=0.2, do_sample=True),
     re.escape("`coverage_penalty=0.2`" + BEAM_ONLY + "beam_sample (num_beams=4, do_sample=True)")),
    (dict(coverage_penalty=0.2, use_cache=False), r"`coverage_penalty=0.2` .*needs use_cache=True"),
    (dict(coverage_penalty=0.2, synced_gpus=True),
     r"`coverage_penalty=0.2`: scored by hf_bahdanau's beam search loop, .*synced_gpus"),
])
def test_bad_values_are_refused_naming_the_argument(options, message):
    model = penalty_model("rnnsearch")
    input_ids, attention_mask = padded_batch(LENGTHS)
    with pytest.raises(ValueError, match=message):
        beam_search(model, input_ids, attention_mask, **options)


def test_the_generation_config_carries_the_penalties_and_a_keyword_overrides_them(tmp_path):
    model = penalty_model("rnnsearch")
    input_ids, attention_mask = padded_batch(LENGTHS)
    penalties = dict(coverage_penalty=0.5, length_penalty=0.6, length_penalty_style="gnmt")
    by_keyword = beam_search(model, input_ids, attention_mask, **penalties)
    plain = beam_search(model, input_ids, attention_mask, length_penalty=0.6)
    assert not torch.equal(by_keyword.sequences_scores, plain.sequences_scores)
    tokens = {name: getattr(model.generation_config, name)
              for name in ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id")}

    model.generation_config.update(num_beams=NUM_BEAMS, **penalties, allow_custom_entries=True)
    from_model_config = beam_search(model, input_ids, attention_mask)
    given = beam_search(model, input_ids, attention_mask, generation_config=GenerationConfig(**tokens, **penalties))
    overridden = beam_search(model, input_ids, attention_mask, coverage_penalty=0.0,
                             length_penalty_style="transformers")
    model.generation_config.coverage_penalty = -1.0
    with pytest.raises(ValueError, match="`coverage_penalty` must be a finite number ≥ 0 .*got -1.0"):
        beam_search(model, input_ids, attention_mask)

    # a model folder's generation_config.json, whether the generation config was derived from the model config
    # (transformers reads custom entries back only from files not marked `_from_model_config`) or given
    model.generation_config.coverage_penalty = penalties["coverage_penalty"]
    loaded_files = []
    for folder, generation_config in ((tmp_path / "derived", model.generation_config),
                                      (tmp_path / "given", GenerationConfig(num_beams=NUM_BEAMS, **tokens, **penalties))):
        model.generation_config = generation_config
        model.save_pretrained(folder)
        loaded = BahdanauForConditionalGeneration.from_pretrained(folder).eval()
        assert (loaded.generation_config.coverage_penalty, loaded.generation_config.length_penalty_style) == (
            penalties["coverage_penalty"], penalties["length_penalty_style"]), folder.name
        loaded_files.append(beam_search(loaded, input_ids, attention_mask))

    for field in ("sequences", "sequences_scores", "beam_indices"):
        assert torch.equal(from_model_config[field], by_keyword[field]), field
        assert torch.equal(given[field], by_keyword[field]), field
        assert all(torch.equal(from_file[field], by_keyword[field]) for from_file in loaded_files), field
        assert torch.equal(overridden[field], plain[field]), field



def test_the_models_own_penalties_stay_out_of_greedy_and_sampling_calls():
    """Tuned penalties in the model's generation config are beam-search settings: ``generate(num_beams=1)`` (the
    CLI's --num_beams 1, a benchmark's greedy row) decodes as without them; asked for in the call, they are refused."""
    model = penalty_model("rnnsearch")
    input_ids, attention_mask = padded_batch(LENGTHS)
    plain_greedy = beam_search(model, input_ids, attention_mask, **GREEDY)
    torch.manual_seed(0)
    plain_sample = beam_search(model, input_ids, attention_mask, do_sample=True, **GREEDY)
    model.generation_config.update(num_beams=NUM_BEAMS, coverage_penalty=0.5, length_penalty_style="gnmt",
                                   allow_custom_entries=True)
    greedy = beam_search(model, input_ids, attention_mask, **GREEDY)
    torch.manual_seed(0)
    sample = beam_search(model, input_ids, attention_mask, do_sample=True, **GREEDY)
    assert torch.equal(greedy.sequences, plain_greedy.sequences)
    assert torch.equal(sample.sequences, plain_sample.sequences)
    assert model.generation_config.coverage_penalty == 0.5  # the model keeps them for its beam searches
    with pytest.raises(ValueError, match=r"`coverage_penalty=0\.5`.*" + re.escape(BEAM_ONLY)):
        beam_search(model, input_ids, attention_mask, coverage_penalty=0.5, **GREEDY)

# 5. models without attention -------------------------------------------------------------------------------


def test_models_without_attention_take_gnmt_length_penalty_and_refuse_coverage():
    model = penalty_model("rnnencdec")
    input_ids, attention_mask = padded_batch(LENGTHS)
    out = beam_search(model, input_ids, attention_mask, length_penalty=0.6, length_penalty_style="gnmt")
    assert_scores_by_hand(model, input_ids, attention_mask, out, 0.0, 0.6, "gnmt")
    with pytest.raises(ValueError, match=r"`coverage_penalty=0.2` .*no attention \(attention_type='none'\)"):
        beam_search(model, input_ids, attention_mask, coverage_penalty=0.2)


# 6. the length penalty itself -----------------------------------------------------------------------------


@pytest.mark.parametrize("style", [None, "gnmt"])
@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), "1"])
def test_a_length_penalty_that_is_not_a_finite_number_is_refused(style, alpha):
    """NaN or ∞ would score every finished hypothesis NaN (or ±∞) and return them in arbitrary order."""
    model = penalty_model("rnnsearch")
    input_ids, attention_mask = padded_batch(LENGTHS)
    options = {} if style is None else {"length_penalty_style": style}
    with pytest.raises(ValueError, match=r"`length_penalty` must be a finite number .* got (nan|inf|'1')"):
        beam_search(model, input_ids, attention_mask, length_penalty=alpha, **options)
