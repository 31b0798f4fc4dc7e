"""ONNX export and the ONNX Runtime decoder: ``export`` (``hf-bahdanau-export``, ``cli.export_main``; needs the ``onnx`` extra) traces a
saved seq2seq model into the graphs ``graphs`` builds; ``runtime`` and ``beam_search`` decode them with numpy and
onnxruntime alone (an exported folder carries both, and runs where hf_bahdanau is not installed); ``pipeline`` puts
them behind the translation pipeline. A client of the model code, never imported by it.
"""

EXPORT_NAMES = ("OPSET", "export_onnx", "quantize_onnx", "simplify_onnx", "unexportable_options")


def __getattr__(name: str):
    """``hf_bahdanau.onnx`` was the export module: its names still import from here, with a ``FutureWarning``."""
    if name in EXPORT_NAMES:
        import warnings

        from . import export

        warnings.warn(f"`hf_bahdanau.onnx.{name}` moved to `hf_bahdanau.onnx.export.{name}`; import it from there.",
                      FutureWarning, stacklevel=2)
        return getattr(export, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
