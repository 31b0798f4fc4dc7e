"""The model-card writer moved into the package: ``hf_bahdanau.cards`` (``python -m hf_bahdanau.cards MODEL_DIR``)."""

raise ImportError("`model_cards` moved to `hf_bahdanau.cards`: `from hf_bahdanau.cards import write_model_card`, "
                  "or `python -m hf_bahdanau.cards MODEL_DIR` on the command line.")
