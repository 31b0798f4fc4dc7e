"""Train a tokenizer on the training texts with the `tokenizers` library, wrapped as `PreTrainedTokenizerFast`.

    tokenizer = train_tokenizer(texts, kind="char")   # or "word", "g2p", "bpe", "unigram"
    tokenizer.save_pretrained(output_dir)             # reload with AutoTokenizer.from_pretrained(output_dir)

Every kind reserves the same ids as `BahdanauConfig`'s defaults: ``<pad>`` = 0, ``<s>`` = 1 (the decoder
start), ``</s>`` = 2 (appended to every encoded sequence), ``<unk>`` = 3; extra special tokens follow.

| kind      | model                      | pre-tokenisation                | decoding           |
| --------- | -------------------------- | ------------------------------- | ------------------ |
| `char`    | WordLevel over characters  | every character (spaces too)    | characters joined  |
| `word`    | WordLevel over words       | `\\w+` and punctuation runs;    | the text's spacing |
|           |                            | ``‿`` marks one glued to the    | (WordPiece decoder |
|           |                            | previous                        | with prefix ``‿``) |
| `g2p`     | WordLevel over symbols     | ARPAbet phonemes (`AO1`) whole, | symbols joined by " " |
|           |                            | other characters one by one     |                    |
| `bpe`     | BPE                        | Metaspace (SentencePiece style) | Metaspace          |
| `unigram` | Unigram (SentencePiece LM) | Metaspace                       | Metaspace          |

The `word` kind decodes ``2021-04-14 a.m.`` as written: its tokens are ``2021 ‿- ‿04 ‿- ‿14 a ‿. ‿m ‿.``, a
piece glued to the one before it carrying ``‿`` (the role of WordPiece's ``##``), so ``14`` and ``‿14`` are two
tokens; a piece after a space or at the start is the bare word, as words given with ``is_split_into_words=True``
are. Runs of whitespace decode as one space; a ``▁`` or ``‿`` that starts a piece of the text does not come back.

All kinds keep character offsets (``return_offsets_mapping=True``), and ``word_ids()`` follows the words given
with ``is_split_into_words=True`` (token classification relies on both). On plain text, ``word_ids()`` numbers the
pre-tokens: characters for `char`, words and punctuation runs for `word`, space-separated words otherwise.

A saved tokenizer is a plain fast one (tokenizer_config.json names a transformers class and has no ``auto_map``), yet
``AutoTokenizer`` reads a model folder's config.json first: where hf_bahdanau is not installed it asks whether to run
the config's code (and, refused, warns about model type ``bahdanau``). There, load a model folder's tokenizer with
``AutoTokenizer.from_pretrained(folder, trust_remote_code=True)``, as the model card does, or with
``PreTrainedTokenizerFast.from_pretrained(folder)``, which runs no code of the folder.
"""

from collections.abc import Iterable, Iterator, Sequence

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # ids 0, 1, 2, 3 = BahdanauConfig's pad/bos(decoder start)/eos defaults
TOKENIZER_KINDS = ("char", "word", "g2p", "bpe", "unigram")
# g2p: a run of capitals with an optional stress digit is one phoneme ("AO1", "SH"); anything else but spaces is a
# character: "forbush" -> f o r b u s h, "F AO1 R B UH2 SH" -> F AO1 R B UH2 SH (written words are lower case)
G2P_SYMBOL = Regex(r"[A-Z]+[0-9]?|\S")
DEFAULT_SUBWORD_VOCAB_SIZE = 8000
# word: a piece glued to the previous one carries GLUED; marks are prepended with zero width (offsets stay the text's)
WORD_START, GLUED = "▁", "‿"
WORD_PIECE = Regex(rf"{WORD_START}?(?:\w+|[^\w\s{WORD_START}]+)")  # a `\w+` or punctuation run, with its start mark


def _model_and_trainer(kind: str, vocab_size: int | None, special_tokens: list[str]):
    """The `tokenizers` model to train and its trainer; `vocab_size=None` keeps every char/word seen."""
    if kind in ("char", "word", "g2p"):
        size = vocab_size if vocab_size is not None else 2**31 - 1
        return models.WordLevel(unk_token=UNK), trainers.WordLevelTrainer(
            vocab_size=size, min_frequency=1, special_tokens=special_tokens, show_progress=False
        )
    size = vocab_size if vocab_size is not None else DEFAULT_SUBWORD_VOCAB_SIZE
    if kind == "bpe":
        return models.BPE(unk_token=UNK), trainers.BpeTrainer(
            vocab_size=size, special_tokens=special_tokens, show_progress=False
        )
    return models.Unigram(), trainers.UnigramTrainer(
        vocab_size=size, special_tokens=special_tokens, unk_token=UNK, show_progress=False
    )


def _pre_tokenizer_and_decoder(kind: str):
    if kind == "char":
        return pre_tokenizers.Split(Regex("."), behavior="isolated"), decoders.Fuse()
    if kind == "word":
        # "on 27/12/2010," -> on | 27/12/2010, -> ▁on ▁27/12/2010, (▁: after a space) -> ▁on ▁27 / 12 / 2010 ,
        # -> ‿▁on ‿▁27 ‿/ ‿12 ‿/ ‿2010 ‿, (‿ before each piece) -> on 27 ‿/ ‿12 ‿/ ‿2010 ‿, (‿▁ removed)
        marked_pieces = pre_tokenizers.Sequence([
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=False),
            pre_tokenizers.Split(WORD_PIECE, behavior="isolated"),
            pre_tokenizers.Metaspace(replacement=GLUED, prepend_scheme="always", split=False),
            pre_tokenizers.Split(GLUED + WORD_START, behavior="removed"),
        ])
        return marked_pieces, decoders.WordPiece(prefix=GLUED, cleanup=False)
    if kind == "g2p":
        return pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                        pre_tokenizers.Split(G2P_SYMBOL, behavior="isolated")]), None
    return pre_tokenizers.Metaspace(), decoders.Metaspace()


def _strings(texts: Iterable[str]) -> Iterator[str]:
    """``texts``, each checked to be a string (a number read from a data file is not one)."""
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"`texts[{index}]` must be a string, got the {type(text).__name__} {text!r}.")
        yield text


def train_tokenizer(
    texts: Iterable[str],
    kind: str = "char",
    vocab_size: int | None = None,
    lowercase: bool = False,
    extra_special_tokens: Sequence[str] = (),
) -> PreTrainedTokenizerFast:
    """Train a `kind` tokenizer on `texts` and return it as a `PreTrainedTokenizerFast`.

    vocab_size: the size including the special tokens; None keeps every character (char), word (word) or symbol
    (g2p) seen, and means 8000 for bpe/unigram. Encoding appends ``</s>`` to every sequence.
    """
    if kind not in TOKENIZER_KINDS:
        raise ValueError(f"`kind` must be one of {list(TOKENIZER_KINDS)}, got {kind!r}.")
    special_tokens = list(SPECIAL_TOKENS) + [token for token in extra_special_tokens if token not in SPECIAL_TOKENS]
    if vocab_size is not None and vocab_size <= len(special_tokens):
        raise ValueError(
            f"`vocab_size` must exceed the {len(special_tokens)} special tokens {special_tokens}, got {vocab_size}."
        )
    model, trainer = _model_and_trainer(kind, vocab_size, special_tokens)
    tokenizer = Tokenizer(model)
    if lowercase:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer, decoder = _pre_tokenizer_and_decoder(kind)
    if decoder is not None:
        tokenizer.decoder = decoder
    tokenizer.train_from_iterator(_strings(texts), trainer=trainer)
    if [tokenizer.token_to_id(token) for token in special_tokens] != list(range(len(special_tokens))):
        raise RuntimeError(f"the {kind} trainer did not give the special tokens {special_tokens} the first ids")
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B:1 {EOS}:1", special_tokens=[(EOS, SPECIAL_TOKENS.index(EOS))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        extra_special_tokens=special_tokens[len(SPECIAL_TOKENS):],
        model_input_names=["input_ids", "attention_mask"],
        clean_up_tokenization_spaces=False,
    )
