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

import torch
from peer_harness import decode_sentences_per_second, latency_ms, one_at_a_time


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
