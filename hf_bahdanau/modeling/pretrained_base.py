"""The ``PreTrainedModel`` base of every family: a model checks its config again when it is built from it, and reads
the defaults of its output flags from it."""

from transformers import PreTrainedModel

__all__ = ["BahdanauBasePreTrainedModel"]


class BahdanauBasePreTrainedModel(PreTrainedModel):
    """``PreTrainedModel`` that calls ``config.validate_architecture()`` before building (a field may have been
    changed since the config was built, e.g. ``config.pooling_type = …``): a bad combination is refused by name
    instead of building a model that does not match its config."""

    def __init__(self, config, *inputs, **kwargs):
        config.validate_architecture()
        super().__init__(config, *inputs, **kwargs)

    def output_flags(self, output_attentions: bool | None, output_hidden_states: bool | None) -> tuple[bool, bool]:
        """(``output_attentions``, ``output_hidden_states``) of a call: the caller's, the config's where None."""
        return (self.config.output_attentions if output_attentions is None else output_attentions,
                self.config.output_hidden_states if output_hidden_states is None else output_hidden_states)
