"""hf_bahdanau.pictures.alignment: alignments read out of generate() (greedy and beam) and the labelled heat map."""

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers.generation.utils import GenerateBeamEncoderDecoderOutput, GenerateEncoderDecoderOutput

from conftest import EOS, assert_float64_close
from hf_bahdanau.modeling.alignments import alignments_from_generate
from hf_bahdanau.pictures import plot_alignment
from test_generation import (
    SOMETIMES, beam_generate, decisive_model, generated, source_batch, teacher_forced_alignments,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def step_weights(rows: int, steps: int, source_length: int) -> tuple[tuple[torch.Tensor], ...]:
    """cross_attentions as generate returns them, one (rows, 1, 1, S) tensor per step, with
    weights[row, t, s] = 100 * row + 10 * t + s so every entry says where it came from."""
    return tuple((torch.tensor([[[[100.0 * row + 10 * t + s for s in range(source_length)]]] for row in range(rows)]),)
                 for t in range(steps))


def test_beam_alignment_follows_beam_indices_by_hand():
    # 2 sources x 2 beams, 3 steps; returned row 1 (source 0) sat in beam 1, then 0, then ended (-1).
    beam_indices = torch.tensor([[0, 0, 1], [1, 0, -1], [2, 3, 3], [3, 3, -1]])
    out = GenerateBeamEncoderDecoderOutput(
        sequences=torch.tensor([[1, 5, 6, 2], [1, 7, 2, 2], [1, 5, 5, 2], [1, 6, 2, 2]]),
        beam_indices=beam_indices, cross_attentions=step_weights(rows=4, steps=4, source_length=3),
    )
    assert alignments_from_generate(out, index=1).tolist() == [[100, 101, 102], [10, 11, 12]]
    assert alignments_from_generate(out, index=2).tolist() == [[200, 201, 202], [310, 311, 312], [320, 321, 322]]
    assert alignments_from_generate(out, index=-1).tolist() == [[300, 301, 302], [310, 311, 312]]


def test_greedy_alignment_stops_after_the_first_eos_by_hand():
    out = GenerateEncoderDecoderOutput(
        sequences=torch.tensor([[1, 5, EOS, 0, 0], [1, 5, 6, 7, 8]]),
        cross_attentions=step_weights(rows=2, steps=4, source_length=2),
    )
    assert alignments_from_generate(out, index=0, eos_token_id=EOS).tolist() == [[0, 1], [10, 11]]
    assert alignments_from_generate(out, index=0).shape == (4, 2)  # no EOS given: every step
    assert alignments_from_generate(out, index=1, eos_token_id=EOS).tolist() == [[100, 101], [110, 111],
                                                                                   [120, 121], [130, 131]]


def test_alignments_of_a_real_model_equal_the_teacher_forced_ones():
    model = decisive_model("rnnsearch", SOMETIMES).double()  # float64: cached steps and teacher forcing round alike
    input_ids, attention_mask = source_batch()
    with torch.no_grad():
        greedy = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=6,
                                output_attentions=True, return_dict_in_generate=True)
    beam = beam_generate(model, input_ids, attention_mask, output_attentions=True)
    lengths = set()
    for out, sources in ((greedy, input_ids), (beam, input_ids.repeat_interleave(4, 0))):
        masks = attention_mask.repeat_interleave(len(sources) // len(input_ids), 0)
        expected = teacher_forced_alignments(model, sources, masks, out.sequences)
        for row, sequence in enumerate(out.sequences):
            length = len(generated(sequence))
            lengths.add(length)
            weights = alignments_from_generate(out, index=row, eos_token_id=EOS)
            assert weights.shape == (length, input_ids.shape[1])
            assert_float64_close(weights, expected[row, :length], scale=1.0)  # weights: at most 1
    assert len(lengths) > 1, "some hypotheses should end early"


def test_missing_alignments_and_bad_index_raise():
    no_attention = GenerateEncoderDecoderOutput(sequences=torch.ones(1, 3, dtype=torch.long), cross_attentions=None)
    with pytest.raises(ValueError, match="output_attentions=True"):
        alignments_from_generate(no_attention)
    out = GenerateEncoderDecoderOutput(sequences=torch.ones(2, 3, dtype=torch.long),
                                       cross_attentions=step_weights(2, 2, 2))
    with pytest.raises(ValueError, match="`index` must be in \\[0, 2\\)"):
        alignments_from_generate(out, index=2)


def test_heat_map_axes_carry_the_tokens_and_the_image_is_the_weights(tmp_path):
    weights = torch.tensor([[0.7, 0.2, 0.1, 0.0], [0.1, 0.1, 0.3, 0.5], [0.0, 0.0, 0.0, 1.0]])
    source, target = ["3", " ", "mars", "</s>"], ["03", "-", "</s>"]
    figure = plot_alignment(weights, source, target, path=tmp_path / "a.png", title="le 3 mars")
    (ax,) = figure.axes
    assert [label.get_text() for label in ax.get_xticklabels()] == ["3", "␣", "mars", "</s>"]
    assert [label.get_text() for label in ax.get_yticklabels()] == target
    assert list(ax.get_xticks()) == [0, 1, 2, 3] and list(ax.get_yticks()) == [0, 1, 2]
    assert ax.xaxis.get_ticks_position() == "top"
    (image,) = ax.images
    np.testing.assert_array_equal(np.asarray(image.get_array()), weights.numpy())
    assert image.get_clim() == (0.0, 1.0)
    assert ax.get_title() == "le 3 mars"
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_heat_map_draws_on_a_given_axes_and_checks_shapes():
    from matplotlib.figure import Figure

    figure = Figure()
    left, right = figure.subplots(1, 2)
    assert plot_alignment(np.eye(2), ["a", "b"], ["x", "y"], ax=right) is figure
    assert len(right.images) == 1 and not left.images
    with pytest.raises(ValueError, match=r"`weights` must have shape \[len\(target_tokens\), len\(source_tokens\)\] "
                                         r"= \[2, 3\], got \[2, 2\]"):
        plot_alignment(np.eye(2), ["a", "b", "c"], ["x", "y"])


def test_each_kind_of_picture_has_a_module_that_reads_in_one_sitting():
    """hf_bahdanau.pictures splits the pictures by kind (plotting.py had 962 lines): no module passes 400 lines."""
    import hf_bahdanau.pictures

    folder = Path(hf_bahdanau.pictures.__file__).parent
    sizes = {path.stem: len(path.read_text().splitlines()) for path in folder.glob("*.py")}
    assert sorted(sizes) == ["__init__", "alignment", "classifier", "common", "encoder", "image", "memory", "vqa"]
    assert max(sizes.values()) <= 400, sizes
