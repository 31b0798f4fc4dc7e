"""OpenNMT-py 3.5.1 RNN model at our benchmark sizes, measured by ``peer_harness`` (run by OpenNMT-py's venv python).

    /root/peer-venvs/opennmt/bin/python benchmarks/peers/opennmt_runner.py --batches batches.pt --threads 2

The model is built by OpenNMT-py's own ``onmt.model_builder.build_model`` (with its default uniform
±0.1 initialisation) from ``onmt-train`` options (``TRAIN_OPTIONS`` below, parsed by its own option
parser): a packed bidirectional GRU encoder (``encoder_type: brnn``, ``enc_hid_size`` 256 = 2 x 128), a
GRU decoder (256) with input feeding (``ifrnn``), ``global_attention: mlp`` (the additive score), the
decoder initialised with the encoder's final states (``bridge`` off). The loss is its ``LossCompute``
(summed cross-entropy) divided by the target tokens, as its trainer does with ``normalization: tokens``;
search is its ``Translator.translate_batch`` with ``onmt-translate`` options: ``-random_sampling_topk 1``
(its greedy ``GreedySearch``, argmax) for greedy, ``BeamSearch`` for beam 5 (its default
``length_penalty avg``), ``-max_length 30 -max_length_ratio 0``.
"""

import onmt
import pyonmttok
import torch
from onmt.constants import DefaultTokens
from onmt.model_builder import build_model
from onmt.opts import train_opts, translate_opts
from onmt.translate import GNMTGlobalScorer, Translator
from onmt.utils.loss import LossCompute
from onmt.utils.parse import ArgumentParser

from peer_harness import Peer, main, on_device, to_tokens

VOCAB = 8000
SPECIALS = [DefaultTokens.UNK, DefaultTokens.PAD, DefaultTokens.BOS, DefaultTokens.EOS]  # its -default_specials
TRAIN_OPTIONS = dict(encoder_type="brnn", decoder_type="rnn", rnn_type="GRU", global_attention="mlp",
                     input_feed=1, word_vec_size=256, enc_hid_size=256, dec_hid_size=256, enc_layers=1,
                     dec_layers=1, dropout=0.0, attention_dropout=0.0, normalization="tokens")


def command_line(options: dict) -> list[str]:
    return [item for key, value in options.items() for item in (f"-{key}", str(value))]


def parse(add_options, options: dict):
    parser = ArgumentParser()
    add_options(parser)
    return parser.parse_args(command_line(options))


def vocabularies() -> dict:
    """OpenNMT-py's vocabs dict: one pyonmttok Vocab (<unk> 0, <blank> 1, <s> 2, </s> 3, dummy tokens) for both sides."""
    vocab = pyonmttok.build_vocab_from_tokens([f"w{index}" for index in range(len(SPECIALS), VOCAB)],
                                              special_tokens=SPECIALS)
    vocab.default_id = vocab[DefaultTokens.UNK]
    return dict(src=vocab, tgt=vocab, data_task="seq2seq", decoder_start_token=DefaultTokens.BOS)


def build(device: torch.device) -> Peer:
    vocabs = vocabularies()
    pad, bos = vocabs["tgt"][DefaultTokens.PAD], vocabs["tgt"][DefaultTokens.BOS]
    opt = parse(train_opts, dict(data="unused", src_vocab="unused", **TRAIN_OPTIONS))
    ArgumentParser.update_model_opts(opt)
    ArgumentParser.validate_model_opts(opt)
    model = build_model(opt, opt, vocabs, checkpoint=None, device_id=0)
    criterion = LossCompute.from_opts(opt, model, vocabs["tgt"])
    translators = {}

    def prepare(batch: dict) -> dict:
        """OpenNMT-py's batch dict: src [B, S, 1], srclen [B], tgt [B, T + 1, 1] = (<s>, y_1 .. y_n)."""
        tokens = to_tokens(batch, pad=pad, bos=bos, first_symbol=len(SPECIALS))
        tgt = torch.cat([tokens.target_input[:, :1], tokens.target_output], dim=1)
        return on_device(dict(src=tokens.source[..., None], srclen=tokens.source_lengths, tgt=tgt[..., None],
                              indices=torch.arange(len(tgt))), device)

    def loss(batch: dict) -> torch.Tensor:
        output, attentions = model(batch["src"], batch["tgt"], batch["srclen"])
        summed, _ = criterion(batch, output, attentions)
        return summed / int(batch["tgt"][:, 1:].ne(pad).sum())

    def decode(batch: dict, beams: int, max_steps: int) -> torch.Tensor:
        if beams not in translators:
            greedy = dict(random_sampling_topk=1) if beams == 1 else {}
            gpu = dict(gpu=device.index or 0) if device.type == "cuda" else {}  # the Translator's own device option
            topt = parse(translate_opts, dict(model="unused", src="unused", beam_size=beams, max_length=max_steps,
                                              max_length_ratio=0, **greedy, **gpu))
            translators[beams] = Translator.from_opt(model, vocabs, topt, opt,
                                                     global_scorer=GNMTGlobalScorer.from_opt(topt),
                                                     report_score=False)
        results = translators[beams].translate_batch({k: v for k, v in batch.items() if k != "tgt"},
                                                     attn_debug=False)
        return torch.tensor([len(nbest[0]) for nbest in results["predictions"]])

    return Peer(name="opennmt", version=onmt.__version__, options=TRAIN_OPTIONS, model=model, prepare=prepare,
                loss=loss, decode=decode,
                notes=["greedy = Translator with -random_sampling_topk 1 (GreedySearch argmax)",
                       "no </s> in the targets; the decoder is fed y_n at padded positions, as OpenNMT-py does"])


if __name__ == "__main__":
    main(build)
