"""Import paths from before the package was split into subpackages (``hf_bahdanau.decoding``, ``hf_bahdanau.copying``,
``hf_bahdanau.onnx_decoding``, …) or before the collators came together in ``modeling/collators.py``
(``hf_bahdanau.image_training``, ``hf_bahdanau.vqa_training``), or before a module got a name that tells it from its
neighbours (``modeling/decoding.py``, now ``modeling/translation.py``): they still import, as the module at its new
path, with a ``FutureWarning`` naming that path."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED", "install"]

MODELING = ("alignments", "attention", "attention_mode", "beam_hypotheses", "block_select", "bridge", "collators",
            "configuration_bahdanau", "copying", "coverage", "decoder", "encoder", "input_checks",
            "loop_linear", "loss", "modeling_bahdanau", "modeling_encoder_only", "modeling_pointer",
            "modeling_sequence_classification", "modeling_token_classification", "padding", "pipeline_bahdanau",
            "pointer_generator", "pointing", "pooling", "readout", "recurrent", "registry", "remote_code", "scope",
            "search", "source_warnings", "state", "token_attention", "transformers_private")
MOVED = {
    **{f"hf_bahdanau.{name}": f"hf_bahdanau.modeling.{name}" for name in MODELING},
    "hf_bahdanau.decoding": "hf_bahdanau.modeling.translation",
    "hf_bahdanau.modeling.decoding": "hf_bahdanau.modeling.translation",  # beside decoder.py and search.py
    "hf_bahdanau.onnx_decoding": "hf_bahdanau.onnx.runtime",
    "hf_bahdanau.onnx_search": "hf_bahdanau.onnx.beam_search",
    "hf_bahdanau.onnx_greedy": "hf_bahdanau.onnx.graphs",
    "hf_bahdanau.onnx_pipeline": "hf_bahdanau.onnx.pipeline",
    "hf_bahdanau.explore": "hf_bahdanau.explorer.page",
    "hf_bahdanau.plotting": "hf_bahdanau.pictures",
    "hf_bahdanau.image_training": "hf_bahdanau.modeling.collators",
    "hf_bahdanau.vqa_training": "hf_bahdanau.modeling.collators",
}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of ``MOVED`` and loads it as the module at the new one (the same module object)."""

    def find_spec(self, fullname: str, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec) -> ModuleType:
        warnings.warn(f"`{spec.name}` moved to `{MOVED[spec.name]}`; import it from there.", FutureWarning,
                      stacklevel=2)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        pass  # the module at the new path is already executed


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
