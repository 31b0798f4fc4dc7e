"""The import paths from before the package was split into subpackages keep working: each old path is the module at
its new path, with a FutureWarning that names the new one."""

import importlib
import sys

import pytest

import hf_bahdanau
from hf_bahdanau.moved_modules import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_the_new_module_with_a_warning(old):
    new = MOVED[old]
    sys.modules.pop(old, None)
    with pytest.warns(FutureWarning, match=rf"`{old}` moved to `{new}`; import it from there"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    sys.modules.pop(old, None)


def test_the_export_functions_still_import_from_hf_bahdanau_onnx():
    from hf_bahdanau.onnx import export

    with pytest.warns(FutureWarning, match=r"`hf_bahdanau.onnx.export_onnx` moved to `hf_bahdanau.onnx.export"):
        from hf_bahdanau.onnx import export_onnx
    assert export_onnx is export.export_onnx
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        hf_bahdanau.onnx.nothing  # noqa: B018


def test_the_old_model_cards_package_names_its_new_place():
    """A checkout's top-level ``model_cards`` (no longer installed) refuses with the new path."""
    sys.modules.pop("model_cards", None)
    with pytest.raises(ImportError, match=r"`model_cards` moved to `hf_bahdanau.cards`"):
        importlib.import_module("model_cards")


PLOTTING = {  # hf_bahdanau.plotting's public names before it split into hf_bahdanau.pictures, by their new module
    "alignment": ["plot_alignment", "plot_token_attention"],
    "classifier": ["plot_classifier_attention", "plot_classifier_texts", "plot_document_attention"],
    "common": ["BLANK"],
    "encoder": ["VALUES_UP_TO", "plot_embedding_mixture", "plot_encoder_self_attention", "plot_encoder_text"],
    "image": ["OVERLAY_OPACITY", "attention_maps", "check_image", "check_image_attention", "plot_image_attention",
              "region_stride"],
    "memory": ["SUPPORTING", "check_hop_attentions", "check_supporting_facts", "plot_memory_hops"],
    "vqa": ["plot_coattention", "plot_vqa_example"],
}


def test_every_name_of_the_old_plotting_module_still_imports_from_it():
    sys.modules.pop("hf_bahdanau.plotting", None)
    with pytest.warns(FutureWarning, match=r"`hf_bahdanau.plotting` moved to `hf_bahdanau.pictures`"):
        plotting = importlib.import_module("hf_bahdanau.plotting")
    for module, names in PLOTTING.items():
        new = importlib.import_module(f"hf_bahdanau.pictures.{module}")
        assert [getattr(plotting, name) is getattr(new, name) for name in names] == [True] * len(names), module
    assert {name for names in PLOTTING.values() for name in names} <= set(plotting.__all__)
    sys.modules.pop("hf_bahdanau.plotting", None)
