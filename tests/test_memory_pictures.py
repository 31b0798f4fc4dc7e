"""Pictures and pages of a memory network's hops: ``plot_memory_hops``' heat map holds the weights (sentences as rows,
oldest first; hops as columns), labels the sentences, marks the supporting facts and titles the question and answers;
bad input is refused by name."""

import numpy as np
import pytest
import torch

from hf_bahdanau.plotting import plot_memory_hops

STORY = ["Mary moved to the bathroom.", "John went to the hallway.", "Mary travelled to the office.",
         "Daniel journeyed to the garden."]
HOPS = [[0.10, 0.05, 0.80, 0.05],  # p^k [K = 3, n = 4]: every row and every column different
        [0.25, 0.50, 0.15, 0.10],
        [0.00, 0.00, 0.30, 0.70]]


def test_the_heat_map_is_the_weights_with_a_row_per_sentence_and_a_column_per_hop(tmp_path):
    figure = plot_memory_hops(STORY, "Where is Mary?", torch.tensor(HOPS), answer="office", expected="office",
                              supporting_facts=[2], path=tmp_path / "hops.png")
    ax = figure.axes[0]
    (image,) = ax.images
    np.testing.assert_array_equal(np.asarray(image.get_array()), np.array(HOPS, np.float32).T)  # [n, K]
    assert image.get_clim() == (0.0, 1.0)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["hop 1", "hop 2", "hop 3"]
    labels = ax.get_yticklabels()
    assert [label.get_text() for label in labels] == [STORY[0], STORY[1], f"* {STORY[2]}", STORY[3]]
    assert [label.get_fontweight() for label in labels] == ["normal", "normal", "bold", "normal"]
    assert list(ax.get_yticks()) == [0, 1, 2, 3] and ax.get_ylim()[0] > ax.get_ylim()[1]  # row 0 (oldest) on top
    # each cell's text is its weight, at (hop, sentence)
    cells = {(text.get_position(), text.get_text()) for text in ax.texts}
    assert cells == {((hop, sentence), f"{HOPS[hop][sentence]:.2f}") for hop in range(3) for sentence in range(4)}
    assert ax.get_title() == "Q: Where is Mary?\nanswer: office · expected: office ✓\n(* = supporting fact)"
    assert (tmp_path / "hops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_titles_say_what_was_given_and_a_wrong_answer():
    wrong = plot_memory_hops(STORY, "Where is John?", HOPS, answer="office", expected="hallway")
    assert wrong.axes[0].get_title() == "Q: Where is John?\nanswer: office · expected: hallway ✗"
    assert plot_memory_hops(STORY, "Where is John?", np.array(HOPS)).axes[0].get_title() == "Q: Where is John?"
    assert plot_memory_hops(STORY, "?", HOPS, expected="x").axes[0].get_title() == "Q: ?\nexpected: x"


def test_a_long_story_grows_the_figure():
    story = [f"Sentence number {index} of a long story." for index in range(50)]
    weights = torch.full((2, 50), 1 / 50)
    short, long = plot_memory_hops(STORY, "?", HOPS), plot_memory_hops(story, "?", weights)
    assert long.get_figheight() >= short.get_figheight() + 0.25 * 46
    assert len(long.axes[0].get_yticklabels()) == 50


@pytest.mark.parametrize("change, message", [
    (dict(memory="Mary moved."), "`memory` must be a non-empty list of sentences"),
    (dict(memory=[]), "`memory` must be a non-empty list of sentences"),
    (dict(hop_attentions=[[0.5, 0.5]]), r"`hop_attentions` must be \[hops, len\(memory\)\] = \[K, 4\].*got \[1, 2\]"),
    (dict(hop_attentions=HOPS[0]), r"`hop_attentions` must be \[hops, len\(memory\)\].*got \[4\]"),
    (dict(hop_attentions=[[0.1, 0.2], [0.3]]), "`hop_attentions` must be \\[hops, sentences\\] numbers"),
    (dict(hop_attentions=[[0.5, float("nan"), 0.25, 0.25]]), "`hop_attentions` must be weights in \\[0, 1\\].*NaN"),
    (dict(hop_attentions=[[1.5, -0.5, 0.0, 0.0]]), "`hop_attentions` must be weights in \\[0, 1\\].*from -0.5 to 1.5"),
    (dict(supporting_facts=[4]), r"`supporting_facts` must be 0-based indices into `memory`, in \[0, 4\), got \[4\]"),
    (dict(supporting_facts=[-1]), r"`supporting_facts` .* got \[-1\]"),
    (dict(supporting_facts=[True]), "`supporting_facts` must be a list of sentence indices"),
])
def test_bad_input_is_refused_by_name(change, message):
    arguments = dict(memory=STORY, question="Where is Mary?", hop_attentions=HOPS) | change
    with pytest.raises(ValueError, match=message):
        plot_memory_hops(arguments.pop("memory"), arguments.pop("question"), arguments.pop("hop_attentions"),
                         **arguments)
