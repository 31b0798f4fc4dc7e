"""One registry per axis: a new score function is one class and one registry line, and from there the config accepts
it, the model runs it (forward, generate, save/load), the model card describes it; every path of every mechanism
scores through its ``_score``; docs/architecture.md's table of axes is the registries'."""

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoModelForSeq2SeqLM

from conftest import assert_float64_close, padded_batch, tiny_model
from hf_bahdanau import BahdanauConfig
from hf_bahdanau.modeling.attention import ATTENTION_SCORES, AttentionMechanism, DotAttention, build_attention
from hf_bahdanau.modeling.configuration_bahdanau import AXES, axes_table
from hf_bahdanau.cards import write_model_card

pytestmark = pytest.mark.usefixtures("one_thread")

AXES_DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


class CosineAttention(AttentionMechanism):
    """e_j = q·k_j / (‖q‖ ‖k_j‖): a score none of the built-in ones is, written as a user would."""

    description = "cosine score e_ij = q_iᵀ h_j / (‖q_i‖ ‖h_j‖)"
    same_size_required = True

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__()

    def _score(self, query, projected_keys):
        return F.normalize(query, dim=-1) @ F.normalize(projected_keys, dim=-1).transpose(-1, -2)


@pytest.fixture
def cosine():
    ATTENTION_SCORES.register("cosine")(CosineAttention)
    yield "cosine"
    del ATTENTION_SCORES["cosine"]


def test_a_new_score_is_one_class_and_one_registry_line(cosine, tmp_path):
    with pytest.raises(ValueError, match="`attention_type` must be one of .*'cosine'"):
        BahdanauConfig(attention_type="cosinus")
    model = tiny_model("luong-general", attention_type=cosine, encoder_hidden_size=16, hidden_size=16)
    input_ids, mask = padded_batch()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=torch.full((3, 2), 1),
                    output_attentions=True)
        generated = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=3, num_beams=2)
    assert isinstance(model.model.decoder.attention, CosineAttention)
    assert torch.isfinite(out.logits).all() and out.cross_attentions[0].shape == (3, 1, 2, 7)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert torch.equal(loaded.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=3, num_beams=2),
                           generated)
    write_model_card(tmp_path, task="translation", dataset_name="test")
    assert CosineAttention.description in (tmp_path / "README.md").read_text()


def test_a_class_without_description_or_a_taken_name_is_refused():
    class Nameless(AttentionMechanism):
        pass

    with pytest.raises(TypeError, match="needs a `description`"):
        ATTENTION_SCORES.register("nameless")(Nameless)
    with pytest.raises(ValueError, match="attention_type='dot' is already registered"):
        ATTENTION_SCORES.register("dot")(CosineAttention)
    assert "nameless" not in ATTENTION_SCORES and ATTENTION_SCORES["dot"] is DotAttention


# every path reads _score ------------------------------------------------------------------------------------------


def mechanism_and_memory(name: str):
    config = tiny_model().config
    key_size = 8 if ATTENTION_SCORES[name].same_size_required else 6
    torch.manual_seed(0)
    mechanism = build_attention(name, config, 8, key_size).double()
    keys = torch.randn(3, 5, key_size, dtype=torch.float64)
    mask = torch.arange(5) < torch.tensor([5, 3, 1])[:, None]
    queries = torch.randn(3, 4, 8, dtype=torch.float64)
    return mechanism, keys, mask, queries


@pytest.mark.parametrize("name", sorted(ATTENTION_SCORES))
def test_the_step_loop_gives_the_batched_weights(name):
    """``stepwise`` (the decoders' loops) against ``forward`` on all steps at once, with autograd on, as in training."""
    mechanism, keys, mask, queries = mechanism_and_memory(name)
    projected = mechanism.project_keys(keys)
    context, weights = mechanism(queries, keys, keys, mask, projected)
    attend = mechanism.stepwise(keys, mask, projected)
    steps = [attend(queries[:, step]) for step in range(queries.shape[1])]
    assert_float64_close(torch.stack([w for _, w in steps], dim=1), weights)
    assert_float64_close(torch.stack([c for c, _ in steps], dim=1), context)


def test_a_subclass_that_overrides_only_score_gets_its_score_in_the_step_loop():
    class ShiftedDot(DotAttention):
        description = "dot score plus the position: e_ij = q_iᵀ h_j + j"

        def _score(self, query, projected_keys):
            return super()._score(query, projected_keys) + torch.arange(projected_keys.shape[1])

    mechanism = ShiftedDot(8, 8).double()
    _, keys, mask, queries = mechanism_and_memory("dot")
    _, weights = mechanism(queries, keys, keys, mask)
    attend = mechanism.stepwise(keys, mask, mechanism.project_keys(keys))
    assert_float64_close(torch.stack([attend(queries[:, step])[1] for step in range(4)], dim=1), weights)
    assert not torch.allclose(weights, DotAttention(8, 8).double()(queries, keys, keys, mask)[1])  # it is another score


# descriptions and the table of axes ------------------------------------------------------------------------------


@pytest.mark.parametrize("registry", AXES, ids=lambda registry: registry.field)
def test_every_registered_value_is_accepted_and_described(registry):
    for value in registry.allowed:
        assert registry.describe(value).strip()
    with pytest.raises(ValueError, match=rf"`{registry.field}` must be one of \[.*\], got 'unknown'"):
        registry.check("unknown")


def test_the_documented_table_of_axes_is_the_registries():
    """Regenerate with: python -c "from hf_bahdanau.modeling.configuration_bahdanau import axes_table; print(axes_table())"."""
    assert axes_table() in AXES_DOC.read_text()
