"""The ``PreTrainedModel`` base of every family: a model checks its config again when it is built from it."""

from transformers import PreTrainedModel

__all__ = ["ValidatedPreTrainedModel"]


class ValidatedPreTrainedModel(PreTrainedModel):
    """``PreTrainedModel`` that calls ``config.validate_architecture()`` before building (a field may have been
    changed since the config was built, e.g. ``config.pooling_type = …``): a bad combination is refused by name
    instead of building a model that does not match its config."""

    def __init__(self, config, *inputs, **kwargs):
        config.validate_architecture()
        super().__init__(config, *inputs, **kwargs)
