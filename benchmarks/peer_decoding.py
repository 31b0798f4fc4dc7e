"""A peer toolkit's search, timed on request: the worker behind ``run_benchmarks.py --decode_only --peers``.

Run by the peer's own virtualenv python with ``benchmarks/peers`` on PYTHONPATH (``run_benchmarks.PeerWorker``
starts it); it builds the toolkit's model once (``<name>_runner.build``), then answers each line of stdin, a JSON
``{"beams": k, "batch": "b64" | "b1"}``, with one JSON line ``{"value": v}``: sentences per second of the decode
batch (64 sentences, ``peer_harness.decode_sentences_per_second``), or milliseconds per sentence of its first
``LATENCY_SENTENCES`` decoded one at a time, with k beams, at most 30 decoder steps. Every batch is converted
before any clock starts, as in ``peer_harness``.

    /root/peer-venvs/fairseq/bin/python benchmarks/peer_decoding.py fairseq --batches batches.pt --threads 2
"""

import argparse
import importlib
import json
import sys
import time

import torch
from peer_harness import LATENCY_SENTENCES, TARGET_STEPS, Peer, decode_sentences_per_second, synchronize


@torch.no_grad()
def latency_ms(peer: Peer, sentences: list, beams: int) -> float:
    """Milliseconds per sentence of ``peer``'s search with ``beams`` beams over toolkit batches of one sentence."""
    synchronize(peer.device)
    start = time.perf_counter()
    with peer.precision():
        for toolkit_batch in sentences:
            peer.decode(toolkit_batch, beams, TARGET_STEPS)
    synchronize(peer.device)
    return (time.perf_counter() - start) / len(sentences) * 1000


def one_at_a_time(peer: Peer, batch: dict) -> list:
    """The first ``LATENCY_SENTENCES`` sources of ``batch`` alone, without padding, as the toolkit's batches."""
    sentences = []
    for row in range(LATENCY_SENTENCES):
        length = int(batch["attention_mask"][row].sum())
        one = {key: value[row:row + 1] for key, value in batch.items()}
        one["input_ids"], one["attention_mask"] = one["input_ids"][:, :length], one["attention_mask"][:, :length]
        sentences.append(peer.prepare(one))
    return sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("peer", help="the runner to build: fairseq, joeynmt or opennmt")
    parser.add_argument("--batches", required=True, help='torch.save({"train": [...], "decode": batch}) file')
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    batch = torch.load(args.batches)["decode"]
    torch.manual_seed(0)
    peer = importlib.import_module(f"{args.peer}_runner").build(torch.device("cpu"))
    peer.model.eval()
    sentences = one_at_a_time(peer, batch)
    print(json.dumps({"ready": peer.version}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["batch"] == "b64":
            value = decode_sentences_per_second(peer, batch, request["beams"], [])
        else:
            value = latency_ms(peer, sentences, request["beams"])
        print(json.dumps({"value": value}), flush=True)


if __name__ == "__main__":
    main()
