"""The soft alignments α_ij of ``generate()``: which source tokens each generated token attended to.

    out = model.generate(**batch, output_attentions=True, return_dict_in_generate=True)   # greedy or beam
    weights = alignments_from_generate(out, index=0, eos_token_id=tokenizer.eos_token_id)  # [T, S]
"""

import torch

__all__ = ["alignments_from_generate"]


def alignments_from_generate(outputs, index: int = 0, eos_token_id: int | None = None) -> torch.Tensor:
    """The alignment of output row ``index`` of ``generate(..., output_attentions=True, return_dict_in_generate=True)``.

    Returns α [T, S]: one row per generated token (``outputs.sequences[index, 1:1 + T]``, EOS included), one column per
    (padded) source position. Beam search: step t reads the beam ``outputs.beam_indices[index, t]`` that the
    hypothesis occupied, and T stops where the indices turn -1. Greedy/sampling: T stops after the first
    ``eos_token_id`` (all steps when it is None).
    """
    steps = getattr(outputs, "cross_attentions", None)
    if not steps or steps[0] is None:
        raise ValueError(
            "`outputs` has no `cross_attentions`: call generate(..., output_attentions=True, "
            "return_dict_in_generate=True) on a model with attention (attention_type != 'none')."
        )
    rows = outputs.sequences.shape[0]
    if not -rows <= index < rows:
        raise ValueError(f"`index` must be in [0, {rows}) (rows of outputs.sequences), got {index}.")
    beam_indices = getattr(outputs, "beam_indices", None)
    if beam_indices is not None:
        beams = beam_indices[index]
        length = int((beams >= 0).sum())
        return torch.stack([steps[t][0][beams[t], 0, 0] for t in range(length)])
    generated = outputs.sequences[index, 1:1 + len(steps)]
    length = len(generated)
    if eos_token_id is not None and (generated == eos_token_id).any():
        length = int((generated == eos_token_id).nonzero()[0]) + 1
    return torch.stack([steps[t][0][index, 0, 0] for t in range(length)])
