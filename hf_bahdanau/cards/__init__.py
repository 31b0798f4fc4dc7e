"""Model cards for saved hf_bahdanau models (``python -m hf_bahdanau.cards MODEL_DIR``)."""

from .card import build_model_card, check_license, set_model_id, write_model_card

__all__ = ["build_model_card", "check_license", "set_model_id", "write_model_card"]
