"""One registry per axis: a new score function is one line in axes.py and one registered class, and from there the
config accepts it, the model runs it (forward, generate, save/load), the model card describes it; every path of every
mechanism scores through its ``_score``; docs/architecture.md's table of axes is the declarations'."""

from pathlib import Path

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoModelForSeq2SeqLM

from child_process import run_child
from conftest import assert_float64_close, padded_batch, tiny_model
from hf_bahdanau import BahdanauConfig
from hf_bahdanau.modeling.attention import ATTENTION_SCORES, AttentionMechanism, DotAttention, build_attention
from hf_bahdanau.modeling.axes import TOKEN_ATTENTIONS
from hf_bahdanau.modeling.configuration_bahdanau import AXES, axes_table
from hf_bahdanau.modeling.registry import Registry
from hf_bahdanau.cards import write_model_card

pytestmark = pytest.mark.usefixtures("one_thread")

AXES_DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


COSINE = "cosine score e_ij = q_iᵀ h_j / (‖q_i‖ ‖h_j‖)"  # its line in axes.py


class CosineAttention(AttentionMechanism):
    """e_j = q·k_j / (‖q‖ ‖k_j‖): a score none of the built-in ones is, written as a user would."""

    def __init__(self, query_size: int, key_size: int) -> None:
        super().__init__()

    def _score(self, query, projected_keys):
        return F.normalize(query, dim=-1) @ F.normalize(projected_keys, dim=-1).transpose(-1, -2)


@pytest.fixture
def cosine(monkeypatch):
    """The score declared as axes.py would (its name, its description, and that q and k must have one size) and
    registered; all undone afterwards."""
    monkeypatch.setitem(ATTENTION_SCORES.declared, "cosine", COSINE)
    monkeypatch.setitem(ATTENTION_SCORES.flags, "same_size_required",
                        ATTENTION_SCORES.flags["same_size_required"] | {"cosine"})
    ATTENTION_SCORES.register("cosine")(CosineAttention)
    yield "cosine"
    del ATTENTION_SCORES["cosine"]


def test_a_new_score_is_one_line_in_axes_py_and_one_registered_class(cosine, tmp_path):
    with pytest.raises(ValueError, match="`attention_type` must be one of .*'cosine'"):
        BahdanauConfig(attention_type="cosinus")
    model = tiny_model("luong-general", attention_type=cosine, encoder_hidden_size=16, hidden_size=16)
    input_ids, mask = padded_batch()
    with torch.no_grad():
        out = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=torch.full((3, 2), 1),
                    output_attentions=True)
        generated = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=3, num_beams=2)
    assert isinstance(model.model.decoder.attention, CosineAttention) and CosineAttention.same_size_required
    with pytest.raises(ValueError, match="`attention_type='cosine'` compares the decoder state with the annotations"):
        BahdanauConfig(attention_type=cosine, hidden_size=16, encoder_hidden_size=16)  # bidirectional: 32 ≠ 16
    assert torch.isfinite(out.logits).all() and out.cross_attentions[0].shape == (3, 1, 2, 7)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert torch.equal(loaded.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=3, num_beams=2),
                           generated)
    write_model_card(tmp_path, task="translation", dataset_name="test")
    assert COSINE in (tmp_path / "README.md").read_text()


def test_an_undeclared_or_taken_name_is_refused():
    with pytest.raises(ValueError, match=r"CosineAttention is registered as attention_type='cosine', which axes.py "
                                         r"does not declare; declared: \['additive', .*'gaussian_kernel'\]"):
        ATTENTION_SCORES.register("cosine")(CosineAttention)
    with pytest.raises(ValueError, match=r"attention_type='dot' is already registered \(DotAttention\)"):
        ATTENTION_SCORES.register("dot")(CosineAttention)
    assert "cosine" not in ATTENTION_SCORES and ATTENTION_SCORES["dot"] is DotAttention


def test_a_declared_name_without_a_class_is_allowed_and_the_registry_names_it():
    axis = Registry("bridge", {"zero": "zeros", "learned": "a learned s_0"}, flags={"trainable": ["learned"]})

    @axis.register("zero")
    class Zero:
        pass

    axis.check("learned")
    assert axis.describe("learned") == "a learned s_0" and axis.unimplemented == ["learned"]
    assert Zero.trainable is False
    with pytest.raises(KeyError, match=r"bridge='learned' is declared in axes.py but no class is registered for it "
                                       r"yet; names without a class: \['learned'\]"):
        axis["learned"]
    with pytest.raises(KeyError, match=r"bridge='lerned' has no class; the names with one are \['zero'\]"):
        axis["lerned"]


def test_axes_py_is_checked_when_it_is_read():
    with pytest.raises(ValueError, match=r"bridge: flag 'trainable' names \['lerned'\], which are not declared"):
        Registry("bridge", {"learned": "a learned s_0"}, flags={"trainable": ["lerned"]})
    with pytest.raises(ValueError, match=r"bridge: \['zero'\] cannot be both a declared name"):
        Registry("bridge", {"zero": "zeros"}, special={"zero": "zeros"})


def test_every_declared_name_has_a_class_once_the_package_is_imported(tmp_path):
    """In a fresh process (this one has imported more than the package): ``import hf_bahdanau`` registers a class for
    every name of every axis, and none for a name axes.py does not declare."""
    child = run_child("""
        import json
        import hf_bahdanau
        from hf_bahdanau.modeling.axes import AXES, TOKEN_ATTENTIONS
        print(json.dumps({axis.field: [sorted(axis.unimplemented), sorted(set(axis) - set(axis.declared))]
                          for axis in (*AXES, TOKEN_ATTENTIONS)}))
    """, tmp_path)
    assert child == {axis.field: [[], []] for axis in (*AXES, TOKEN_ATTENTIONS)}


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
