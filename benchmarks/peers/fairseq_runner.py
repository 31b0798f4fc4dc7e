"""fairseq 0.12.2 ``--arch lstm`` at our benchmark sizes, measured by ``peer_harness`` (run by fairseq's venv python).

    /root/peer-venvs/fairseq/bin/python benchmarks/peers/fairseq_runner.py --batches batches.pt --threads 2

The model is built by fairseq's own ``LSTMModel.build_model`` from the same arguments as
``fairseq-train --arch lstm --encoder-embed-dim 256 --encoder-hidden-size 128 --encoder-bidirectional
--decoder-embed-dim 256 --decoder-hidden-size 256 --decoder-out-embed-dim 256 --dropout 0``: a packed
bidirectional LSTM encoder, an LSTMCell decoder with input feeding, ``general`` score
(h_t^T W s_j, no bias) and tanh(W_c [c_t; h_t]) attentional state (Luong et al., 2015). The loss is
fairseq's ``cross_entropy`` criterion (summed NLL / target tokens, as its trainer scales it); search is
fairseq's ``SequenceGenerator`` (beam 1 = greedy, as ``fairseq-generate --beam 1``).
"""

from argparse import Namespace
from types import SimpleNamespace

import fairseq
import torch
from fairseq.criterions.cross_entropy import CrossEntropyCriterion
from fairseq.data import Dictionary
from fairseq.models import ARCH_MODEL_REGISTRY
from fairseq.sequence_generator import SequenceGenerator

from peer_harness import Peer, main, on_device, to_tokens

VOCAB = 8000
OPTIONS = dict(arch="lstm", encoder_embed_dim=256, encoder_hidden_size=128, encoder_layers=1,
               encoder_bidirectional=True, decoder_embed_dim=256, decoder_hidden_size=256, decoder_layers=1,
               decoder_out_embed_dim=256, decoder_attention="1", dropout=0.0, criterion="cross_entropy")


def dictionary() -> Dictionary:
    """fairseq's Dictionary (<s> 0, <pad> 1, </s> 2, <unk> 3) filled with dummy symbols up to VOCAB entries."""
    symbols = Dictionary()
    for index in range(len(symbols), VOCAB):
        symbols.add_symbol(f"w{index}")
    return symbols


def build(device: torch.device) -> Peer:
    symbols = dictionary()
    task = SimpleNamespace(source_dictionary=symbols, target_dictionary=symbols)
    model = ARCH_MODEL_REGISTRY["lstm"].build_model(Namespace(**OPTIONS), task)
    criterion = CrossEntropyCriterion(task, sentence_avg=False)
    generators = {}

    def prepare(batch: dict) -> dict:
        """fairseq's collater layout: sorted by source length (descending), sources left-padded,
        prev_output_tokens = (</s>, y_1 .. y_{n-1})."""
        tokens = to_tokens(batch, pad=symbols.pad(), bos=symbols.eos(), first_symbol=symbols.nspecial)
        order = tokens.source_lengths.argsort(descending=True, stable=True)
        source, lengths = tokens.source[order], tokens.source_lengths[order]
        positions = torch.arange(source.shape[1])
        shift = (source.shape[1] - lengths)[:, None]  # right -> left padding
        left_padded = torch.gather(source, 1, (positions[None] - shift) % source.shape[1])
        target = tokens.target_output[order]
        return on_device(dict(net_input=dict(src_tokens=left_padded, src_lengths=lengths,
                                             prev_output_tokens=tokens.target_input[order]),
                              target=target, ntokens=int(target.ne(symbols.pad()).sum()), nsentences=len(order)),
                         device)

    def loss(sample: dict) -> torch.Tensor:
        summed, sample_size, _ = criterion(model, sample)
        return summed / sample_size

    def decode(sample: dict, beams: int, max_steps: int) -> torch.Tensor:
        if beams not in generators:  # at most max_steps decoder calls: max_steps - 1 tokens, then </s> is forced
            generators[beams] = SequenceGenerator([model], symbols, beam_size=beams, max_len_a=0,
                                                  max_len_b=max_steps - 1)
        hypotheses = generators[beams].generate([model], sample)
        return torch.tensor([len(nbest[0]["tokens"]) for nbest in hypotheses])

    return Peer(name="fairseq", version=fairseq.__version__, options=OPTIONS, model=model, prepare=prepare,
                loss=loss, decode=decode,
                notes=["SequenceGenerator max_len_b = 29: 29 free tokens + forced </s> = 30 decoder steps",
                       "batches sorted by source length and sources left-padded, as fairseq's collater does"])


if __name__ == "__main__":
    main(build)
