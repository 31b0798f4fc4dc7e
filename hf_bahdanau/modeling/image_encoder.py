"""The image encoder of Show, Attend and Tell (Xu et al. 2015): pixels -> a grid of region annotations a_i.

A convolutional network's last feature map [B, D, H', W'] is read as L = H'·W' annotation vectors a_i [B, L, D]
(row-major: region i = r·W' + c), which the recurrent decoder attends over exactly as it attends over source tokens.
In a batch, each image's own regions come first and padding after, so that attention weights index each image's own
grid and the decoder's memory is right-padded like a batch of sentences.
Two networks make the map (``REGION_ENCODERS`` below, chosen by the config): a small CNN of our own for training from
scratch (``cnn_channels``, ``cnn_pool_sizes``), or any transformers vision backbone (``backbone_config``, e.g. a
ResNet or ConvNeXt config).

Images of different sizes are padded (``pixel_mask`` [B, H, W], 1 = a real pixel, the image processor's output). In
the CNN of our own padding never reaches a real region: after each convolution the padded positions are set to 0 (what
the convolution's own zero padding reads at an image's border), and max pooling in ceil mode over ReLU outputs
(≥ 0) gives a real region the maximum of its real pixels, so a padded image's real regions equal the image's alone. A
region is real when its pooling window holds a real pixel; padded regions are 0 and get no attention. A backbone sees
the padded batch as it is (its normalisation layers may mix padding in); its region mask is the pixel mask max-pooled
to the feature map's grid.
"""

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from transformers import AutoConfig, AutoModel
from transformers import initialization as init

from .encoder import BahdanauEncoderOutput
from .input_checks import require_tensor
from .old_names import old_names

__all__ = ["ImageEncoder", "BahdanauImageEncoderOutput", "region_positions"]


@dataclass
class BahdanauImageEncoderOutput(BahdanauEncoderOutput):
    """``BahdanauEncoderOutput`` of an image, batch-first so ``generate`` can expand it for beams.

    last_hidden_state [B, L, D]: the region annotations a_i of each image's own grid of H'_b × W'_b regions first,
    row-major (region i is row i // W'_b, column i mod W'_b), then 0 for padding; L = H'·W' of the batch's grid.
    final_hidden_state [B, 1, D]: the mean annotation ā over the real regions (the image's summary: what the bridges,
    and the decoders without attention, read as the encoder's final state).
    hidden_states: with ``output_hidden_states``, the pixels and every convolutional block's feature map.
    attention_mask [B, L]: 1 for a real region (the first H'_b·W'_b), 0 for padding: right padding, so every scope
    of the decoder reads a padded image's regions as it reads the image alone.
    grid_size [B, 2]: each image's own grid (H'_b, W'_b).
    """

    attention_mask: Tensor | None = None
    grid_size: Tensor | None = None


class ReluConvolution(nn.Conv2d):
    """A convolution that a ReLU follows, initialised for it: W Kaiming-normal (He et al.), fan-out; b = 0."""

    def init_parameters(self) -> None:
        """The model's ``_init_weights`` calls it."""
        init.kaiming_normal_(self.weight, mode="fan_out", nonlinearity="relu")
        init.zeros_(self.bias)


class ConvolutionalRegions(nn.Module):
    """Our small CNN: block l computes a^l = maxpool_{p_l}(ReLU(W_l ∗ a^{l−1} + b_l)) with 3×3 convolutions and
    ``cnn_pool_sizes`` p_l, keeping padded positions at 0."""

    def __init__(self, config):
        super().__init__()
        sizes = [config.num_channels, *config.cnn_channels]
        self.convolutions = nn.ModuleList(ReluConvolution(inputs, outputs, kernel_size=3, padding=1)
                                          for inputs, outputs in zip(sizes, sizes[1:]))
        self.pool_sizes = [tuple(size) for size in config.cnn_pool_sizes]
        # (height, width): an image smaller than the first block's pooling window has no region to pool
        self.smallest_image = self.pool_sizes[0]

    def forward(self, pixels: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
        """pixels [B, C, H, W], mask [B, H, W] (float, 1 = real) -> features [B, D, H', W'], the region mask
        [B, H', W'] and each block's feature map."""
        features, mask, blocks = pixels * mask.unsqueeze(1), mask.unsqueeze(1), []
        for convolution, pool in zip(self.convolutions, self.pool_sizes):
            features = torch.relu(convolution(features)) * mask
            features = nn.functional.max_pool2d(features, pool, pool, ceil_mode=True)
            mask = nn.functional.max_pool2d(mask, pool, pool, ceil_mode=True)
            blocks.append(features)
        return features, mask.squeeze(1), tuple(blocks)


class BackboneRegions(nn.Module):
    """A transformers vision backbone built from ``backbone_config`` (random weights; ``BahdanauForImageToText``
    loads a checkpoint's into it when ``backbone`` names one); its last feature map [B, D, H', W'] is the grid."""

    def __init__(self, config):
        super().__init__()
        settings = dict(config.backbone_config)
        settings.pop("dtype", None)  # built in the model's dtype (from_pretrained's `dtype`), not the checkpoint's
        self.backbone = AutoModel.from_config(AutoConfig.for_model(settings.pop("model_type"), **settings))

    def forward(self, pixels: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
        outputs = self.backbone(pixel_values=pixels, output_hidden_states=True, return_dict=True)
        features = outputs.last_hidden_state
        if features.dim() != 4:
            raise ValueError(f"The backbone {type(self.backbone).__name__} returns a last_hidden_state of shape "
                             f"{list(features.shape)}; a region grid needs a convolutional feature map [batch, "
                             "channels, height, width] (e.g. ResNet, ConvNeXt).")
        grid_mask = nn.functional.adaptive_max_pool2d(mask.unsqueeze(1), features.shape[-2:]).squeeze(1)
        return features * grid_mask.unsqueeze(1), grid_mask, tuple(outputs.hidden_states or ())


def region_positions(rows: int, columns: int, size: int, device: torch.device | None = None,
                     dtype: torch.dtype = torch.float32) -> Tensor:
    """2-D sinusoidal position encodings [rows·columns, size] (row-major): the first size/2 features encode the row r,
    the rest the column c, each as [sin(p ω_k); cos(p ω_k)] with ω_k = 10000^(−k/(size/4)), k < size/4 (Vaswani et
    al.'s encoding per axis, which extends to grids wider than any seen in training). size: a multiple of 4."""
    quarter = size // 4
    frequencies = torch.exp(-math.log(10000.0) * torch.arange(quarter, device=device, dtype=torch.float64) / quarter)

    def encode(positions: Tensor) -> Tensor:  # [n] -> [n, size/2]
        angles = positions.to(torch.float64).unsqueeze(1) * frequencies
        return torch.cat([angles.sin(), angles.cos()], dim=1)

    row = encode(torch.arange(rows, device=device)).repeat_interleave(columns, dim=0)
    column = encode(torch.arange(columns, device=device)).repeat(rows, 1)
    return torch.cat([row, column], dim=1).to(dtype)


class ImageEncoder(nn.Module):
    """pixel_values [B, C, H, W] (and pixel_mask [B, H, W]) -> ``BahdanauImageEncoderOutput``: the annotations a_i
    [B, L, D] (with ``region_position_encoding``, a_i + the 2-D sinusoidal encoding of region i), their mask and ā.
    ``config``: the image encoder's fields (``ImageEncoderFields``), e.g. the image-to-text config's ``encoder``, a
    ``BahdanauImageEncoderConfig``."""

    def __init__(self, config: Any):
        super().__init__()
        self.num_channels = config.num_channels
        self.regions = BackboneRegions(config) if config.backbone_config is not None else ConvolutionalRegions(config)
        self.position_encoding = config.region_position_encoding

    def forward(
        self,
        pixel_values: Tensor | None = None,
        pixel_mask: Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
    ) -> BahdanauImageEncoderOutput | tuple:
        """pixel_values [B, C, H, W] (C = ``num_channels``), finite; pixel_mask [B, H, W]: 1 = a real pixel, 0 = padding
        (None: every pixel is real). ``output_attentions`` is accepted for ``generate()``: an image encoder has none."""
        mask = self.check_pixels(pixel_values, pixel_mask)
        features, region_mask, blocks = self.regions(pixel_values, mask)
        size, rows, columns = features.shape[1:]
        annotations = features.flatten(2).transpose(1, 2)  # [B, L, D], region i = r·W' + c of the batch's grid
        if self.position_encoding:
            positions = region_positions(rows, columns, size, features.device, features.dtype)
            annotations = annotations + positions * region_mask.flatten(1).unsqueeze(-1)
        grid = torch.stack([region_mask.amax(2).sum(1), region_mask.amax(1).sum(1)], dim=1).long()  # (H'_b, W'_b)
        count = region_mask.flatten(1).sum(1)
        # each image's own regions first, row-major over its own grid (a stable sort keeps their order), then padding
        order = torch.argsort((region_mask.flatten(1) == 0).to(torch.int8), dim=1, stable=True)
        annotations = annotations.gather(1, order.unsqueeze(-1).expand(-1, -1, size))
        packed_mask = torch.arange(annotations.shape[1], device=features.device) < count.unsqueeze(1)
        weights = packed_mask.unsqueeze(-1).to(annotations.dtype)
        mean = (annotations * weights).sum(1) / weights.sum(1).clamp(min=1)
        output = BahdanauImageEncoderOutput(
            last_hidden_state=annotations * weights,
            final_hidden_state=mean.unsqueeze(1),
            hidden_states=(pixel_values, *blocks) if output_hidden_states else None,
            attention_mask=packed_mask.long(),
            grid_size=grid,
        )
        return output if return_dict is not False else output.to_tuple()

    def check_pixels(self, pixel_values: Tensor | None, pixel_mask: Tensor | None) -> Tensor:
        """ValueError naming what is wrong with the pixels or their mask; returns the mask as float [B, H, W]."""
        if pixel_values is None:
            raise ValueError("Pass `pixel_values` [batch, channels, height, width] (the image processor's output), or "
                             "`encoder_outputs`.")
        require_tensor("pixel_values", pixel_values)
        if not pixel_values.dtype.is_floating_point:
            raise TypeError(f"`pixel_values` must be a floating-point tensor (the image processor rescales and "
                            f"normalises the pixels), got dtype {pixel_values.dtype}.")
        if pixel_values.dim() != 4 or pixel_values.shape[1] != self.num_channels:
            raise ValueError(f"`pixel_values` must be [batch, num_channels={self.num_channels}, height, width], got "
                             f"shape {list(pixel_values.shape)}.")
        if 0 in pixel_values.shape:
            raise ValueError(f"`pixel_values` must hold at least one image of at least one pixel, got shape "
                             f"{list(pixel_values.shape)}.")
        if isinstance(self.regions, ConvolutionalRegions):  # read from the shape alone, so tracing keeps it
            (height, width), (min_height, min_width) = pixel_values.shape[2:], self.regions.smallest_image
            if height < min_height or width < min_width:
                raise ValueError(f"`pixel_values` images must be at least {min_height}×{min_width} pixels (height × "
                                 f"width: the first convolution block's max pooling window, `cnn_pool_sizes[0]`), got "
                                 f"{height}×{width}.")
        if not torch.isfinite(pixel_values).all():
            raise ValueError("`pixel_values` must be finite numbers; it holds NaN or inf.")
        expected = [pixel_values.shape[0], *pixel_values.shape[2:]]
        if pixel_mask is None:
            return pixel_values.new_ones(expected)
        require_tensor("pixel_mask", pixel_mask)
        if list(pixel_mask.shape) != expected:
            raise ValueError(f"`pixel_mask` must be [batch, height, width] = {expected}, got {list(pixel_mask.shape)}.")
        if not ((pixel_mask == 0) | (pixel_mask == 1)).all():
            raise ValueError("`pixel_mask` must hold 1 (a real pixel) and 0 (padding) only.")
        empty = (~pixel_mask.bool().flatten(1).any(1)).nonzero()
        if len(empty):
            raise ValueError(f"`pixel_mask` row {int(empty[0])} has no real pixel: every image needs at least one.")
        real = pixel_mask.bool()
        heights, widths = real.any(2).sum(1), real.any(1).sum(1)
        rectangles = ((torch.arange(expected[1], device=real.device) < heights[:, None]).unsqueeze(2)
                      & (torch.arange(expected[2], device=real.device) < widths[:, None]).unsqueeze(1))
        wrong = (real != rectangles).flatten(1).any(1).nonzero()
        if len(wrong):
            raise ValueError(f"`pixel_mask` must mark each image as one rectangle at the top left (padding at the "
                             f"bottom and the right, as the image processor pads); row {int(wrong[0])} does not.")
        return pixel_mask.to(pixel_values.dtype)

    def grid_size(self, height: int, width: int) -> tuple[int, int]:
        """(H', W') of an image of height × width pixels alone."""
        if isinstance(self.regions, ConvolutionalRegions):
            for pool_height, pool_width in self.regions.pool_sizes:
                height, width = math.ceil(height / pool_height), math.ceil(width / pool_width)
            return height, width
        parameter = next(self.parameters())
        with torch.no_grad():
            pixels = parameter.new_zeros(1, self.num_channels, height, width)
            features, _, _ = self.regions(pixels, pixels.new_ones(1, height, width))
        return tuple(features.shape[-2:])


__getattr__ = old_names(__name__, {  # the names before the Bahdanau prefix
    "ImageEncoderOutput": BahdanauImageEncoderOutput,
})
