"""Joey NMT 2.3.0 recurrent model at our benchmark sizes, measured by ``peer_harness`` (run by Joey NMT's venv python).

    /root/peer-venvs/joeynmt/bin/python benchmarks/peers/joeynmt_runner.py --batches batches.pt --threads 2

The model is built by Joey NMT's own ``build_model`` from the ``model:`` section of a config
(``MODEL`` below): a packed bidirectional GRU encoder (2 x 128), a GRU decoder (256) with input
feeding and ``attention: bahdanau`` (the additive score v^T tanh(W_q s_t + W_k h_j)); the decoder is
Luong-style (update, then attend, then tanh(W [s_t; c_t]) as the attentional vector), initialised
with the last encoder state (``init_hidden: last``, as our ``bridge="last"``). Batches are Joey's own
``Batch`` sorted by source length, the loss is its ``XentLoss`` summed and normalised by tokens
(``normalization: tokens``); search is ``joeynmt.search.search`` (``greedy`` for beam 1,
``beam_search`` otherwise, ``beam_alpha: -1`` = Joey's default, no length penalty).
"""

from types import SimpleNamespace

import joeynmt
import torch
from joeynmt.batch import Batch
from joeynmt.config import _check_special_symbols
from joeynmt.model import build_model
from joeynmt.search import search
from joeynmt.vocabulary import Vocabulary

from peer_harness import Peer, main, to_tokens

VOCAB = 8000
RNN = dict(type="recurrent", rnn_type="gru", num_layers=1, dropout=0.0, embeddings=dict(embedding_dim=256))
MODEL = dict(
    encoder=dict(**RNN, hidden_size=128, bidirectional=True),
    decoder=dict(**RNN, hidden_size=256, attention="bahdanau", input_feeding=True, init_hidden="last",
                 hidden_dropout=0.0),
)


def vocabulary() -> Vocabulary:
    """Joey NMT's Vocabulary with its default specials (<unk> 0, <pad> 1, <s> 2, </s> 3) and dummy tokens."""
    specials = SimpleNamespace(**_check_special_symbols({}))
    return Vocabulary([f"w{index}" for index in range(4, VOCAB)], specials)


def build(device: torch.device) -> Peer:
    symbols = vocabulary()
    model = build_model(MODEL, src_vocab=symbols, trg_vocab=symbols)
    model.loss_function = ("crossentropy", 0.0)

    def prepare(batch: dict) -> Batch:
        """Joey's Batch cuts trg_input = (<s>, y_1 .. y_{n-1}) from trg = (<s>, y_1 .. y_{n-1}, </s>); its loss
        targets are then set back to our (y_1 .. y_n), so that no implementation learns </s> (which would make
        its decoding stop early) and every one is trained on the same tokens."""
        tokens = to_tokens(batch, pad=symbols.pad_index, bos=symbols.bos_index, first_symbol=len(symbols.specials))
        lengths = (tokens.target_output != symbols.pad_index).sum(1)
        with_eos = tokens.target_output.scatter(1, (lengths - 1)[:, None], symbols.eos_index)
        trg = torch.cat([torch.full_like(with_eos[:, :1], symbols.bos_index), with_eos], dim=1)
        joey = Batch(src=tokens.source, src_length=tokens.source_lengths, src_prompt_mask=None, trg=trg,
                     trg_prompt_mask=None, indices=torch.arange(len(trg)), device=device,
                     pad_index=symbols.pad_index, eos_index=symbols.eos_index)
        joey.trg = tokens.target_output.to(device)  # Batch(device=...) moved the rest
        joey.sort_by_src_length()
        return joey

    def loss(joey: Batch) -> torch.Tensor:
        summed, _, _, _ = model(return_type="loss", **vars(joey))
        return joey.normalize(summed, normalization="tokens")

    def decode(joey: Batch, beams: int, max_steps: int) -> torch.Tensor:
        output, _, _ = search(model=model, batch=joey, max_output_length=max_steps, beam_size=beams, beam_alpha=-1)
        output = torch.from_numpy(output)
        ends = output == symbols.eos_index  # length up to the first </s>, else every non-padding token
        return torch.where(ends.any(1), ends.int().argmax(1) + 1, (output != symbols.pad_index).sum(1))

    return Peer(name="joeynmt", version=joeynmt.__version__, options=MODEL, model=model, prepare=prepare,
                loss=loss, decode=decode,
                notes=["Batch built with a final </s>, loss targets then set to ours (no </s>)",
                       "init_hidden: last (Joey's default is a bridge Linear)"])


if __name__ == "__main__":
    main(build)
