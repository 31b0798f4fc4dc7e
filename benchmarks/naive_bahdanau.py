"""A naive, tutorial-style RNNsearch (Bahdanau et al., 2014): the baseline for the ratios in benchmarks/.

The math is that of RNNsearch and of ``hf_bahdanau``'s ``rnnsearch`` preset:

    h_j  = [->h_j; <-h_j]                      bidirectional GRU over the source (packed)
    s_0  = tanh(W_s <-h_1)                     the backward state at the first source token
    e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)   additive score, padding masked to -inf
    c_i  = sum_j softmax_j(e_ij) h_j
    s_i  = GRUCell([E y_{i-1}; c_i], s_{i-1})
    t_i  = maxout over pairs of  U_o s_i + C_o c_i + V_o E y_{i-1}   (one Linear over the concatenation)
    p(y_i | ...) = softmax(W_o t_i)

What is deliberately naive (the way most tutorials write it, and what our library does differently):

- the decoder is a Python loop over target steps with ``nn.GRUCell``;
- the attention keys U_a h_j are recomputed at every decoder step, although they depend only on the source;
- the deep output, the vocabulary projection and the cross-entropy run inside the loop, one step at a time;
- beam search keeps its bookkeeping (finished hypotheses) in Python lists, one source at a time.

It exists so that the speed benchmarks can report "x times the naive implementation"; it is not part of
the ``hf_bahdanau`` library and imports nothing from it. Run this file for a small smoke check.
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class NaiveBahdanau(nn.Module):
    """RNNsearch with separate source and target embeddings over one vocabulary, no dropout.

    ``encoder_hidden_size`` is per direction, so the annotations h_j have ``2 * encoder_hidden_size`` units.
    """

    def __init__(self, vocab_size: int, embedding_size: int = 256, encoder_hidden_size: int = 128,
                 hidden_size: int = 256, attention_size: int = 256, output_size: int = 256, pad_id: int = 0,
                 bos_id: int = 1, eos_id: int = 2):
        super().__init__()
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id
        self.output_size = output_size
        annotation_size = 2 * encoder_hidden_size

        # Encoder.
        self.src_embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=pad_id)
        self.encoder = nn.GRU(embedding_size, encoder_hidden_size, batch_first=True, bidirectional=True)
        self.init_proj = nn.Linear(encoder_hidden_size, hidden_size)  # W_s

        # Attention: e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j).
        self.W_a = nn.Linear(hidden_size, attention_size, bias=False)
        self.U_a = nn.Linear(annotation_size, attention_size, bias=False)
        self.v_a = nn.Linear(attention_size, 1, bias=False)

        # Decoder and deep output.
        self.tgt_embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=pad_id)
        self.decoder_cell = nn.GRUCell(embedding_size + annotation_size, hidden_size)
        self.deep_output = nn.Linear(hidden_size + annotation_size + embedding_size, 2 * output_size)
        self.out_proj = nn.Linear(output_size, vocab_size)  # W_o

    def encode(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """input_ids, attention_mask [B, S] (right-padded, every row at least one token)
        -> annotations [B, S, 2 * encoder_hidden_size] (0 on padding), mask [B, S] bool, s_0 [B, hidden_size]."""
        lengths = attention_mask.sum(dim=1).cpu()
        embedded = self.src_embedding(input_ids)
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        packed_outputs, final_states = self.encoder(packed)
        annotations, _ = pad_packed_sequence(packed_outputs, batch_first=True, total_length=input_ids.shape[1])
        # final_states [2, B, H]: index 1 is the backward direction, which ends at the first token (<-h_1).
        s_0 = torch.tanh(self.init_proj(final_states[1]))
        return annotations, attention_mask.bool(), s_0

    def attend(self, s_prev: Tensor, annotations: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """s_prev [B, hidden_size], annotations [B, S, D], mask [B, S] -> context [B, D], weights [B, S]."""
        energy = self.v_a(torch.tanh(self.W_a(s_prev).unsqueeze(1) + self.project_keys(annotations))).squeeze(2)
        energy = energy.masked_fill(~mask, float("-inf"))
        weights = F.softmax(energy, dim=1)
        context = torch.bmm(weights.unsqueeze(1), annotations).squeeze(1)
        return context, weights

    def project_keys(self, annotations: Tensor) -> Tensor:
        """U_a h_j [B, S, attention_size]. Naive: called at every step, although it depends only on the source."""
        return self.U_a(annotations)

    def decode_step(self, prev_tokens: Tensor, s_prev: Tensor, annotations: Tensor,
                    mask: Tensor) -> tuple[Tensor, Tensor]:
        """One target step. prev_tokens [B] (y_{i-1}), s_prev [B, hidden_size]
        -> logits [B, vocab_size], s_i [B, hidden_size]."""
        embedded = self.tgt_embedding(prev_tokens)
        context, _ = self.attend(s_prev, annotations, mask)
        s = self.decoder_cell(torch.cat([embedded, context], dim=1), s_prev)
        t_tilde = self.deep_output(torch.cat([s, context, embedded], dim=1))
        t = t_tilde.view(-1, self.output_size, 2).max(dim=2).values  # maxout over adjacent pairs
        return self.out_proj(t), s

    def forward(self, input_ids: Tensor, attention_mask: Tensor, decoder_input_ids: Tensor,
                labels: Tensor) -> Tensor:
        """Teacher-forced loss. input_ids, attention_mask [B, S]; decoder_input_ids [B, T] (BOS y_1 ... y_{T-1});
        labels [B, T] (y_1 ... y_T, -100 where ignored) -> mean cross-entropy per non-ignored token (scalar)."""
        annotations, mask, s = self.encode(input_ids, attention_mask)
        total_loss = annotations.new_zeros(())
        for i in range(decoder_input_ids.shape[1]):
            logits, s = self.decode_step(decoder_input_ids[:, i], s, annotations, mask)
            total_loss = total_loss + F.cross_entropy(logits, labels[:, i], ignore_index=-100, reduction="sum")
        return total_loss / (labels != -100).sum().clamp(min=1)

    @torch.no_grad()
    def greedy(self, input_ids: Tensor, attention_mask: Tensor, max_new_tokens: int) -> Tensor:
        """input_ids, attention_mask [B, S] -> tokens [B, L], L <= max_new_tokens, without BOS; each row ends
        with its EOS and is padded with pad_id after it. Stops once every row has produced EOS."""
        annotations, mask, s = self.encode(input_ids, attention_mask)
        batch_size = input_ids.shape[0]
        prev_tokens = input_ids.new_full((batch_size,), self.bos_id)
        finished = torch.zeros(batch_size, dtype=torch.bool, device=input_ids.device)
        outputs = input_ids.new_empty((batch_size, 0))
        for _ in range(max_new_tokens):
            logits, s = self.decode_step(prev_tokens, s, annotations, mask)
            prev_tokens = logits.argmax(dim=1).masked_fill(finished, self.pad_id)
            outputs = torch.cat([outputs, prev_tokens.unsqueeze(1)], dim=1)
            finished = finished | (prev_tokens == self.eos_id)
            if finished.all():
                break
        return outputs

    @torch.no_grad()
    def beam_search(self, input_ids: Tensor, attention_mask: Tensor, num_beams: int,
                    max_new_tokens: int) -> Tensor:
        """input_ids, attention_mask [B, S] -> best hypothesis per source [B, L] (without BOS, with its EOS if
        it produced one, padded with pad_id). Hypotheses are ranked by log-probability / length."""
        batch_size, k = input_ids.shape[0], num_beams
        annotations, mask, s = self.encode(input_ids, attention_mask)
        # Beam b*k + j of source b: every source's encoder outputs repeated k times.
        annotations = annotations.repeat_interleave(k, dim=0)
        mask = mask.repeat_interleave(k, dim=0)
        s = s.repeat_interleave(k, dim=0)
        scores = annotations.new_full((batch_size, k), float("-inf"))
        scores[:, 0] = 0.0  # all beams start identical: keep one alive so the first top-k is not k copies
        history = input_ids.new_full((batch_size * k, 1), self.bos_id)
        finished = [[] for _ in range(batch_size)]  # per source: (normalised score, tokens)
        steps = 0
        for steps in range(1, max_new_tokens + 1):
            logits, s = self.decode_step(history[:, -1], s, annotations, mask)
            vocab_size = logits.shape[1]
            candidates = (scores.view(-1, 1) + F.log_softmax(logits, dim=1)).view(batch_size, k * vocab_size)
            # 2k candidates: at most k of them end in EOS, so at least k stay alive.
            top_scores, top_ids = candidates.topk(2 * k, dim=1)
            rows, words, new_scores = [], [], []
            for b, (source_scores, source_ids) in enumerate(zip(top_scores.tolist(), top_ids.tolist())):
                alive = []
                for rank, (score, flat_id) in enumerate(zip(source_scores, source_ids)):
                    row, word = b * k + flat_id // vocab_size, flat_id % vocab_size
                    if word != self.eos_id:
                        alive.append((score, row, word))
                    elif rank < k and len(finished[b]) < k and score > float("-inf"):
                        finished[b].append((score / steps, history[row, 1:].tolist() + [word]))
                    if len(alive) == k:
                        break
                for score, row, word in alive:
                    rows.append(row)
                    words.append(word)
                    new_scores.append(score)
            rows = torch.tensor(rows, device=history.device)
            s = s.index_select(0, rows)
            history = torch.cat([history.index_select(0, rows), history.new_tensor(words).unsqueeze(1)], dim=1)
            scores = torch.tensor(new_scores, dtype=scores.dtype, device=scores.device).view(batch_size, k)
            if all(len(hypotheses) >= k for hypotheses in finished):
                break

        best = []
        for b in range(batch_size):
            hypotheses = finished[b]
            if len(hypotheses) < k:  # ran out of steps: the unfinished beams compete too
                hypotheses = hypotheses + [(scores[b, j].item() / max(steps, 1), history[b * k + j, 1:].tolist())
                                           for j in range(k)]
            best.append(max(hypotheses, key=lambda hypothesis: hypothesis[0])[1])
        output = input_ids.new_full((batch_size, max(len(tokens) for tokens in best)), self.pad_id)
        for b, tokens in enumerate(best):
            output[b, :len(tokens)] = torch.tensor(tokens, dtype=output.dtype)
        return output


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab, pad, bos, eos = 50, 0, 1, 2
    model = NaiveBahdanau(vocab, embedding_size=16, encoder_hidden_size=16, hidden_size=32, attention_size=24,
                          output_size=16, pad_id=pad, bos_id=bos, eos_id=eos)

    # A padded batch: a copy task (target = source, then EOS), right-padded.
    batch_size, max_len = 6, 9
    src_lengths = torch.randint(3, max_len + 1, (batch_size,))
    src_lengths[0] = max_len
    positions = torch.arange(max_len)
    attention_mask = (positions < src_lengths.unsqueeze(1)).long()
    input_ids = torch.randint(3, vocab, (batch_size, max_len)).masked_fill(attention_mask == 0, pad)
    labels = torch.full((batch_size, max_len + 1), -100)
    labels[:, :max_len] = input_ids.masked_fill(attention_mask == 0, -100)
    labels[torch.arange(batch_size), src_lengths] = eos
    decoder_input_ids = torch.cat([torch.full((batch_size, 1), bos), labels[:, :-1]], dim=1)
    decoder_input_ids = decoder_input_ids.masked_fill(decoder_input_ids == -100, pad)

    loss = model(input_ids, attention_mask, decoder_input_ids, labels)
    loss.backward()
    assert torch.isfinite(loss), loss
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    print(f"input_ids {tuple(input_ids.shape)}, decoder_input_ids {tuple(decoder_input_ids.shape)}, "
          f"initial loss {loss.item():.3f} (ln V = {torch.log(torch.tensor(float(vocab))).item():.3f})")

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(20):
        optimizer.zero_grad()
        loss = model(input_ids, attention_mask, decoder_input_ids, labels)
        loss.backward()
        optimizer.step()
    print(f"loss after 20 Adam steps {loss.item():.3f}")

    model.eval()
    greedy = model.greedy(input_ids, attention_mask, max_new_tokens=12)
    beam_1 = model.beam_search(input_ids, attention_mask, num_beams=1, max_new_tokens=12)
    beam_4 = model.beam_search(input_ids, attention_mask, num_beams=4, max_new_tokens=12)
    print(f"greedy {tuple(greedy.shape)}, beam-1 {tuple(beam_1.shape)}, beam-4 {tuple(beam_4.shape)}")
    assert torch.equal(greedy, beam_1), (greedy, beam_1)
    # A padded batch decodes like each sentence alone.
    for b in range(batch_size):
        alone = model.greedy(input_ids[b:b + 1, :src_lengths[b]], attention_mask[b:b + 1, :src_lengths[b]], 12)
        assert torch.equal(alone[0], greedy[b, :alone.shape[1]]), b
        assert (greedy[b, alone.shape[1]:] == pad).all(), b
    print("ok: finite loss and gradients, beam search with one beam == greedy, batch == sentence alone")
