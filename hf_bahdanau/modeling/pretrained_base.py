"""The ``PreTrainedModel`` base of every family: a model checks its config again when it is built from it, reads
the defaults of its output flags from it, and each module of ours initialises its own weights."""

from torch import nn
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

    def _init_weights(self, module: nn.Module) -> None:
        """A module of ours with an ``init_parameters()`` method initialises its own parameters and buffers (with
        ``transformers.initialization``'s functions, which leave loaded ones alone); torch's layers follow the
        family's rule (``_init_layer``). Modules are visited children first (transformers' ``initialize_weights``);
        for custom code transformers skips a module with no parameters or buffers of its own, so the hook goes on the
        module that holds them."""
        init_parameters = getattr(module, "init_parameters", None)
        if init_parameters is not None:
            init_parameters()
        else:
            self._init_layer(module)

    def _init_layer(self, module: nn.Module) -> None:
        """The family's initialisation of one of torch's layers (``nn.Embedding``, ``nn.Linear``, …)."""
        raise NotImplementedError(f"{type(self).__name__} states no initialisation of torch's layers (_init_layer).")
