"""The alignment explorer (``hf-bahdanau-explore``): one self-contained HTML page of a model's translations and their
attention matrices (``page``), or of a memory network's answers and its attention per hop (``memory_page``); both
pages share their style and script, ``explore.css`` and ``explore.js``."""

from .memory_page import memory_page, write_memory_page

__all__ = ["memory_page", "write_memory_page"]
