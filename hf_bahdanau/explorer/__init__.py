"""The alignment explorer (``hf-bahdanau-explore``): one self-contained HTML page of a model's translations and their
attention matrices (``page``), of a memory network's answers and its attention per hop (``memory_page``), or of an
image-to-text model's texts and each output token's attention over its image (``image_page``); the pages share their
style and script, ``explore.css`` and ``explore.js``."""

from .image_page import image_text_page, write_image_text_page
from .memory_page import memory_page, write_memory_page

__all__ = ["image_text_page", "memory_page", "write_image_text_page", "write_memory_page"]
