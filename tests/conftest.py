"""Shared helpers: tiny configs and padded batches."""

import pytest
import torch

import hf_bahdanau  # noqa: F401  (registers the Auto classes)
from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration

VOCAB = 40
PAD, BOS, EOS = 0, 1, 2


def tiny_config(preset: str | None = None, **overrides) -> BahdanauConfig:
    """A small model: vocab 40, embedding 12, decoder 16, encoder 2 x 8 (bidirectional)."""
    sizes = dict(vocab_size=VOCAB, embedding_size=12, hidden_size=16, attention_size=10, output_size=12,
                 max_source_positions=32)
    if preset in (None, "rnnsearch", "rnnencdec"):
        sizes.update(encoder_layers=1, decoder_layers=1)
    else:
        sizes.update(encoder_layers=2, decoder_layers=2)
    sizes.update(overrides)
    if preset is None:
        return BahdanauConfig(**sizes)
    return BahdanauConfig.from_preset(preset, **sizes)


def tiny_model(preset: str | None = None, seed: int = 0, **overrides) -> BahdanauForConditionalGeneration:
    torch.manual_seed(seed)
    return BahdanauForConditionalGeneration(tiny_config(preset, **overrides)).eval()


def padded_batch(lengths=(7, 5, 2), seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids [B, max(lengths)] of real tokens 3..VOCAB-1 followed by padding, and the attention mask."""
    generator = torch.Generator().manual_seed(seed)
    source_length = max(lengths)
    input_ids = torch.randint(3, VOCAB, (len(lengths), source_length), generator=generator)
    mask = (torch.arange(source_length)[None] < torch.tensor(lengths)[:, None]).long()
    return input_ids.masked_fill(mask == 0, PAD), mask


def random_labels(batch_size: int, target_length: int, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (batch_size, target_length), generator=generator)


@pytest.fixture
def batch():
    return padded_batch()


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models: intra-op thread hand-offs cost more than the arithmetic (about 10x slower with 2 threads)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
