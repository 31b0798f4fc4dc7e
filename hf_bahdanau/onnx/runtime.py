"""Decode a model exported by ``hf-bahdanau-export`` with ONNX Runtime: numpy, onnxruntime and tokenizers only,
no torch. The exported folder carries this file, ``beam_search.py`` and ``source_warnings.py``, so it also runs where hf_bahdanau is not
installed::

    from runtime import OnnxSeq2Seq          # with the exported folder on sys.path, or hf_bahdanau.onnx.runtime
    model = OnnxSeq2Seq("outputs/dates-onnx")
    model.translate(["3/14/15"], num_beams=5)[0].translation

The encoder graph runs once per batch. Greedy search is one call of the greedy graph (the decoder step in an ONNX
Loop); beam search calls the decoder-step graph once per generated token, on k rows per source (each with its copy
of the encoded source), and chooses among each row's best 2k tokens (``beam_search``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

try:
    from .beam_search import SearchOutput, beam_search, generated_length
    from ..modeling.source_warnings import warn_about_source
except ImportError:  # the exported folder, imported as top-level modules
    from beam_search import SearchOutput, beam_search, generated_length
    from source_warnings import warn_about_source

__all__ = ["MANIFEST", "OnnxSeq2Seq", "OnnxTranslation"]

FORMAT = "hf_bahdanau-onnx/2"  # what export_onnx writes; 2: the step graph's top_k input and top outputs
MANIFEST = "onnx_config.json"  # the tensors, special tokens and generation defaults, beside the graphs
GRAPHS = ("encoder", "decoder_step", "greedy")  # .onnx, or .int8.onnx for the quantised copies


@dataclass
class OnnxTranslation:
    """One decoded text: its tokens and, with ``output_alignments``, α [len(target_tokens), len(source_tokens)]."""

    source: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    alignment: np.ndarray | None = None
    score: float | None = None
    p_gen: None = None  # as ``decoding.Translation``; copy attention does not export


class OnnxSeq2Seq:
    """An exported folder on ONNX Runtime. ``quantized``: the int8 graphs ``quantize_onnx`` wrote beside the fp32
    ones; ``threads``: ONNX Runtime's intra-op threads (None: its default); ``batch_threads``: ``generate`` decodes a
    batch as that many slices of sources at once, each in a Python thread of its own (ONNX Runtime runs a session's
    calls concurrently). With ``threads=1, batch_threads=C`` a batch keeps C cores busy without the synchronisation
    that intra-op threads pay on each of a step's many small operators (docs/performance.md: batch 64 on 2 cores)."""

    def __init__(self, folder: str | Path, quantized: bool = False, threads: int | None = None,
                 providers: Sequence[str] = ("CPUExecutionProvider",), batch_threads: int = 1) -> None:
        import onnxruntime

        self.folder = Path(folder)
        self.manifest = self._read_manifest()
        options = onnxruntime.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        sessions = []
        for graph in GRAPHS:
            name = graph + (".int8.onnx" if quantized else ".onnx")
            if not (self.folder / name).is_file():
                raise ValueError(f"`folder` {str(folder)!r} has no {name}" + (
                    " (write the int8 graphs with quantize_onnx, or hf-bahdanau-export --int8)" if quantized else "")
                    + ".")
            sessions.append(self._session(self.folder / name, options, list(providers)))
        self.encoder, self.decoder, self.greedy = sessions
        if isinstance(batch_threads, bool) or not isinstance(batch_threads, int) or batch_threads < 1:
            raise ValueError(f"`batch_threads` must be an integer ≥ 1, got {batch_threads!r}.")
        self.batch_threads = batch_threads
        self.encoded_names, self.state_names = self.manifest["memory"], self.manifest["state"]
        self.next_state_names = [f"next_{name}" for name in self.state_names]
        self.row_axis = self.manifest["row_axis"]
        # The graph keeps only the inputs it reads (a decoder without attention never reads the annotations).
        self.step_inputs = {graph_input.name for graph_input in self.decoder.get_inputs()}
        self._tokenizer = None
        self._source_config = SimpleNamespace(**self.manifest["config"])  # what ``warn_about_source`` reads

    def _read_manifest(self) -> dict:
        """``MANIFEST`` of the folder; a missing, unreadable or other-format file is a ValueError naming it."""
        path = self.folder / MANIFEST
        if not path.is_file():
            raise ValueError(f"`folder` {str(self.folder)!r} has no {MANIFEST}: give a folder written by "
                             "hf-bahdanau-export.")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start}): export the model "
                             "again with hf-bahdanau-export.") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}): "
                             "export the model again with hf-bahdanau-export.") from None
        found = manifest.get("format") if isinstance(manifest, dict) else None
        if found != FORMAT:
            raise ValueError(f"`folder` {str(self.folder)!r} holds format {found!r}; this runtime reads {FORMAT!r}: "
                             "export the model again with hf-bahdanau-export.")
        return manifest

    @staticmethod
    def _session(path: Path, options, providers: list[str]):
        """ONNX Runtime's session of the graph at ``path``; a graph it cannot load (a damaged or truncated file) is a
        ValueError naming the file, with ONNX Runtime's reason."""
        import onnxruntime
        from onnxruntime.capi.onnxruntime_pybind11_state import (Fail, InvalidArgument, InvalidGraph, InvalidProtobuf,
                                                                 NoSuchFile)

        try:
            return onnxruntime.InferenceSession(str(path), options, providers=providers)
        except (Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, NoSuchFile) as error:
            reason = " ".join(str(error).split())  # one line
            raise ValueError(f"ONNX Runtime cannot load {path}: {reason} Export the model again with "
                             "hf-bahdanau-export.") from None

    @property
    def tokenizer(self):
        """The exported tokenizer (``tokenizers.Tokenizer`` of its ``tokenizer.json``)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            path = self.folder / "tokenizer.json"
            if not path.is_file():
                raise ValueError(f"{self.folder} has no tokenizer.json: pass token ids to generate() instead.")
            self._tokenizer = Tokenizer.from_file(str(path))
            unknown = self.manifest.get("unk_token")  # as ``warn_about_source`` reads a tokenizer
            self._unknown_token = SimpleNamespace(unk_token=unknown, unk_token_id=None if unknown is None
                                                  else self._tokenizer.token_to_id(unknown))
        return self._tokenizer

    def _rows(self, tensors: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
        return {name: value if self.row_axis[name] is None else np.take(value, rows, axis=self.row_axis[name])
                for name, value in tensors.items()}

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> tuple[dict, dict]:
        """The encoded source and initial state of sources input_ids [B, S], attention_mask [B, S] (right padding)."""
        outputs = self.encoder.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
        named = dict(zip(self.encoded_names + self.state_names, outputs))
        return ({name: named[name] for name in self.encoded_names}, {name: named[name] for name in self.state_names})

    def generate(self, input_ids: np.ndarray, attention_mask: np.ndarray | None = None, num_beams: int | None = None,
                 max_new_tokens: int | None = None, min_new_tokens: int = 0, length_penalty: float | None = None,
                 early_stopping: bool | str | None = None, num_return_sequences: int = 1,
                 output_alignments: bool = False, coverage_penalty: float | None = None,
                 length_penalty_style: str | None = None) -> SearchOutput:
        """Greedy (``num_beams=1``) or beam search, as ``generate()``; defaults from the model's generation config.
        ``coverage_penalty`` β and ``length_penalty_style="gnmt"``: GNMT's scores of finished hypotheses, in beam
        search, as hf_bahdanau's generate() (``beam_search.beam_search``). Returns ``SearchOutput``: sequences
        [B · num_return_sequences, 1 + T] from the start token."""
        input_ids = np.asarray(input_ids, dtype=np.int64)
        if input_ids.ndim != 2 or 0 in input_ids.shape:
            raise ValueError(f"`input_ids` must be [batch, source_length] with batch ≥ 1 and source_length ≥ 1, got "
                             f"shape {list(input_ids.shape)}.")
        attention_mask = (np.ones_like(input_ids) if attention_mask is None
                          else np.asarray(attention_mask, dtype=np.int64))
        self._check_source(input_ids, attention_mask)
        defaults = self.manifest["generation"]
        if num_beams is None:
            num_beams = defaults["num_beams"] or 1
        if max_new_tokens is None:  # as generate(): max_length counts the start token; with neither set, 20 new tokens
            max_new_tokens = defaults["max_new_tokens"] or (defaults["max_length"] - 1 if defaults["max_length"] else 20)
        if length_penalty is None:  # transformers' defaults where the generation config has none
            length_penalty = 1.0 if defaults["length_penalty"] is None else defaults["length_penalty"]
        if early_stopping is None:
            early_stopping = defaults["early_stopping"] or False
        for name, value, low in (("num_beams", num_beams, 1), ("max_new_tokens", max_new_tokens, 1),
                                 ("num_return_sequences", num_return_sequences, 1),
                                 ("min_new_tokens", min_new_tokens, 0)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
                raise ValueError(f"`{name}` must be an integer ≥ {low}, got {value!r}.")
        if num_return_sequences > num_beams:
            raise ValueError(f"`num_return_sequences` ({num_return_sequences}) must be ≤ `num_beams` ({num_beams}).")
        coverage_penalty, length_penalty_style = self._beam_penalties(coverage_penalty, length_penalty_style, num_beams)
        options = dict(num_beams=num_beams, max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens,
                       length_penalty=length_penalty, early_stopping=early_stopping,
                       num_return_sequences=num_return_sequences, output_alignments=output_alignments,
                       coverage_penalty=coverage_penalty, length_penalty_style=length_penalty_style)
        slices = min(self.batch_threads, input_ids.shape[0])
        if slices == 1:
            return self._search(input_ids, attention_mask, **options)
        with ThreadPoolExecutor(slices) as pool:  # the sources are independent: any split decodes the same
            outputs = list(pool.map(lambda rows: self._search(input_ids[rows], attention_mask[rows], **options),
                                    np.array_split(np.arange(input_ids.shape[0]), slices)))
        return _joined(outputs, fill=self.manifest["pad_token_id"] if num_beams == 1
                       else self.manifest["pad_token_id"] or self.manifest["eos_token_id"][0])

    def _search(self, input_ids: np.ndarray, attention_mask: np.ndarray, num_beams: int, max_new_tokens: int,
                min_new_tokens: int, length_penalty: float, early_stopping: bool | str, num_return_sequences: int,
                output_alignments: bool, coverage_penalty: float, length_penalty_style: str) -> SearchOutput:
        """``generate`` of checked sources and options, in this thread."""
        encoded, state = self.encode(input_ids, attention_mask)
        encoded = {name: value for name, value in encoded.items() if name in self.step_inputs}
        batch_size = input_ids.shape[0]
        if num_beams > 1:
            rows = np.repeat(np.arange(batch_size), num_beams)
            encoded, state = self._rows(encoded, rows), self._rows(state, rows)

        fetches = ["top_log_probs", "top_tokens", *self.next_state_names] + ["attention"] * output_alignments
        vocab_size = self.manifest["vocab_size"]

        def step(tokens: np.ndarray, state: dict, top_k: int) -> tuple[np.ndarray, np.ndarray, dict, np.ndarray]:
            feeds = {"tokens": tokens, "top_k": np.array(min(top_k, vocab_size), dtype=np.int64), **encoded, **state}
            log_probs, ids, *next_state = self.decoder.run(fetches, feeds)
            attention = next_state.pop() if output_alignments else None
            return log_probs, ids, dict(zip(self.state_names, next_state)), attention

        special = dict(start_id=self.manifest["decoder_start_token_id"], eos_ids=self.manifest["eos_token_id"],
                       pad_id=self.manifest["pad_token_id"], max_new_tokens=max_new_tokens,
                       min_new_tokens=min_new_tokens, output_alignments=output_alignments)
        if num_beams == 1:
            if num_return_sequences != 1:
                raise ValueError("`num_return_sequences` > 1 needs beam search (`num_beams` > 1).")
            return self._greedy(encoded, state, batch_size, **special)

        def penalty(state: dict, rows: np.ndarray) -> np.ndarray:
            """cp = β Σ_j log(min(Σ_t α_tj, 1)) over the real positions (a never-attended one counts log 1e-10)."""
            covered = np.log(np.clip(state["coverage"][rows], np.float32(1e-10), np.float32(1)))
            return np.float32(coverage_penalty) * (covered * encoded["mask"][rows]).sum(-1, dtype=np.float32)

        return beam_search(step, self._rows, state, batch_size, num_beams, length_penalty=length_penalty,
                           early_stopping=early_stopping, num_return_sequences=num_return_sequences,
                           length_penalty_style=length_penalty_style,
                           coverage_penalty=penalty if coverage_penalty else None, **special)

    def _beam_penalties(self, coverage_penalty: float | None, length_penalty_style: str | None,
                        num_beams: int) -> tuple[float, str]:
        """The GNMT options, checked as generate() checks them (``search.check_beam_penalties``); the model's own
        ones (its generation config's) apply to beam search only."""
        defaults = self.manifest["generation"] if num_beams > 1 else {}
        if coverage_penalty is None:
            coverage_penalty = defaults.get("coverage_penalty") or 0.0
        if length_penalty_style is None:
            length_penalty_style = defaults.get("length_penalty_style") or "transformers"
        if (isinstance(coverage_penalty, bool) or not isinstance(coverage_penalty, (int, float, np.floating))
                or not np.isfinite(coverage_penalty) or coverage_penalty < 0):
            raise ValueError(f"`coverage_penalty` must be a finite number ≥ 0 (GNMT's β; 0 turns it off), got "
                             f"{coverage_penalty!r}.")
        if length_penalty_style not in ("transformers", "gnmt"):
            raise ValueError(f"`length_penalty_style` must be one of ('transformers', 'gnmt'), got "
                             f"{length_penalty_style!r}.")
        if coverage_penalty and "coverage" not in self.state_names:
            raise ValueError(f"`coverage_penalty={coverage_penalty}` scores the attention weights, and this model has "
                             "no attention: leave coverage_penalty at 0.")
        if (coverage_penalty or length_penalty_style == "gnmt") and num_beams == 1:
            raise ValueError("`coverage_penalty` and `length_penalty_style='gnmt'` are for beam search only "
                             "(num_beams > 1).")
        return float(coverage_penalty), length_penalty_style

    def _greedy(self, encoded: dict, state: dict, batch_size: int, start_id: int, eos_ids: list[int], pad_id: int,
                max_new_tokens: int, min_new_tokens: int, output_alignments: bool) -> SearchOutput:
        """Greedy search in one call of the greedy graph (``onnx_greedy``): its loop runs the decoder steps."""
        tokens, log_probs, attention = self.greedy.run(None, {
            "start_tokens": np.full(batch_size, start_id, dtype=np.int64), "max_new_tokens": np.array(max_new_tokens),
            "min_new_tokens": np.array(min_new_tokens), **encoded,
            **{f"initial_{name}": value for name, value in state.items()}})
        sequences = np.concatenate([np.full((batch_size, 1), start_id, dtype=np.int64), tokens.T], axis=1)
        alignments = None
        if output_alignments:
            alignments = [attention[:generated_length(sequences[row], eos_ids), row] for row in range(batch_size)]
        return SearchOutput(sequences, log_probs.T, alignments)

    def _check_source(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> None:
        vocab_size = self.manifest["vocab_size"]
        if input_ids.min() < 0 or input_ids.max() >= vocab_size:
            raise ValueError(f"`input_ids` must be in [0, {vocab_size}), got values from {input_ids.min()} to "
                             f"{input_ids.max()}.")
        if attention_mask.shape != input_ids.shape or not np.isin(attention_mask, (0, 1)).all():
            raise ValueError(f"`attention_mask` must be 0/1 of the shape of `input_ids` {list(input_ids.shape)}.")
        longest = self.manifest.get("max_source_length")  # absent from folders exported before it was written
        if longest is not None and input_ids.shape[1] > longest:
            raise ValueError(f"`input_ids` has {input_ids.shape[1]} source positions; this model's attention scores at "
                             f"most max_source_positions={longest}.")
        lengths = attention_mask.sum(-1)
        if (lengths == 0).any() or (attention_mask != (np.arange(input_ids.shape[1]) < lengths[:, None])).any():
            raise ValueError("`attention_mask` must be right padding, each row with at least one real token "
                             "([1, 1, 0]): the exported encoder reads sources left-aligned.")

    def translate(self, texts: Sequence[str], batch_size: int = 32, output_alignments: bool = False,
                  **generate_kwargs) -> list[OnnxTranslation]:
        """Decode ``texts`` with the exported tokenizer; keyword arguments as ``generate``."""
        if isinstance(texts, str):
            raise ValueError("`texts` must be a list of strings, got a string (wrap a single text in a list).")
        texts = list(texts)
        blank = [index for index, text in enumerate(texts) if not isinstance(text, str) or not text.strip()]
        if blank:
            raise ValueError(f"`texts` must be non-blank strings; entry {blank[0]} is {texts[blank[0]]!r}.")
        results = []
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            encodings = self.tokenizer.encode_batch(batch)
            for text, encoding in zip(batch, encodings):
                warn_about_source(text, encoding.ids, self._unknown_token, self._source_config)
            longest = max(len(encoding.ids) for encoding in encodings)
            input_ids = np.full((len(batch), longest), self.manifest["pad_token_id"], dtype=np.int64)
            attention_mask = np.zeros((len(batch), longest), dtype=np.int64)
            for row, encoding in enumerate(encodings):
                input_ids[row, :len(encoding.ids)], attention_mask[row, :len(encoding.ids)] = encoding.ids, 1
            output = self.generate(input_ids, attention_mask, output_alignments=output_alignments, **generate_kwargs)
            per_source = len(output.sequences) // len(batch)
            for row, sequence in enumerate(output.sequences):
                encoding = encodings[row // per_source]
                results.append(self._translation(batch[row // per_source], encoding, sequence, output, row))
        return results

    def _translation(self, text: str, encoding, sequence: np.ndarray, output: SearchOutput,
                     row: int) -> OnnxTranslation:
        special = {self.manifest["pad_token_id"], self.manifest["decoder_start_token_id"],
                   *self.manifest["eos_token_id"]}
        generated = [int(token) for token in sequence[1:]]
        ends = [index for index, token in enumerate(generated) if token in self.manifest["eos_token_id"]]
        generated = generated[:ends[0] + 1] if ends else generated
        target_tokens = [self.tokenizer.id_to_token(token) for token in generated]
        alignment = None
        if output.alignments is not None:
            alignment = output.alignments[row][:len(generated), :len(encoding.ids)]
        score = float(output.scores[row]) if output.scores.ndim == 1 else None
        return OnnxTranslation(text, self.tokenizer.decode([t for t in generated if t not in special]),
                               list(encoding.tokens), target_tokens, alignment, score)


def _joined(outputs: list[SearchOutput], fill: int) -> SearchOutput:
    """The outputs of consecutive slices of a batch as the output of the whole batch: the sequences [R, 1 + T]
    padded with ``fill`` to the longest (as one search pads the rows that ended early), greedy search's per-token
    log-probabilities [R, T] with 0 (as after an EOS)."""
    steps = max(output.sequences.shape[1] for output in outputs) - 1

    def padded(values: np.ndarray, width: int, value) -> np.ndarray:
        return np.pad(values, ((0, 0), (0, width - values.shape[1])), constant_values=value)

    sequences = np.concatenate([padded(output.sequences, 1 + steps, fill) for output in outputs])
    scores = np.concatenate([output.scores if output.scores.ndim == 1 else padded(output.scores, steps, 0)
                             for output in outputs])
    alignments = None if outputs[0].alignments is None else [row for output in outputs for row in output.alignments]
    return SearchOutput(sequences, scores, alignments)
