"""Batches by tokens (fairseq's ``--max-tokens``, OpenNMT-py's and Joey NMT's token batching): ``--max_tokens_per_batch
N`` fills each training batch with as many rows as fit in N padded tokens instead of a fixed number of rows.

A batch of rows R holds ``|R| x (longest source + longest target)`` tokens once padded (the source and the labels are
each padded to their longest), and that is what stays at or under N. The rows are sorted by (source length, target
length) and cut greedily into batches: long rows share small batches, short rows big ones, and little of either is
padding. The cuts depend only on the lengths, so every epoch has the same number of batches (what Trainer counts its
steps and its schedule by). Each epoch then draws, from ``seed`` and the epoch, which of the rows of equal lengths go
into which batch and the order of the batches (shuffled by bucket). A row longer than N on its own is refused (a
ValueError naming it), never trained alone or dropped silently.

Under DDP, accelerate's ``BatchSamplerShard`` deals batch k to process k mod P, and repeats the first batches when
their count is not a multiple of P (``even_batches``; without it the processes would take different numbers of steps
and wait for each other forever). ``num_processes=P`` makes the count a multiple of P by splitting the batches of
most rows in two, so every row is trained exactly once per epoch on one of the processes.
"""

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow.compute
from torch.utils.data import Sampler

__all__ = ["TokenBatchSampler", "check_max_tokens", "padded_tokens", "row_lengths"]


def check_max_tokens(max_tokens_per_batch: int) -> None:
    """A ValueError unless ``max_tokens_per_batch`` is a positive integer."""
    if isinstance(max_tokens_per_batch, bool) or not isinstance(max_tokens_per_batch, int) or max_tokens_per_batch < 1:
        raise ValueError(f"`--max_tokens_per_batch` must be a positive number of tokens (source + target, padding "
                         f"included), got {max_tokens_per_batch!r}.")


def row_lengths(dataset, column: str) -> np.ndarray:
    """[rows] the number of tokens in each row's ``column`` (a list column of a ``datasets.Dataset``), read from its
    Arrow table without turning the lists into Python objects; a ValueError for a dataset without known lengths (an
    ``IterableDataset``, ``--streaming``)."""
    if not hasattr(dataset, "with_format") or not hasattr(dataset, "__len__"):
        raise ValueError(f"`--max_tokens_per_batch` sorts the training rows by length, which needs a dataset read into "
                         f"a table (a `datasets.Dataset`), got {type(dataset).__name__}: leave out `--streaming`, or "
                         f"`--max_tokens_per_batch`.")
    lengths = pyarrow.compute.list_value_length(dataset.with_format("arrow")[column])
    return lengths.to_numpy(zero_copy_only=False).astype(np.int64)


def padded_tokens(source_lengths: np.ndarray, target_lengths: np.ndarray) -> int:
    """The tokens of one batch of rows once padded: rows x (longest source + longest target)."""
    return len(source_lengths) * (int(source_lengths.max()) + int(target_lengths.max()))


class TokenBatchSampler(Sampler[list[int]]):
    """Training batches of at most ``max_tokens_per_batch`` padded tokens (see the module's docstring).

    source_lengths, target_lengths: [rows] each row's tokens; seed: with the epoch (``set_epoch``, which Trainer
    calls), which rows of equal lengths share a batch and the batches' order; num_processes: the number of batches is
    a multiple of it. Yields lists of row indices; ``len()`` is the number of batches in an epoch.
    """

    def __init__(self, source_lengths: Sequence[int] | np.ndarray, target_lengths: Sequence[int] | np.ndarray,
                 max_tokens_per_batch: int, seed: int = 0, num_processes: int = 1) -> None:
        check_max_tokens(max_tokens_per_batch)
        self.source_lengths = np.asarray(source_lengths, dtype=np.int64)
        self.target_lengths = np.asarray(target_lengths, dtype=np.int64)
        if self.source_lengths.shape != self.target_lengths.shape or self.source_lengths.ndim != 1:
            raise ValueError(f"`source_lengths` and `target_lengths` must be two lists of one length per row, got "
                             f"shapes {self.source_lengths.shape} and {self.target_lengths.shape}.")
        if num_processes < 1 or len(self.source_lengths) < num_processes:
            raise ValueError(f"`num_processes` must be between 1 and the {len(self.source_lengths)} training rows "
                             f"(each process needs a batch), got {num_processes}.")
        totals = self.source_lengths + self.target_lengths
        if totals.max() > max_tokens_per_batch:
            row = int(totals.argmax())
            raise ValueError(f"`--max_tokens_per_batch` {max_tokens_per_batch} is below the {totals[row]} tokens of "
                             f"training row {row} (source {self.source_lengths[row]} + target "
                             f"{self.target_lengths[row]}), which no batch could hold: raise it to at least "
                             f"{totals.max()}, or shorten the rows with `--max_source_length` / `--max_target_length`.")
        self.max_tokens_per_batch, self.seed, self.num_processes = max_tokens_per_batch, seed, num_processes
        self.epoch = 0
        # Cut where the rows sorted by (source, target) length are: each epoch's order has the same lengths at the
        # same positions, so the same cuts.
        by_length = np.lexsort((self.target_lengths, self.source_lengths))
        self.bounds = self._split_to_multiple(self._cut(by_length), num_processes)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.bounds)

    def __iter__(self) -> Iterator[list[int]]:
        generator = np.random.default_rng([self.seed, self.epoch])
        tie_breaker = generator.random(len(self.source_lengths))  # rows of equal lengths: a new order each epoch
        rows = np.lexsort((tie_breaker, self.target_lengths, self.source_lengths))
        for batch in generator.permutation(len(self.bounds)):
            start, end = self.bounds[batch]
            yield rows[start:end].tolist()

    def _cut(self, rows: np.ndarray) -> list[tuple[int, int]]:
        """[(start, end)] positions in ``rows`` (sorted by length) of each batch, as many rows as fit greedily."""
        bounds, start, longest_source, longest_target = [], 0, 0, 0
        for position, row in enumerate(rows.tolist()):
            source = max(longest_source, int(self.source_lengths[row]))
            target = max(longest_target, int(self.target_lengths[row]))
            if (position - start + 1) * (source + target) > self.max_tokens_per_batch:
                bounds.append((start, position))
                start, source, target = position, int(self.source_lengths[row]), int(self.target_lengths[row])
            longest_source, longest_target = source, target
        return bounds + [(start, len(rows))]

    @staticmethod
    def _split_to_multiple(bounds: list[tuple[int, int]], num_processes: int) -> list[tuple[int, int]]:
        """``bounds`` with the batches of most rows (the first of equal ones) split in two halves until their count is
        a multiple of ``num_processes``: half a batch holds at most its tokens."""
        bounds = list(bounds)
        while len(bounds) % num_processes:
            largest = max(range(len(bounds)), key=lambda k: bounds[k][1] - bounds[k][0])
            start, end = bounds[largest]
            if end - start == 1:
                raise ValueError(f"The {len(bounds)} training rows each fill a batch of their own, and "
                                 f"{num_processes} processes cannot share them evenly without repeating one: raise "
                                 f"`--max_tokens_per_batch`.")
            middle = (start + end + 1) // 2
            bounds[largest:largest + 1] = [(start, middle), (middle, end)]
        return bounds
