"""hf-bahdanau-explore and ``explorer_page``: the page's embedded data round-trip, wrong predictions come first and
are counted, text that looks like HTML stays text; the console script decodes what translate() decodes; bad inputs
are errors that name them; and in a real headless chromium, hovering over an output token shows its row of weights,
the "only wrong" filter and the pages work, and training/explorer_screenshot.py --hover waits for the highlight.

The browser tests are marked ``browser`` (``pytest -m browser tests/test_explore.py``). Without selenium
(``pip install selenium``) or chromium and its driver (``apt-get install chromium chromium-driver``) they are skipped
with a message that says so.
"""

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from conftest import tiny_model
from hf_bahdanau.modeling.translation import Translation, translate
from hf_bahdanau.explorer import Explorer
from hf_bahdanau.explorer.page import explorer_page, main
from hf_bahdanau.families import FAMILIES
from test_cli import SENTENCES, saved_model  # noqa: F401  (saved_model: a module fixture, a tiny model and tokenizer)
from training.explorer_screenshot import BrowserMissing, headless_chromium, screenshot

EMBEDDED = re.compile(r'<script type="application/json" id="explorer-data">(.*?)</script>', re.DOTALL)
ROUNDING = 0.5e-4 + 1e-9  # the page keeps 4 decimals of each weight


def page_data(page: str) -> dict:
    """The JSON the page's script reads, parsed back out of the HTML."""
    (embedded,) = EMBEDDED.findall(page)
    return json.loads(embedded)


def made_up(source: str, prediction: str, alignment: list[list[float]] | None = None, p_gen=None,
            seed: int = 0) -> Translation:
    """A Translation of the source's characters and the prediction's words, each ending in </s>; its alignment is
    ``alignment`` or a random one (rows sum to 1)."""
    source_tokens, target_tokens = [*source, "</s>"], [*prediction.split(), "</s>"]
    if alignment is None:
        generator = torch.Generator().manual_seed(seed)
        weights = torch.rand(len(target_tokens), len(source_tokens), generator=generator).softmax(-1)
    else:
        weights = torch.tensor(alignment)
    return Translation(source, prediction, source_tokens, target_tokens, weights,
                       None if p_gen is None else torch.tensor(p_gen))


# The page's data ---------------------------------------------------------------------------------------------------

def test_the_embedded_data_round_trip():
    translations = [made_up("le 3", "3 mars", seed=1), made_up("ab", "x y z", p_gen=[0.9, 0.125, 0.5, 1.0], seed=2),
                    made_up("q", "r", seed=3)]
    data = page_data(explorer_page(translations, title="dates", page_size=7))
    assert data["title"] == "dates" and data["page_size"] == 7 and data["has_references"] is False
    assert [sentence["number"] for sentence in data["sentences"]] == [1, 2, 3]  # no references: the input's order
    for sentence, translation in zip(data["sentences"], translations):
        assert sentence["source"] == translation.source and sentence["prediction"] == translation.translation
        assert sentence["source_tokens"] == translation.source_tokens
        assert sentence["target_tokens"] == translation.target_tokens
        assert sentence["references"] is None and sentence["correct"] is None
        torch.testing.assert_close(torch.tensor(sentence["alignment"], dtype=torch.float64),
                                   translation.alignment.double(), atol=ROUNDING, rtol=0)
    assert data["sentences"][1]["p_gen"] == [0.9, 0.125, 0.5, 1.0]
    assert data["sentences"][0]["p_gen"] is None
    assert data["page_metrics"] == [["sentences", "3"]]


class StartTags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def test_text_that_looks_like_html_stays_text():
    source, prediction, title = "</script><b>x</b><!--", "<i>y</i> </SCRIPT>", "<img src=x onerror=alert(1)>"
    page = explorer_page([made_up(source, prediction)], references=[["</script><b>x</b>"]], title=title)
    parser = StartTags()
    parser.feed(page)
    assert parser.tags.count("script") == 2 and not {"b", "i", "img"} & set(parser.tags)
    assert page.count("</script>") == 2 and "<title>&lt;img src=x onerror=alert(1)&gt;</title>" in page
    (sentence,) = page_data(page)["sentences"]
    assert sentence["source"] == source and sentence["prediction"] == prediction
    assert sentence["source_tokens"][:9] == list("</script>")
    assert sentence["references"] == ["</script><b>x</b>"] and sentence["correct"] is False


def test_wrong_predictions_come_first_and_are_counted():
    cases = [  # (prediction, references, right)
        ("a b", ["a b"], True),
        ("c d", ["x"], False),
        ("e  f ", ["zz", "e f"], True),  # the second alternative, after whitespace normalisation
        ("g", ["G"], False),  # case counts
        ("h i", ["hi"], False),  # so do the spaces inside
        ("j", [" j\t"], True),
    ]
    translations = [made_up("src", prediction, seed=n) for n, (prediction, _, _) in enumerate(cases)]
    data = page_data(explorer_page(translations, references=[references for _, references, _ in cases]))
    assert [sentence["number"] for sentence in data["sentences"]] == [2, 4, 5, 1, 3, 6]
    assert {sentence["number"]: sentence["correct"] for sentence in data["sentences"]} == {
        number: right for number, (_, _, right) in enumerate(cases, 1)}
    assert data["has_references"] is True
    assert data["page_metrics"] == [["sentences", "6"], ["exact match", "50.0 % (3 / 6)"], ["wrong", "3"]]


def test_the_model_summary_and_metrics_tables():
    data = page_data(explorer_page(
        [made_up("a", "b")], decoding="beam search, 5 beams",
        model_summary={"rnn_type": "gru", "bidirectional": True, "parameters": 2497572},
        metrics={"epoch": 3.0, "eval_bleu": 12.5, "eval_samples": 1000, "predict_bleu": 11.25, "train_loss": 1.5}))
    assert data["model_summary"] == [["rnn_type", "gru"], ["bidirectional", "true"], ["parameters", "2,497,572"]]
    # every column has a heading (the keys without a split prefix used to sit in a fourth column headed "")
    assert data["model_metrics"] == {"columns": ["metric", "train", "eval", "predict", "whole run"], "rows": [
        ["epoch", "", "", "", "3"], ["bleu", "", "12.5", "11.25", ""], ["samples", "", "1,000", "", ""],
        ["loss", "1.5", "", "", ""]]}
    assert page_data(explorer_page([made_up("a", "b")]))["model_metrics"] == {"columns": [], "rows": []}
    assert data["page_metrics"][-1] == ["decoding", "beam search, 5 beams"]


def test_bad_arguments_are_errors_that_name_them():
    good = made_up("abc", "x y")
    with pytest.raises(ValueError, match=r"`translations` must be a non-empty list"):
        explorer_page([])
    with pytest.raises(ValueError, match=r"`references` must hold one list of reference strings per translation "
                                         r"\(2\), got 1"):
        explorer_page([good, good], references=[["x y"]])
    with pytest.raises(ValueError, match=r"`references\[0\]` must be a non-empty list of strings"):
        explorer_page([good], references=["x y"])
    with pytest.raises(ValueError, match=r"`translations\[1\]` has no alignment: decode with "
                                         r"translate\(\.\.\., output_alignments=True\)"):
        explorer_page([good, Translation("a", "b", ["a"], ["b"])])
    wrong_shape = Translation("abc", "x y", good.source_tokens, good.target_tokens, good.alignment.t())
    with pytest.raises(ValueError, match=re.escape("`translations[0].alignment` must have shape "
                                                   "[len(target_tokens), len(source_tokens)] = [3, 4], got [4, 3]")):
        explorer_page([wrong_shape])
    with pytest.raises(ValueError, match=re.escape("`translations[0].p_gen` must have shape [len(target_tokens)] = "
                                                   "[3], got [2]")):
        explorer_page([made_up("abc", "x y", p_gen=[0.5, 0.5])])
    broken = made_up("abc", "x y")
    broken.alignment[1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"`translations\[0\].alignment` holds NaN"):
        explorer_page([broken])
    with pytest.raises(ValueError, match=r"`page_size` must be a positive integer, got 0"):
        explorer_page([good], page_size=0)


def test_the_old_summarise_model_gives_a_seq2seq_models_fields(saved_model):
    from hf_bahdanau.explorer.alignment_page import SUMMARY_FIELDS
    from hf_bahdanau.explorer.page import summarise_model

    _, model, _ = saved_model
    summary = summarise_model(model)
    assert list(summary) == [*SUMMARY_FIELDS, "parameters"] and summary["parameters"] == model.num_parameters()
    assert summarise_model(model, ["rnn_type", "no_such_field"]) == {"rnn_type": "gru",
                                                                     "parameters": model.num_parameters()}


def test_the_summary_line_counts_the_items_and_the_wrong_ones():
    from hf_bahdanau.explorer.shell import summary_line

    assert summary_line("sentence", [True, False, True], "exact match") == "3 sentences, exact match 66.7 % (1 wrong)"
    assert summary_line("question", [True]) == "1 question, accuracy 100.0 % (0 wrong)"
    assert summary_line("image", [None] * 1200) == "1,200 images"


# The command -------------------------------------------------------------------------------------------------------

def run_explore(*args: str) -> subprocess.CompletedProcess:
    executable = shutil.which("hf-bahdanau-explore", path=str(Path(sys.executable).parent))
    command = [executable] if executable else [sys.executable, "-m", "hf_bahdanau.explorer.page"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300)


def test_the_page_of_the_command_shows_what_translate_decodes(saved_model, tmp_path):
    folder, model, tokenizer = saved_model
    expected = translate(model, tokenizer, SENTENCES, num_beams=2, output_alignments=True)
    model_dir = tmp_path / "dates-tiny"
    shutil.copytree(folder, model_dir)
    (model_dir / "all_results.json").write_text(json.dumps({"epoch": 2.0, "eval_exact_match": 12.5}))
    (tmp_path / "sentences.txt").write_text("\n".join(SENTENCES) + "\n\n")
    assert expected[0].translation.strip() and expected[1].translation.strip()  # a reference line is not blank
    references = [f"nonsense\t{expected[0].translation}", expected[1].translation, "nonsense"]
    (tmp_path / "references.txt").write_text("\n".join(references) + "\n")
    done = run_explore(str(model_dir), "--input", str(tmp_path / "sentences.txt"), "--references",
                       str(tmp_path / "references.txt"), "--output", str(tmp_path / "out" / "page.html"),
                       "--num_beams", "2", "--batch_size", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{tmp_path / 'out' / 'page.html'}: 3 sentences, exact match 66.7 % (1 wrong)\n"
    progress = done.stderr.replace("\r", "\n").splitlines()  # a line per phase, then a bar moved per batch
    assert progress[0] == f"hf-bahdanau-explore: loading {model_dir}" and "Loading weights" not in done.stderr
    bar = [re.search(r"\| (\d+/\d+) \[", line).group(1) for line in progress
           if line.startswith("hf-bahdanau-explore: decoding (beam search, 2 beams): ")]
    assert bar[0] == "0/3" and bar[-2:] == ["2/3", "3/3"], done.stderr
    data = page_data((tmp_path / "out" / "page.html").read_text())
    assert data["title"] == "dates-tiny"
    assert [sentence["number"] for sentence in data["sentences"]] == [3, 1, 2]
    assert [sentence["correct"] for sentence in data["sentences"]] == [False, True, True]
    for sentence in data["sentences"]:
        result = expected[sentence["number"] - 1]
        assert sentence["prediction"] == result.translation and sentence["source"] == result.source
        assert sentence["source_tokens"] == result.source_tokens and sentence["target_tokens"] == result.target_tokens
        torch.testing.assert_close(torch.tensor(sentence["alignment"], dtype=torch.float64),
                                   result.alignment.double(), atol=ROUNDING + 1e-6, rtol=0)
    summary = dict(data["model_summary"])
    assert summary["attention_type"] == "additive" and summary["rnn_type"] == "gru"
    assert summary["parameters"] == f"{model.num_parameters():,}" and summary["copy_attention"] == "false"
    assert data["model_metrics"] == {"columns": ["metric", "eval", "whole run"], "rows": [
        ["epoch", "", "2"], ["exact_match", "12.5", ""]]}
    assert data["page_metrics"] == [["sentences", "3"], ["exact match", "66.7 % (2 / 3)"], ["wrong", "1"],
                                    ["decoding", "beam search, 2 beams"]]


def test_a_jsonl_input_gives_references_or_targets(saved_model, tmp_path, capsys):
    folder, model, tokenizer = saved_model
    expected = [result.translation for result in translate(model, tokenizer, SENTENCES)]
    rows = [{"source": SENTENCES[0], "references": ["zzz", expected[0]]}, {"source": SENTENCES[1], "target": "zzz"},
            {"source": SENTENCES[2], "target": expected[2], "id": 7}]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    main([str(folder), "--input", str(tmp_path / "test.jsonl"), "--output", str(tmp_path / "page.html"),
          "--page_size", "2"])
    data = page_data((tmp_path / "page.html").read_text())
    assert data["page_size"] == 2
    assert [(sentence["number"], sentence["correct"], sentence["references"]) for sentence in data["sentences"]] == [
        (2, False, ["zzz"]), (1, True, ["zzz", expected[0]]), (3, True, [expected[2]])]
    assert "3 sentences, exact match 66.7 % (1 wrong)" in capsys.readouterr().out


def test_a_copy_model_shows_p_gen(tmp_path, capsys):
    from training.common.tokenization import train_tokenizer

    tokenizer = train_tokenizer(SENTENCES, kind="char")
    model = tiny_model("rnnsearch+copy", vocab_size=len(tokenizer))
    model.generation_config.max_new_tokens = 5
    model.save_pretrained(tmp_path / "copy")
    tokenizer.save_pretrained(tmp_path / "copy")
    (tmp_path / "sentences.txt").write_text("\n".join(SENTENCES[:2]))
    main([str(tmp_path / "copy"), "--input", str(tmp_path / "sentences.txt"), "--output", str(tmp_path / "page.html")])
    data = page_data((tmp_path / "page.html").read_text())
    expected = translate(model, tokenizer, SENTENCES[:2], output_alignments=True)
    assert dict(data["model_summary"])["copy_attention"] == "true"
    for sentence, result in zip(data["sentences"], expected):
        assert result.p_gen is not None and len(sentence["p_gen"]) == len(result.target_tokens)
        torch.testing.assert_close(torch.tensor(sentence["p_gen"], dtype=torch.float64), result.p_gen.double(),
                                   atol=ROUNDING + 1e-6, rtol=0)


@pytest.mark.parametrize("files, options, error", [  # files: {"txt" | "jsonl" | "refs": text}
    ({"txt": "3/14/15\n\nle 3 mars\n"}, [], "line 2 of --input {txt} is empty: give a sentence"),
    ({"txt": ""}, [], "--input {txt} is empty"),
    ({"txt": "a\nb\nc\n", "refs": "a\nb\n"}, ["--references", "{refs}"],
     "--references {refs} has 2 lines but --input has 3 sentences"),
    ({"txt": "a\n", "refs": "a\nb\n"}, ["--references", "{refs}"],
     "--references {refs} has 2 lines but --input has 1 sentence"),
    ({"txt": "a\nb\nc\n", "refs": "a\n \nc\n"}, ["--references", "{refs}"],
     "line 2 of --references {refs} is empty: give the right answers"),
    ({"jsonl": '{"source": "a"}\n{"source": "b"\n'}, [], "line 2 of --input {jsonl} is not JSON"),
    ({"jsonl": '{"text": "a"}\n'}, [], 'line 1 of --input {jsonl} must be an object with a "source" string'),
    ({"jsonl": '{"source": "a", "target": "x"}\n{"source": "b"}\n'}, [],
     'line 2 of --input {jsonl} has no "references" or "target", but line 1 has'),
    ({"jsonl": '{"source": "a", "references": "x"}\n'}, [],
     '"references" must be a non-empty list of strings, got \'x\''),
    ({"jsonl": '{"source": "a", "target": "x"}\n', "refs": "x\n"}, ["--references", "{refs}"],
     "--input {jsonl} already gives references: drop --references {refs}"),
    ({}, [], "--input {txt}: no such file"),
    ({"txt": "a\n"}, ["--page_size", "0"], "--page_size must be a positive integer, got 0"),
    ({"txt": "a\n"}, ["--num_beams", "0"], "`num_beams` must be an int ≥ 1 (the beams of beam search; 1 = greedy "
                                           "search or sampling), got 0."),
])
def test_bad_inputs_are_errors_that_name_them(saved_model, tmp_path, capsys, files, options, error):
    folder, _, _ = saved_model
    paths = {"txt": str(tmp_path / "in.txt"), "jsonl": str(tmp_path / "in.jsonl"), "refs": str(tmp_path / "refs.txt")}
    for kind, text in files.items():
        Path(paths[kind]).write_text(text)
    with pytest.raises(SystemExit) as exit:
        main([str(folder), "--input", paths["jsonl" if "jsonl" in files else "txt"], "--output",
              str(tmp_path / "page.html"), *(option.format_map(paths) for option in options)])
    assert exit.value.code == 2 and error.format_map(paths) in capsys.readouterr().err
    assert not (tmp_path / "page.html").exists()


def test_a_missing_model_folder_is_an_error_at_once(tmp_path, capsys):
    (tmp_path / "in.txt").write_text("a\n")
    with pytest.raises(SystemExit) as exit:
        main([str(tmp_path / "no-model"), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "p.html")])
    assert exit.value.code == 2 and "is not a local folder" in capsys.readouterr().err


def test_models_without_alignments_to_show_are_refused(saved_model, tmp_path):
    """A family without an explorer page (the pointer network's) is refused naming the families with one; a seq2seq
    model without attention by its page."""
    from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig

    _, _, tokenizer = saved_model
    BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, hidden_size=8, embedding_size=4)
                              ).save_pretrained(tmp_path / "pointer")
    tiny_model("rnnencdec", vocab_size=len(tokenizer)).save_pretrained(tmp_path / "no-attention")
    tokenizer.save_pretrained(tmp_path / "no-attention")
    (tmp_path / "in.txt").write_text("3/14/15\n")
    with_pages = ", ".join(family.name for family in FAMILIES.values() if family.explorer is not None)
    for folder, error in (
            ("pointer", f"{str(tmp_path / 'pointer')!r} holds a pointer model, which has no explorer page; "
                        f"hf-bahdanau-explore explores the models of the families with one: {with_pages}."),
            ("no-attention", f"{str(tmp_path / 'no-attention')!r} has no attention (attention_type='none'): there "
                             "are no alignments to explore; hf-bahdanau-translate decodes it.")):
        with pytest.raises(SystemExit) as exit:
            main([str(tmp_path / folder), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "p.html")])
        assert exit.value.code == f"hf-bahdanau-explore: error: {error}"
    assert not (tmp_path / "p.html").exists()


def test_a_model_of_another_library_is_refused_naming_its_type(tmp_path):
    from transformers import T5Config

    T5Config(d_model=8, num_layers=1).save_pretrained(tmp_path / "t5")
    (tmp_path / "in.txt").write_text("3/14/15\n")
    with pytest.raises(SystemExit) as exit:
        main([str(tmp_path / "t5"), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "p.html")])
    with_pages = ", ".join(family.name for family in FAMILIES.values() if family.explorer is not None)
    assert exit.value.code == (f"hf-bahdanau-explore: error: {str(tmp_path / 't5')!r} holds a 't5' model, not an "
                               f"hf_bahdanau one; hf-bahdanau-explore explores the models of the families with one: "
                               f"{with_pages}.")
    assert with_pages == "seq2seq, memory, image-to-text"


def test_the_command_builds_the_page_a_family_declares(saved_model, tmp_path, monkeypatch, capsys):
    """The command has no branch on a family: it reads the input and builds the page through the folder's family's
    ``Family.explorer`` (here one given to the pointer family), after its usage errors and before its own."""
    from hf_bahdanau import BahdanauForPointerNetwork, BahdanauPointerConfig

    BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, hidden_size=8, embedding_size=4)
                              ).save_pretrained(tmp_path / "pointer")
    calls = []

    def read(args):
        text = args.input.read_text()
        if not text:
            raise ValueError(f"--input {args.input} is empty: give points.")
        return text.split()

    def explore(args, items):
        calls.append((args.prog, args.title, args.model, items))
        return f"<p>{len(items)} points</p>", f"{len(items)} points"

    monkeypatch.setitem(FAMILIES, "pointer", replace(FAMILIES["pointer"], explorer=Explorer(read, explore)))
    (tmp_path / "in.txt").write_text("1,2 3,4\n")
    main([str(tmp_path / "pointer"), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out" / "p.html")])
    assert calls == [("hf-bahdanau-explore", "pointer", str(tmp_path / "pointer"), ["1,2", "3,4"])]
    assert (tmp_path / "out" / "p.html").read_text() == "<p>2 points</p>"
    assert capsys.readouterr().out == f"{tmp_path / 'out' / 'p.html'}: 2 points\n"
    (tmp_path / "in.txt").write_text("")
    with pytest.raises(SystemExit) as exit:
        main([str(tmp_path / "pointer"), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "q.html")])
    assert exit.value.code == 2 and capsys.readouterr().err.splitlines()[-1] == (
        f"hf-bahdanau-explore: error: --input {tmp_path / 'in.txt'} is empty: give points.")
    assert len(calls) == 1 and not (tmp_path / "q.html").exists()


# In a browser ------------------------------------------------------------------------------------------------------

ROWS = [  # α [4 output tokens, 5 source tokens]: every row, and every column, different
    [0.70, 0.20, 0.00, 0.10, 0.00],
    [0.00, 0.05, 0.60, 0.00, 0.35],
    [0.15, 0.00, 0.00, 0.85, 0.00],
    [0.00, 0.00, 0.10, 0.30, 0.60],
]


@pytest.fixture(scope="module")
def browser():
    try:
        driver = headless_chromium()
    except BrowserMissing as error:
        pytest.skip(str(error))
    yield driver
    driver.quit()


def open_page(browser, path: Path, page: str) -> None:
    path.write_text(page, encoding="utf-8")
    browser.get(path.resolve().as_uri())


def sentences_shown(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#sentences .sentence .number")]


@pytest.mark.browser
def test_hovering_an_output_token_shows_the_weights_of_its_row(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    first = made_up("abcd", "W X Y", alignment=ROWS, p_gen=[0.9, 0.25, 0.5, 0.75])
    open_page(browser, tmp_path / "page.html", explorer_page([first, made_up("efgh", "Z", seed=4)]))
    articles = browser.find_elements(By.CSS_SELECTOR, "#sentences .sentence")
    assert len(articles) == 2
    sentence, other = articles
    targets = sentence.find_elements(By.CSS_SELECTOR, ".target-token")
    sources = sentence.find_elements(By.CSS_SELECTOR, ".source-token")
    assert [node.find_element(By.CSS_SELECTOR, ".text").text for node in targets] == ["W", "X", "Y", "</s>"]

    def shown() -> tuple[list[str], list[str]]:
        attended = [node.find_element(By.CSS_SELECTOR, ".text").text
                    for node in sentence.find_elements(By.CSS_SELECTOR, ".source-token.attended")]
        return attended, [node.find_element(By.CSS_SELECTOR, ".weight").text for node in sources]

    for t, attended in ((1, ["b", "c", "</s>"]), (2, ["a", "d"]), (3, ["c", "d", "</s>"])):
        ActionChains(browser).move_to_element(targets[t]).perform()
        assert shown() == (attended, [f"{weight:.2f}" for weight in ROWS[t]])
        shades = [node.value_of_css_property("background-color") for node in sources]
        alphas = [float(re.fullmatch(r"rgba?\((.*)\)", shade).group(1).split(",")[3]) if shade.startswith("rgba")
                  else 1.0 for shade in shades]
        assert alphas == pytest.approx(ROWS[t], abs=1e-3)
        selected = sentence.find_elements(By.CSS_SELECTOR, ".heatmap tbody tr.selected th")
        assert [row.text for row in selected] == [["W", "X", "Y", "</s>"][t]]
    caption = sentence.find_element(By.CSS_SELECTOR, ".caption").text
    assert "token 4 “</s>” attends most to source token 5 “</s>” (α = 0.60)" in caption and "p_gen = 0.75" in caption
    cell = sentence.find_elements(By.CSS_SELECTOR, ".heatmap tbody tr")[1].find_elements(By.CSS_SELECTOR, "td")[2]
    assert cell.get_attribute("title") == "X ← c: α = 0.6000"

    ActionChains(browser).click(targets[0]).perform()  # pin W, then move away: the selection stays
    ActionChains(browser).move_to_element(browser.find_element(By.ID, "title")).perform()
    assert shown() == (["a", "b", "d"], ["0.70", "0.20", "0.00", "0.10", "0.00"])
    assert "pinned" in targets[0].get_attribute("class") and "pinned" not in targets[1].get_attribute("class")
    ActionChains(browser).click(targets[0]).move_to_element(browser.find_element(By.ID, "title")).perform()
    assert shown() == ([], ["", "", "", "", ""])  # unpinned
    assert other.find_elements(By.CSS_SELECTOR, ".attended") == []


@pytest.mark.browser
def test_every_column_of_the_metrics_table_is_headed(browser, tmp_path):
    from selenium.webdriver.common.by import By

    page = explorer_page([made_up("a", "b")], metrics={"eval_bleu": 12.5, "num_parameters": 1000, "total_flos": 2.0})
    open_page(browser, tmp_path / "page.html", page)
    table = browser.find_element(By.ID, "model-metrics")
    assert [cell.text for cell in table.find_elements(By.CSS_SELECTOR, "thead th")] == ["metric", "eval", "whole run"]
    assert [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")]
            for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")] == [
        ["bleu", "12.5", ""], ["num_parameters", "", "1,000"], ["total_flos", "", "2"]]


@pytest.mark.browser
def test_the_only_wrong_filter_shows_the_wrong_predictions(browser, tmp_path):
    from selenium.webdriver.common.by import By

    wrong = {2, 5, 7}
    translations = [made_up("src", f"p{number}", seed=number) for number in range(1, 8)]
    references = [[f"p{number}" if number not in wrong else "other"] for number in range(1, 8)]
    open_page(browser, tmp_path / "page.html", explorer_page(translations, references=references))
    assert browser.find_element(By.ID, "counts").text == "3 wrong / 7"
    assert sentences_shown(browser) == ["#2", "#5", "#7", "#1", "#3", "#4", "#6"]
    browser.find_element(By.ID, "only-wrong").click()
    assert sentences_shown(browser) == ["#2", "#5", "#7"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#sentences .sentence.wrong")) == 3
    assert browser.find_element(By.ID, "showing").text == "sentences 1–3 of 3"
    browser.find_element(By.ID, "only-wrong").click()
    assert len(sentences_shown(browser)) == 7


@pytest.mark.browser
def test_thousands_of_sentences_are_shown_a_page_at_a_time(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    translations = [made_up(f"s{number}", f"t{number} u", seed=number) for number in range(1, 2501)]
    open_page(browser, tmp_path / "page.html", explorer_page(translations))
    indicator, previous, following = (browser.find_element(By.ID, name)
                                      for name in ("page-indicator", "previous-page", "next-page"))
    assert sentences_shown(browser) == [f"#{number}" for number in range(1, 51)]
    assert indicator.text == "page 1 of 50" and not previous.is_enabled() and following.is_enabled()
    following.click()
    assert sentences_shown(browser) == [f"#{number}" for number in range(51, 101)]
    assert indicator.text == "page 2 of 50" and previous.is_enabled()
    assert browser.find_element(By.ID, "showing").text == "sentences 51–100 of 2500"
    sentence = browser.find_element(By.CSS_SELECTOR, "#sentences .sentence")  # #51, drawn on this page
    ActionChains(browser).move_to_element(sentence.find_element(By.CSS_SELECTOR, ".target-token")).perform()
    row = translations[50].alignment[0]
    assert [node.text for node in sentence.find_elements(By.CSS_SELECTOR, ".source-token .weight")] == [
        f"{weight:.2f}" for weight in row.tolist()]
    previous.click()
    assert sentences_shown(browser) == [f"#{number}" for number in range(1, 51)]


HIGHLIGHT = (230, 85, 13)  # explore.css's border of the hovered output token and of the source tokens it attends to


def highlighted_pixels(path: Path) -> int:
    from PIL import Image

    with Image.open(path) as image:
        return dict((color, count) for count, color in image.convert("RGB").getcolors(1 << 24)).get(HIGHLIGHT, 0)


def take_screenshot(page: Path, output: Path, hover: bool) -> None:
    try:
        screenshot(page, output, width=800, height=600, hover=hover)
    except BrowserMissing as error:
        pytest.skip(str(error))


@pytest.mark.browser
def test_the_hover_screenshot_shows_the_highlight(tmp_path):
    (tmp_path / "page.html").write_text(explorer_page([made_up("abcd", "W X Y", alignment=ROWS)]), encoding="utf-8")
    take_screenshot(tmp_path / "page.html", tmp_path / "still.png", hover=False)
    take_screenshot(tmp_path / "page.html", tmp_path / "hover.png", hover=True)
    assert highlighted_pixels(tmp_path / "still.png") == 0 and highlighted_pixels(tmp_path / "hover.png") > 100


@pytest.mark.browser
def test_the_hover_screenshot_waits_for_a_late_highlight(tmp_path):
    """A page that highlights the hovered token half a second after the mouse arrives (as a busy browser may)."""
    (tmp_path / "late.html").write_text(f"""<!DOCTYPE html>
<html><body><div class="sentence"><span class="target-token">W</span></div>
<div id="shade" style="width: 300px; height: 200px"></div>
<script>
const token = document.querySelector(".target-token");
token.addEventListener("mouseenter", () => setTimeout(() => {{
  token.classList.add("selected");
  document.getElementById("shade").style.backgroundColor = "rgb{HIGHLIGHT}";
}}, 500));
</script></body></html>
""")
    take_screenshot(tmp_path / "late.html", tmp_path / "late.png", hover=True)
    assert highlighted_pixels(tmp_path / "late.png") >= 300 * 200


def test_a_screenshot_that_times_out_is_taken_again_in_a_fresh_browser(monkeypatch, tmp_path):
    """chromedriver on a busy machine can time out attaching to the page; screenshot() repeats the take, at most
    ATTEMPTS times, and then lets the timeout through."""
    exceptions = pytest.importorskip("selenium.common.exceptions")
    import training.explorer_screenshot as module

    takes = []

    def take(page, output, **sizes):
        takes.append(sizes)
        if len(takes) < failures:
            raise exceptions.TimeoutException("timeout from aborted by navigation")

    monkeypatch.setattr(module, "take", take)
    failures = module.ATTEMPTS
    screenshot(tmp_path / "page.html", tmp_path / "page.png", width=800, height=600, hover=True)
    assert takes == [{"width": 800, "height": 600, "hover": True}] * module.ATTEMPTS
    takes.clear()
    failures = module.ATTEMPTS + 1
    with pytest.raises(exceptions.TimeoutException):
        screenshot(tmp_path / "page.html", tmp_path / "page.png")
    assert len(takes) == module.ATTEMPTS


def test_judged_records_checks_the_list_makes_the_records_and_puts_the_wrong_ones_first():
    """One path from a page's items to its records (``shell.judged_records``), for the image and memory pages."""
    from hf_bahdanau.explorer.shell import judged_records

    def record(index, item):
        return {"index": index, "correct": item["right"]}

    records, metrics = judged_records([{"right": True}, {"right": False}], "records", record, "an 'expected' answer",
                                      "questions")
    assert records == [{"index": 1, "correct": False}, {"index": 0, "correct": True}]
    assert metrics == [("questions", "2"), ("accuracy", "50.0 % (1 / 2)"), ("wrong", "1")]
    for bad in ([], "abc", {"right": True}):
        with pytest.raises(ValueError) as caught:
            judged_records(bad, "examples", record, "a 'reference'", "images")
        assert str(caught.value) == f"`examples` must be a non-empty list of dicts, one per image, got {bad!r:.80}."
