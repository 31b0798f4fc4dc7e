"""The alignment explorer (``hf-bahdanau-explore``): one self-contained HTML page of a model's translations and their
attention matrices (``alignment_page``), of a memory network's answers and its attention per hop (``memory_page``), or
of an image-to-text model's texts and each output token's attention over its image (``image_page``). The pages share
their shell (``shell``: the header's tables, paging, the right/wrong filter; ``explore.css`` and ``explore.js``); the
command (``page``) builds the page a model's family declares (``Family.explorer``, an ``Explorer``)."""

from .alignment_page import ALIGNMENT_EXPLORER, explorer_page
from .image_page import image_text_page, write_image_text_page
from .memory_page import memory_page, write_memory_page
from .shell import Explorer

__all__ = ["ALIGNMENT_EXPLORER", "Explorer", "explorer_page", "image_text_page", "memory_page",
           "write_image_text_page", "write_memory_page"]
