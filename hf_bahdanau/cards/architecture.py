"""The architecture of a saved model, in words: the lines its family's descriptor writes
(``CardWords.architecture``), for any saved folder's config dict whichever head it holds.

The words themselves live beside each family (``hf_bahdanau/families/``); ``paper_of``, ``matching_preset`` and
``Architecture`` are importable from here as before.
"""

from typing import Any

from hf_bahdanau.families import family_for_task, family_of
from hf_bahdanau.families.recurrent import PAPERS, matching_preset, paper_of
from hf_bahdanau.families.words import Architecture

__all__ = ["PAPERS", "Architecture", "describe", "matching_preset", "paper_of"]


def describe(config: dict[str, Any], task: str | None = None, trainer_state: dict[str, Any] | None = None
             ) -> Architecture:
    """Bullet lines naming every architectural choice of a config dict, as the card of ``task``'s family (default:
    the config's family, ``families.family_of``) writes them; ``trainer_state``: trainer_state.json, for what training
    changed (a memory network's linear start)."""
    family = family_for_task(task) if task is not None else family_of(config)
    return family.card.architecture(config, trainer_state)
