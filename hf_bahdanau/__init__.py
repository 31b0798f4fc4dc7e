"""hf_bahdanau: the classic RNN encoder–attention–decoder models as Hugging Face transformers models.

Importing the package registers every model family its descriptor in ``hf_bahdanau/families/`` declares (seq2seq,
tagger, classifier, pointer network, memory network, image to text, VQA, passage question answering): its config
with ``AutoConfig``, each head with its Auto class and an image reader's ``BahdanauImageProcessor`` with
``AutoImageProcessor``, every class marked for ``register_for_auto_class`` so ``save_pretrained`` writes the code next
to the weights (loadable with ``trust_remote_code=True`` where hf_bahdanau is not installed).

``BahdanauTranslationPipeline`` is imported on first use: it needs ``transformers.pipelines``, which takes longer to
import than the rest of the package. transformers 5 refuses the task name "translation" (it removed its own), so the
pipeline is reached through ``pipeline(model=..., trust_remote_code=True)`` or ``pipeline_class=``, never the task
registry.
"""

from .modeling import attention
from .modeling.collators import DataCollatorWithRightPaddedLabels
from .modeling.configuration_coattention import BahdanauCoAttentionConfig, BahdanauVisualQuestionAnsweringConfig
from .modeling.configuration_bahdanau import PRESETS, BahdanauConfig, BahdanauDecoderConfig, BahdanauPointerConfig
from .modeling.configuration_encoder_only import BahdanauEncoderConfig
from .modeling.configuration_image_encoder import BahdanauImageEncoderConfig
from .modeling.configuration_image_to_text import BahdanauImageDecoderConfig, BahdanauImageToTextConfig
from .modeling.configuration_memory import BahdanauMemoryNetworkConfig
from .modeling.configuration_text_coattention import BahdanauTextCoAttentionConfig
from .modeling.image_processing_bahdanau import BahdanauImageProcessor
from .modeling.modeling_bahdanau import (
    BahdanauForConditionalGeneration, BahdanauModel, BahdanauPreTrainedModel, BahdanauSeq2SeqLMOutput,
    BahdanauSeq2SeqModelOutput,
)
from .modeling.modeling_coattention import (
    BahdanauForVisualQuestionAnswering, BahdanauVisualQuestionAnsweringModel, BahdanauVisualQuestionAnsweringOutput,
)
from .modeling.modeling_encoder_only import BahdanauEncoderModel
from .modeling.modeling_image_to_text import BahdanauForImageToText, BahdanauImageToTextModel
from .modeling.modeling_memory_network import (
    BahdanauMemoryNetworkForSequenceClassification, BahdanauMemoryNetworkModel, BahdanauMemoryNetworkOutput,
)
from .modeling.modeling_pointer import BahdanauForPointerNetwork, BahdanauPointerOutput
from .modeling.modeling_text_coattention import (
    BahdanauForTextPairClassification, BahdanauTextCoAttentionModel, BahdanauTextPairClassifierOutput,
)
from .modeling.modeling_sequence_classification import (
    BahdanauForSequenceClassification, BahdanauSequenceClassifierOutput,
)
from .modeling.modeling_token_classification import BahdanauForTokenClassification, BahdanauTokenClassifierOutput
from .ensemble import BahdanauEnsembleForConditionalGeneration
from .moved_modules import install as install_moved_modules
from .modeling.old_names import old_names

__version__ = "0.1.0"

install_moved_modules()  # the import paths from before the subpackages keep working (moved_modules.py)

from . import families  # noqa: E402  (registers every family's config, heads and image processor)


_old_names = old_names(__name__, {  # the names before the Bahdanau prefix
    "EnsembleForConditionalGeneration": BahdanauEnsembleForConditionalGeneration,
    "MemoryNetworkConfig": BahdanauMemoryNetworkConfig,
    "MemoryNetworkForSequenceClassification": BahdanauMemoryNetworkForSequenceClassification,
    "MemoryNetworkModel": BahdanauMemoryNetworkModel,
    "MemoryNetworkOutput": BahdanauMemoryNetworkOutput,
    "TextCoAttentionConfig": BahdanauTextCoAttentionConfig,
    "TextCoAttentionModel": BahdanauTextCoAttentionModel,
    "TextPairClassifierOutput": BahdanauTextPairClassifierOutput,
    "VisualQuestionAnsweringConfig": BahdanauVisualQuestionAnsweringConfig,
    "VisualQuestionAnsweringModel": BahdanauVisualQuestionAnsweringModel,
    "VisualQuestionAnsweringOutput": BahdanauVisualQuestionAnsweringOutput,
})


def __getattr__(name: str):
    if name == "BahdanauTranslationPipeline":
        from .modeling.pipeline_bahdanau import BahdanauTranslationPipeline

        return BahdanauTranslationPipeline
    if name == "onnx_translation_pipeline":  # also needs onnxruntime (the onnx extra)
        from .onnx.pipeline import onnx_translation_pipeline

        return onnx_translation_pipeline
    return _old_names(name)


__all__ = [
    "PRESETS",
    "BahdanauCoAttentionConfig",
    "BahdanauConfig",
    "BahdanauDecoderConfig",
    "BahdanauEncoderConfig",
    "BahdanauEncoderModel",
    "BahdanauEnsembleForConditionalGeneration",
    "BahdanauForConditionalGeneration",
    "BahdanauForImageToText",
    "BahdanauForPointerNetwork",
    "BahdanauForSequenceClassification",
    "BahdanauForTextPairClassification",
    "BahdanauForTokenClassification",
    "BahdanauForVisualQuestionAnswering",
    "BahdanauImageDecoderConfig",
    "BahdanauImageEncoderConfig",
    "BahdanauImageProcessor",
    "BahdanauImageToTextConfig",
    "BahdanauImageToTextModel",
    "BahdanauMemoryNetworkConfig",
    "BahdanauMemoryNetworkForSequenceClassification",
    "BahdanauMemoryNetworkModel",
    "BahdanauMemoryNetworkOutput",
    "BahdanauModel",
    "BahdanauPointerConfig",
    "BahdanauPointerOutput",
    "BahdanauPreTrainedModel",
    "BahdanauSeq2SeqLMOutput",
    "BahdanauSeq2SeqModelOutput",
    "BahdanauSequenceClassifierOutput",
    "BahdanauTextCoAttentionConfig",
    "BahdanauTextCoAttentionModel",
    "BahdanauTextPairClassifierOutput",
    "BahdanauTokenClassifierOutput",
    "BahdanauTranslationPipeline",
    "BahdanauVisualQuestionAnsweringConfig",
    "BahdanauVisualQuestionAnsweringModel",
    "BahdanauVisualQuestionAnsweringOutput",
    "DataCollatorWithRightPaddedLabels",
    "onnx_translation_pipeline",
    "attention",
]
