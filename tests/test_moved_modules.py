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
