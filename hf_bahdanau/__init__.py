"""hf_bahdanau: the classic RNN encoder–attention–decoder models as Hugging Face transformers models.

Importing the package registers ``model_type="bahdanau"`` (and ``"bahdanau-pointer"``, the pointer network's, with
``AutoModel``; ``"bahdanau-memory"``, the end-to-end memory network's; ``"bahdanau-image-to-text"`` with
``AutoModelForImageTextToText`` and ``AutoImageProcessor``; ``"bahdanau-vqa"``, the co-attention visual question
answerer's, with ``AutoModelForVisualQuestionAnswering`` and ``AutoImageProcessor``;
``"bahdanau-text-coattention"``, the question–passage co-attention classifier's, with
``AutoModelForSequenceClassification``) with the Auto classes, and marks every class for
``register_for_auto_class`` so ``save_pretrained`` writes the code next to the weights (loadable with
``trust_remote_code=True`` where hf_bahdanau is not installed).

``BahdanauTranslationPipeline`` is imported on first use: it needs ``transformers.pipelines``, which takes longer to
import than the rest of the package. transformers 5 refuses the task name "translation" (it removed its own), so the
pipeline is reached through ``pipeline(model=..., trust_remote_code=True)`` or ``pipeline_class=``, never the task
registry.
"""

from transformers import (
    AutoConfig,
    AutoImageProcessor,
    AutoModel,
    AutoModelForImageTextToText,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoModelForVisualQuestionAnswering,
)

from .modeling import attention
from .modeling.collators import DataCollatorWithRightPaddedLabels
from .modeling.configuration_coattention import BahdanauVisualQuestionAnsweringConfig
from .modeling.configuration_bahdanau import PRESETS, BahdanauConfig, BahdanauPointerConfig
from .modeling.configuration_image_to_text import BahdanauImageToTextConfig
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

def _register(config_class: type, heads: tuple[tuple[type, type], ...], image_processor: bool = False) -> None:
    """A model type with the Auto classes: its config, each (Auto class, model class), and BahdanauImageProcessor as
    its AutoImageProcessor; each marked for ``register_for_auto_class`` so saved folders carry the code."""
    AutoConfig.register(config_class.model_type, config_class, exist_ok=True)
    config_class.register_for_auto_class()
    for auto_class, model_class in heads:
        auto_class.register(config_class, model_class, exist_ok=True)
        model_class.register_for_auto_class(auto_class.__name__)
    if image_processor:
        AutoImageProcessor.register(config_class, slow_image_processor_class=BahdanauImageProcessor, exist_ok=True)


_register(BahdanauConfig, ((AutoModel, BahdanauModel), (AutoModelForSeq2SeqLM, BahdanauForConditionalGeneration),
                           (AutoModelForTokenClassification, BahdanauForTokenClassification),
                           (AutoModelForSequenceClassification, BahdanauForSequenceClassification)))
_register(BahdanauPointerConfig, ((AutoModel, BahdanauForPointerNetwork),))
_register(BahdanauMemoryNetworkConfig, ((AutoModel, BahdanauMemoryNetworkModel),
                                (AutoModelForSequenceClassification, BahdanauMemoryNetworkForSequenceClassification)))
_register(BahdanauImageToTextConfig, ((AutoModel, BahdanauImageToTextModel),
                                      (AutoModelForImageTextToText, BahdanauForImageToText)), image_processor=True)
_register(BahdanauVisualQuestionAnsweringConfig, ((AutoModel, BahdanauVisualQuestionAnsweringModel),
                                          (AutoModelForVisualQuestionAnswering, BahdanauForVisualQuestionAnswering)),
          image_processor=True)
_register(BahdanauTextCoAttentionConfig, ((AutoModel, BahdanauTextCoAttentionModel),
                                  (AutoModelForSequenceClassification, BahdanauForTextPairClassification)))
BahdanauImageProcessor.register_for_auto_class()

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
    "BahdanauConfig",
    "BahdanauEncoderModel",
    "BahdanauForConditionalGeneration",
    "BahdanauForImageToText",
    "BahdanauImageProcessor",
    "BahdanauImageToTextConfig",
    "BahdanauImageToTextModel",
    "BahdanauForPointerNetwork",
    "BahdanauForSequenceClassification",
    "BahdanauForTextPairClassification",
    "BahdanauForTokenClassification",
    "BahdanauForVisualQuestionAnswering",
    "BahdanauModel",
    "BahdanauPointerConfig",
    "BahdanauPointerOutput",
    "BahdanauPreTrainedModel",
    "BahdanauSeq2SeqLMOutput",
    "BahdanauSeq2SeqModelOutput",
    "BahdanauSequenceClassifierOutput",
    "BahdanauTokenClassifierOutput",
    "BahdanauMemoryNetworkConfig",
    "BahdanauMemoryNetworkForSequenceClassification",
    "BahdanauMemoryNetworkModel",
    "BahdanauMemoryNetworkOutput",
    "BahdanauTextCoAttentionConfig",
    "BahdanauTextCoAttentionModel",
    "BahdanauTextPairClassifierOutput",
    "BahdanauVisualQuestionAnsweringConfig",
    "BahdanauVisualQuestionAnsweringModel",
    "BahdanauVisualQuestionAnsweringOutput",
    "BahdanauTranslationPipeline",
    "DataCollatorWithRightPaddedLabels",
    "BahdanauEnsembleForConditionalGeneration",
    "onnx_translation_pipeline",
    "attention",
]
