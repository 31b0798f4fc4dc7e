"""Pictures of what the models attended to, one module per kind of picture (matplotlib figures; matplotlib is optional,
imported inside the drawing functions: ``pip install matplotlib``):

- ``alignment``: a decoder's soft alignments α [T, S] as a labelled heat map (Bahdanau et al., figure 3), a tagger's
  attention over the words;
- ``classifier``: a classifier's pooling weights (any ``pooling_type``, flat or HAN), one panel per text;
- ``encoder``: the encoder's self-attention and meta-embedding mixture over one text, for any model class;
- ``memory``: a memory network's attention over its memory sentences, one column per hop;
- ``image``: an image-to-text model's attention over the image's regions, one panel per output token;
- ``vqa``: a co-attention model's weights over the question's words and the image's regions;
- ``common``: what they share (labels, sizes, rows of weights over tokens).

    plot_alignment(weights, source_tokens, target_tokens, path="alignment.png")
    plot_classifier_texts(model, tokenizer, texts, true_labels=labels, path="attention.png")
    plot_memory_hops(story, question, answered["hop_attentions"], answer=answered["answer"], path="hops.png")

Each module's docstring shows its calls. ``hf_bahdanau.plotting``, the one module these came from, still imports (as
this package, with a FutureWarning).
"""

from .alignment import plot_alignment, plot_token_attention
from .classifier import plot_classifier_attention, plot_classifier_texts, plot_document_attention
from .common import BLANK
from .encoder import VALUES_UP_TO, plot_embedding_mixture, plot_encoder_self_attention, plot_encoder_text
from .image import (
    OVERLAY_OPACITY, attention_maps, check_image, check_image_attention, cnn_stride, plot_image_attention,
    region_stride,
)
from .memory import SUPPORTING, check_hop_attentions, check_supporting_facts, plot_memory_hops
from .vqa import plot_coattention, plot_vqa_example

__all__ = ["BLANK", "OVERLAY_OPACITY", "SUPPORTING", "VALUES_UP_TO", "attention_maps", "check_hop_attentions",
           "check_image", "check_image_attention", "check_supporting_facts", "cnn_stride", "plot_alignment",
           "plot_classifier_attention", "plot_classifier_texts", "plot_coattention", "plot_document_attention",
           "plot_embedding_mixture", "plot_encoder_self_attention", "plot_encoder_text", "plot_image_attention",
           "plot_memory_hops", "plot_token_attention", "plot_vqa_example", "region_stride"]
