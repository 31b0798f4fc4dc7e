"""Each module of ours initialises its own parameters (``init_parameters``), which ``_init_weights`` calls: the same
initial weights as when the base class knew every module, and a new module needs no edit of the base class."""

import pytest
import torch
from torch import nn
from transformers import initialization as init

from conftest import tiny_config, tiny_model
from hf_bahdanau import (BahdanauForConditionalGeneration, BahdanauForImageToText, BahdanauForPointerNetwork,
                         BahdanauForTextPairClassification, BahdanauForVisualQuestionAnswering,
                         BahdanauImageToTextConfig, BahdanauMemoryNetworkConfig,
                         BahdanauMemoryNetworkForSequenceClassification, BahdanauPointerConfig,
                         BahdanauTextCoAttentionConfig, BahdanauVisualQuestionAnsweringConfig)


def image_config() -> BahdanauImageToTextConfig:
    return BahdanauImageToTextConfig(vocab_size=12, embedding_size=8, hidden_size=16, attention_size=8, output_size=8,
                                     cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 3]], context_gate=True,
                                     attention_mode="hard_reinforce")


def memory_network(**options) -> BahdanauMemoryNetworkForSequenceClassification:
    return BahdanauMemoryNetworkForSequenceClassification(BahdanauMemoryNetworkConfig(
        vocab_size=23, hidden_size=6, num_labels=4, memory_size=8, **options))


BUILDS = {
    "gaussian_monotonic": lambda: BahdanauForConditionalGeneration(tiny_config(
        "luong-general", attention_type="gaussian_kernel", gaussian_kernel_learnable=True,
        attention_scope="monotonic")),
    "reinforce": lambda: BahdanauForConditionalGeneration(tiny_config("rnnsearch", attention_mode="hard_reinforce")),
    "image": lambda: BahdanauForImageToText(image_config()),
    "pointer": lambda: BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, hidden_size=16,
                                                                       embedding_size=8, attention_size=8)),
    "memory_adjacent": lambda: memory_network(answer_token_ids=[3, 4, 5, 6]),  # W^T = C^K, time tables
    "memory_layer_wise": lambda: memory_network(weight_tying="layer_wise", init_std=0.05),  # H and W
    "vqa": lambda: BahdanauForVisualQuestionAnswering(BahdanauVisualQuestionAnsweringConfig(
        vocab_size=12, hidden_size=6, attention_size=5, answer_hidden_size=7, num_labels=4, phrase_windows=[1, 2, 3],
        cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 2]])),
    "text_pair": lambda: BahdanauForTextPairClassification(BahdanauTextCoAttentionConfig(
        vocab_size=12, hidden_size=6, attention_size=5, answer_hidden_size=7, context_hidden_size=4, num_labels=4)),
}
# Measured with the code before the modules initialised themselves (commit 7618d4e, when ``_init_weights`` named
# GaussianKernelAttention, ContextGate, Conv2d, MovingAverageBaseline and MonotonicScope), torch.manual_seed(0).
# The memory networks' and the co-attention models': measured before their torch layers were initialised through the
# shared base (commits fe0bbf7 and b3f3d50, when their PreTrainedModel classes had their own _init_weights).
CHECKSUMS = {"gaussian_monotonic": 3573.1327338127903, "reinforce": 2805.596040519603, "image": 1597.1617371136585,
             "pointer": 1581.8707480742362, "memory_adjacent": 26.199867060640315,
             "memory_layer_wise": 3.691063051179724, "vqa": 2544.8976236819035, "text_pair": 3027.0737531998384}


def checksum(model: nn.Module) -> float:
    """Σ_i (i + 1)(Σ w + Σ w²) over the state dict's tensors in name order: moves when a tensor's values or the order
    the random draws reach the tensors change."""
    return sum((i + 1) * (float(t.double().sum()) + float(t.double().square().sum()))
               for i, (_, t) in enumerate(sorted(model.state_dict().items())))


@pytest.mark.parametrize("name", list(BUILDS))
def test_initial_weights_are_those_of_the_code_before(name):
    torch.manual_seed(0)
    # float32 draws and orthogonal_'s QR differ between CPU kernels by ~1e-7 relative per value (4.5e-8 on the sum
    # measured under ATEN_CPU_CAPABILITY=default); another draw or draw order moves the sum by ~1e-2
    assert checksum(BUILDS[name]()) == pytest.approx(CHECKSUMS[name], rel=1e-6)


def test_each_module_sets_its_own_starting_values():
    torch.manual_seed(0)
    seq2seq = BUILDS["gaussian_monotonic"]()
    decoder = seq2seq.model.decoder
    assert decoder.attention.width.item() == seq2seq.config.gaussian_kernel_width
    assert (decoder.scope.energy_gain.item(), decoder.scope.energy_bias.item()) == (1.0, -4.0)
    image = BUILDS["image"]()
    assert image.model.decoder.context_gate.bias.tolist() == [3.0]
    assert (image.reinforce_baseline.total.item(), image.reinforce_baseline.updates.item()) == (0.0, 0)
    for convolution in image.model.encoder.regions.convolutions:
        assert convolution.bias.abs().sum().item() == 0.0
        fan_out = convolution.out_channels * 9
        assert convolution.weight.std().item() == pytest.approx((2 / fan_out) ** 0.5, rel=0.35)


class Scaled(nn.Module):
    """A module a contributor adds: its own parameter and its own starting value."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.empty(3))

    def init_parameters(self) -> None:
        init.constant_(self.scale, 0.5)


def test_a_new_module_initialises_itself_without_editing_the_base_class():
    model = tiny_model()
    model.model.decoder.scaled = Scaled()
    model.init_weights()  # what post_init runs; the modules initialised before are left alone
    assert model.model.decoder.scaled.scale.tolist() == [0.5, 0.5, 0.5]
    assert torch.equal(model.lm_head.weight, tiny_model().lm_head.weight)


@pytest.mark.parametrize("name, body", [("memory_layer_wise", "memory_network"), ("text_pair", "coattention")])
def test_a_new_module_of_every_family_initialises_itself(name, body):
    """Each family's base states its rule for torch's layers only (``_init_layer``); a module with
    ``init_parameters`` is initialised by it in every family (``pretrained_base``), the others are left alone."""
    torch.manual_seed(0)
    model = BUILDS[name]()
    getattr(model, body).scaled = Scaled()
    model.init_weights()
    assert getattr(model, body).scaled.scale.tolist() == [0.5, 0.5, 0.5]
    torch.manual_seed(0)
    before = BUILDS[name]().state_dict()
    assert all(torch.equal(value, before[key]) for key, value in model.state_dict().items() if "scaled" not in key)
