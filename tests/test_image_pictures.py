"""Pictures and pages of an image-to-text model's attention over image regions: ``attention_maps`` against maps written
out by hand (blocks, cropping, an explicit stride, mass); ``plot_image_attention`` draws the image and one panel per
token whose overlay is that token's map; ``image_text_page``'s embedded data round-trip (the PNG decodes to the image,
weights to 4 decimals, wrong predictions first, accuracy), text that looks like HTML stays text, and in a headless
chromium hovering or clicking a token shades each region by its weight; bad input is refused by name."""

import base64
import io

import numpy as np
import pytest
import torch

from hf_bahdanau.explorer.image_page import image_text_page, write_image_text_page
from hf_bahdanau.pictures import OVERLAY_OPACITY, attention_maps, check_image, plot_image_attention
from test_explore import ROUNDING, StartTags, browser, open_page, page_data, sentences_shown  # noqa: F401  (fixture)

# α [T = 2, L = 6] over a grid of 2 x 3 regions, row-major: region i is row i // 3, column i % 3
WEIGHTS = [[0.10, 0.20, 0.30, 0.00, 0.15, 0.25],
           [0.00, 0.00, 0.00, 0.00, 0.00, 1.00]]
# token 0's map over a 4 x 6 image: each region's weight / 4 (its 2 x 2 block of pixels) on each pixel of the block
TOKEN_0_MAP = [[0.025, 0.025, 0.050, 0.050, 0.075, 0.075],
               [0.025, 0.025, 0.050, 0.050, 0.075, 0.075],
               [0.000, 0.000, 0.0375, 0.0375, 0.0625, 0.0625],
               [0.000, 0.000, 0.0375, 0.0375, 0.0625, 0.0625]]
TOKEN_1_MAP = [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0.25, 0.25], [0, 0, 0, 0, 0.25, 0.25]]
EXACT = 1e-15  # a few float64 roundings of numbers below 1


def test_each_region_weight_is_spread_over_its_block_of_pixels():
    maps = attention_maps(np.array(WEIGHTS), (2, 3), (4, 6))
    assert maps.shape == (2, 4, 6) and maps.dtype == np.float64
    np.testing.assert_allclose(maps, [TOKEN_0_MAP, TOKEN_1_MAP], rtol=0, atol=EXACT)
    blocks = maps.reshape(2, 2, 2, 3, 2).sum(axis=(2, 4))  # [T, H', W']: each block's mass
    np.testing.assert_allclose(blocks.reshape(2, 6), WEIGHTS, rtol=0, atol=EXACT)
    np.testing.assert_allclose(maps.sum(axis=(1, 2)), [1.0, 1.0], rtol=0, atol=EXACT)
    # the same stride given explicitly, and torch weights, give the same maps
    np.testing.assert_array_equal(attention_maps(torch.tensor(WEIGHTS, dtype=torch.float64), (2, 3), (4, 6),
                                                 stride=(2, 2)), maps)


def test_blocks_beyond_the_image_are_cropped():
    # a 3 x 5 image: stride ⌈3 / 2⌉ = 2, ⌈5 / 3⌉ = 2; the last row and column of blocks reach one pixel beyond it
    maps = attention_maps(WEIGHTS, (2, 3), (3, 5))
    np.testing.assert_allclose(maps[0], np.array(TOKEN_0_MAP)[:3, :5], rtol=0, atol=EXACT)
    # regions (0, 0) and (0, 1) lie inside and keep their mass 0.1, 0.2; the others keep the part inside:
    # (0, 2) half of 0.3, (1, 0) half of 0, (1, 1) half of 0.15, (1, 2) a quarter of 0.25
    assert maps[0, :2, :2].sum() == pytest.approx(0.1, abs=EXACT)
    assert maps[0, :2, 2:4].sum() == pytest.approx(0.2, abs=EXACT)
    assert maps[0].sum() == pytest.approx(0.1 + 0.2 + 0.15 + 0.0 + 0.075 + 0.0625, abs=EXACT)


def test_an_explicit_stride_places_the_blocks_of_a_padded_batch_grid():
    # grid 2 x 2 of stride 4 (a padded batch's 8 x 8) over a 6 x 5 image; without the stride it would be ⌈6/2⌉, ⌈5/2⌉
    weights = [[0.4, 0.3, 0.2, 0.1]]
    maps = attention_maps(weights, (2, 2), (6, 5), stride=(4, 4))
    expected = np.array([[0.4] * 4 + [0.3]] * 4 + [[0.2] * 4 + [0.1]] * 2) / 16
    np.testing.assert_allclose(maps[0], expected, rtol=0, atol=EXACT)
    assert maps[0, :4, :4].sum() == pytest.approx(0.4, abs=EXACT)  # the one block wholly inside
    derived = attention_maps(weights, (2, 2), (6, 5))  # stride (3, 3): rows 0-2 are region row 0
    np.testing.assert_allclose(derived[0, 3], [0.2 / 9] * 3 + [0.1 / 9] * 2, rtol=0, atol=EXACT)


def test_the_figure_is_the_image_then_one_overlay_per_token(tmp_path):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
    weights = torch.tensor(WEIGHTS)  # float32, as a model gives them
    figure = plot_image_attention(image, ["7", " "], weights, (2, 3), title="strip 1", columns=2,
                                  path=tmp_path / "tokens.png")
    assert [ax.get_title() for ax in figure.axes] == ["image", "7", "␣"]  # T + 1 panels, whitespace shown as ␣
    assert figure.get_suptitle() == "strip 1"
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in figure.axes] == [(2, 2)] * 3  # 2 a row, 2 rows
    (picture,) = figure.axes[0].images
    np.testing.assert_array_equal(picture.get_array(), image)
    luma = image @ np.array([0.299, 0.587, 0.114])
    for ax, expected in zip(figure.axes[1:], attention_maps(weights, (2, 3), (4, 6))):
        grey, overlay = ax.images
        np.testing.assert_allclose(grey.get_array(), luma, rtol=1e-12)
        assert grey.get_clim() == (0, 255)
        np.testing.assert_array_equal(overlay.get_array(), expected)
        assert overlay.get_clim() == (0.0, expected.max())
        np.testing.assert_allclose(overlay.get_alpha(), OVERLAY_OPACITY * expected / expected.max(), rtol=1e-12)
    assert (tmp_path / "tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_images_come_as_uint8_floats_or_pil():
    from PIL import Image

    pixels = np.array([[0, 128, 255]], np.uint8)
    np.testing.assert_array_equal(check_image(np.array([[0.0, 0.5, 1.0]])), pixels)  # round(0.5 · 255) = 128
    np.testing.assert_array_equal(check_image(Image.fromarray(pixels)), pixels)  # mode L: grey
    rgba = Image.fromarray(np.dstack([pixels, pixels, pixels, pixels]))  # mode RGBA: to RGB
    np.testing.assert_array_equal(check_image(rgba), np.dstack([pixels] * 3))
    figure = plot_image_attention(Image.fromarray(pixels), ["a"], [[0.5, 0.5, 0.0]], (1, 3))
    np.testing.assert_array_equal(figure.axes[1].images[1].get_array(), [[0.5, 0.5, 0.0]])


@pytest.mark.parametrize("change, message", [
    (dict(weights=[0.5, 0.5]), r"`weights` must be \[T, L\] with L = H'·W' = 2·3 = 6 regions of `grid`, got \[2\]"),
    (dict(weights=np.ones((2, 5))), r"`weights` must be \[T, L\] .* = 6 regions of `grid`, got \[2, 5\]"),
    (dict(tokens=["a"]), r"`tokens` must have one token per row of `weights` \(2\), got 1"),
    (dict(weights=[[-0.1] + WEIGHTS[0][1:], WEIGHTS[1]]), r"`weights` must be finite and ≥ 0 .* from -0.1 to 1"),
    (dict(weights=[[float("nan")] * 6, WEIGHTS[1]]), r"`weights` must be finite and ≥ 0 .* and NaN"),
    (dict(grid=(6,)), r"`grid` must be two positive ints \(H', W'\)"),
    (dict(grid=(2, 0)), r"`grid` must be two positive ints .* got \(2, 0\)"),
    (dict(grid=(2.0, 3)), r"`grid` must be two positive ints .* got \(2.0, 3\)"),
    (dict(grid=6), r"`grid` must be two positive ints .* got 6"),
    (dict(stride=(1, 2)), r"`stride` \(1, 2\) leaves pixels of the image \(4 x 6\) outside the grid \(2, 3\): "
                          r"H'·sh = 2 and W'·sw = 6"),
    (dict(stride=(2, True)), r"`stride` must be two positive ints \(sh, sw\)"),
    (dict(image=np.zeros((4, 6, 4), np.uint8)), r"`image` must be \[H, W\] \(grey\) or \[H, W, 3\] \(RGB\) .* "
                                                r"got \[4, 6, 4\]"),
    (dict(image=np.full((4, 6), 2.0)), r"`image` must hold floats in \[0, 1\] .* from 2 to 2"),
    (dict(image=np.zeros((4, 6), np.int64)), r"`image` must be uint8 \(0 to 255\) or float \(0 to 1\), got dtype "
                                             r"int64"),
    (dict(columns=0), r"`columns` must be a positive int \(panels per row\), got 0"),
])
def test_bad_input_is_refused_by_name(change, message):
    arguments = dict(image=np.zeros((4, 6), np.uint8), tokens=["a", "b"], weights=WEIGHTS, grid=(2, 3)) | change
    with pytest.raises(ValueError, match=message):
        plot_image_attention(**arguments)


def test_attention_maps_refuses_a_bad_image_size():
    with pytest.raises(ValueError, match=r"`image_size` must be two positive ints \(H, W\).*got \(4, -6\)"):
        attention_maps(WEIGHTS, (2, 3), (4, -6))


# The explorer's page --------------------------------------------------------------------------------------------------

STRIP = np.arange(24, dtype=np.uint8).reshape(4, 6) * 10  # every pixel different


def example(prediction: str, reference: str | None = "7 1", **extra) -> dict:
    return dict(image=STRIP, prediction=prediction, tokens=["7", " "],
                weights=WEIGHTS, grid=(2, 3), reference=reference) | extra


def decoded(uri: str) -> np.ndarray:
    from PIL import Image

    prefix = "data:image/png;base64,"
    assert uri.startswith(prefix)
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(uri[len(prefix):]))))


def test_the_page_data_round_trip_with_the_wrong_predictions_first(tmp_path):
    colour = np.random.default_rng(1).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    weights = torch.tensor([[0.123456, 0.876544, 0.0, 0.0]])
    examples = [example("7 1"), example("7 7"),
                example("3", image=colour, tokens=["3"], weights=weights, grid=(2, 2), stride=(4, 4), reference="3")]
    path = write_image_text_page(tmp_path / "pages" / "images.html", examples, title="strips", page_size=2,
                                 metrics={"eval_accuracy": 0.5}, model_summary={"hidden_size": 16})
    data = page_data(path.read_text(encoding="utf-8"))
    assert data["kind"] == "image_text" and data["title"] == "strips" and data["page_size"] == 2
    assert data["overlay_opacity"] == OVERLAY_OPACITY
    assert data["has_references"] is True
    assert data["model_summary"] == [["hidden_size", "16"]]
    assert data["model_metrics"] == {"columns": ["metric", "eval"], "rows": [["accuracy", "0.5"]]}
    assert data["page_metrics"] == [["images", "3"], ["accuracy", "66.7 % (2 / 3)"], ["wrong", "1"]]
    assert [record["number"] for record in data["examples"]] == [2, 1, 3]  # the wrong one first
    wrong, right, colourful = data["examples"]
    image = wrong.pop("image")
    assert wrong == dict(number=2, height=4, width=6, grid=[2, 3], stride=[2, 2], prediction="7 7", reference="7 1",
                         correct=False, tokens=["7", " "], weights=WEIGHTS)
    np.testing.assert_array_equal(decoded(image), STRIP)
    assert right["correct"] is True and right["image"] == image
    np.testing.assert_array_equal(decoded(colourful["image"]), colour)
    assert (colourful["height"], colourful["width"], colourful["grid"], colourful["stride"]) == (5, 7, [2, 2], [4, 4])
    torch.testing.assert_close(torch.tensor(colourful["weights"], dtype=torch.float64), weights.double(),
                               atol=ROUNDING, rtol=0)
    assert colourful["weights"][0][:2] == [0.1235, 0.8765]


def test_a_page_without_references():
    data = page_data(image_text_page([example("7 1", reference=None)]))
    assert data["has_references"] is False and data["page_metrics"] == [["images", "1"]]
    (record,) = data["examples"]
    assert record["correct"] is None and record["reference"] is None


def test_text_that_looks_like_html_stays_text():
    page = image_text_page([example("</script><b>x</b>", reference="<img src=x onerror=alert(1)>",
                                    tokens=["<!--", "<i>"])], title="<title>")
    parser = StartTags()
    parser.feed(page)
    assert parser.tags.count("script") == 2 and not {"b", "i", "img"} & set(parser.tags)
    assert page.count("</script>") == 2 and "<title>&lt;title&gt;</title>" in page
    assert "<h2>These images</h2>" in page and "only wrong predictions</label>" in page
    (record,) = page_data(page)["examples"]
    assert record["prediction"] == "</script><b>x</b>" and record["tokens"] == ["<!--", "<i>"]


@pytest.mark.parametrize("examples, message", [
    ([], "`examples` must be a non-empty list of dicts"),
    ([dict(image=STRIP, prediction="x", tokens=[])], r"`examples\[0\]` must be a dict with the keys"),
    ([example("x"), example("x", weights=[[0.5, 0.5]])],
     r"`examples\[1\].weights` must be \[T, L\] with L = H'·W' = 2·3 = 6 regions of `examples\[1\].grid`"),
    ([example("x", tokens=["a"])], r"`examples\[0\].tokens` must have one token per row of `examples\[0\].weights`"),
    ([example("x", tokens="ab")], r"`examples\[0\].tokens` must be a list of strings"),
    ([example("x", grid=(2, 2))], r"`examples\[0\].weights` must be \[T, L\] with L = H'·W' = 2·2 = 4"),
    ([example("x", stride=(1, 1))], r"`examples\[0\].stride` \(1, 1\) leaves pixels of the image"),
    ([example("x", image=np.zeros((2, 2, 2)))], r"`examples\[0\].image` must be \[H, W\] \(grey\) or \[H, W, 3\]"),
    ([example(3)], r"`examples\[0\].prediction` must be a string, got 3"),
    ([example("x"), example("x", reference=None)], r"`examples\[1\]` lacks a 'reference' but `examples\[0\]` has"),
])
def test_bad_examples_are_refused_by_name(examples, message):
    with pytest.raises(ValueError, match=message):
        image_text_page(examples)


def test_the_command_reads_the_images_of_a_jsonl_file_through_the_pipeline(tmp_path, capsys):
    """hf-bahdanau-explore on an image-to-text folder: the page its family declares (``IMAGE_EXPLORER``), each image as
    the model read it with the pipeline's text, tokens and weights over its grid, at the CNN's stride; an image that is
    not a file ends as a usage error naming its line."""
    import json

    from PIL import Image

    from hf_bahdanau import BahdanauImageProcessor
    from hf_bahdanau.explorer.page import main
    from hf_bahdanau.modeling.pipeline_image_to_text import BahdanauImageToTextPipeline
    from transformers import AutoTokenizer

    from test_image_cards import CHARACTERS, save_tokenizer
    from test_image_to_text import image_model, images

    model, processor = image_model(vocab_size=len(CHARACTERS)), BahdanauImageProcessor(size={"height": 9})
    model.save_pretrained(tmp_path / "strips-tiny")
    processor.save_pretrained(tmp_path / "strips-tiny")
    save_tokenizer(tmp_path / "strips-tiny")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "strips-tiny")
    (tmp_path / "images").mkdir()
    for number, strip in enumerate(images(((9, 14), (18, 10)))):  # read as 9 x 14 and 9 x 5: grids 3 x 3 and 3 x 1
        Image.fromarray(strip).save(tmp_path / "images" / f"{number}.png")
    paths = [str(tmp_path / "images" / f"{number}.png") for number in range(2)]
    read = BahdanauImageToTextPipeline(model=model, tokenizer=tokenizer, image_processor=processor)(
        paths, return_attentions=True, max_new_tokens=4)
    rows = [dict(image="images/0.png", reference=read[0]["generated_text"], id=1),
            dict(image=paths[1], reference=read[1]["generated_text"] + "x")]
    (tmp_path / "images.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    main([str(tmp_path / "strips-tiny"), "--input", str(tmp_path / "images.jsonl"), "--output",
          str(tmp_path / "page.html"), "--max_new_tokens", "4"])
    assert capsys.readouterr().out == f"{tmp_path / 'page.html'}: 2 images, accuracy 50.0 % (1 wrong)\n"
    data = page_data((tmp_path / "page.html").read_text(encoding="utf-8"))
    assert data["kind"] == "image_text" and data["title"] == "strips-tiny"
    assert dict(data["model_summary"])["cnn_pool_sizes"] == "[[2, 2], [2, 3]]"
    assert [(example["number"], example["correct"]) for example in data["examples"]] == [(2, False), (1, True)]
    for example in data["examples"]:
        expected, path = read[example["number"] - 1], paths[example["number"] - 1]
        assert (example["prediction"], example["tokens"], example["grid"], example["stride"]) == (
            expected["generated_text"], expected["attention"]["tokens"], expected["attention"]["grid"], [4, 6])
        np.testing.assert_array_equal(decoded(example["image"]), np.asarray(processor.to_image(Image.open(path))))
        torch.testing.assert_close(torch.tensor(example["weights"], dtype=torch.float64),
                                   torch.tensor(expected["attention"]["weights"], dtype=torch.float64),
                                   atol=ROUNDING, rtol=0)
    missing = [rows[0], {"image": "images/9.png", "reference": "1"}]
    (tmp_path / "missing.jsonl").write_text("".join(json.dumps(row) + "\n" for row in missing))
    with pytest.raises(SystemExit) as exit:
        main([str(tmp_path / "strips-tiny"), "--input", str(tmp_path / "missing.jsonl"), "--output",
              str(tmp_path / "bad.html")])
    assert exit.value.code == 2 and capsys.readouterr().err.splitlines()[-1] == (
        f"hf-bahdanau-explore: error: line 2 of --input {tmp_path / 'missing.jsonl'}: the image 'images/9.png' is "
        f"not a file (read from {tmp_path}).")
    assert not (tmp_path / "bad.html").exists()


@pytest.mark.browser
def test_hovering_a_token_shades_each_region_by_its_weight(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    # a 3 x 5 image under the 2 x 3 grid of stride 2: the last row and column of blocks are cropped
    examples = [example("7 1", image=STRIP[:3, :5]), example("1 7")]
    open_page(browser, tmp_path / "images.html", image_text_page(examples))
    assert sentences_shown(browser) == ["#2", "#1"]
    article = browser.find_element(By.CSS_SELECTOR, "#sentences .sentence.right")
    tokens = article.find_elements(By.CSS_SELECTOR, ".target-token")
    assert [token.text for token in tokens] == ["7", "␣"]
    canvas = article.find_element(By.CSS_SELECTOR, "canvas.attention-overlay")

    def opacity() -> np.ndarray:
        """The overlay's alpha [3, 5] at each pixel of the image, in [0, 1]."""
        pixels = browser.execute_script("const canvas = arguments[0]; return Array.from(canvas.getContext('2d')"
                                        ".getImageData(0, 0, canvas.width, canvas.height).data);", canvas)
        return np.array(pixels, dtype=np.float64).reshape(3, 5, 4)[..., 3] / 255

    assert not opacity().any()
    ActionChains(browser).move_to_element(tokens[0]).perform()
    expected = OVERLAY_OPACITY * np.array(TOKEN_0_MAP)[:3, :5] / 0.075  # α / max α on each pixel of its region
    np.testing.assert_allclose(opacity(), expected, rtol=0, atol=1 / 255)  # alpha is kept in 8 bits
    assert "attending" in article.find_element(By.CSS_SELECTOR, ".image-frame").get_attribute("class")
    caption = article.find_element(By.CSS_SELECTOR, ".caption").text
    assert caption == "output token 1 “7” attends most to region (row 1, column 3) of 2 × 3 (α = 0.30)"
    ActionChains(browser).click(tokens[1]).move_to_element(browser.find_element(By.ID, "title")).perform()
    np.testing.assert_allclose(opacity(), OVERLAY_OPACITY * (np.array(TOKEN_1_MAP)[:3, :5] > 0), atol=1 / 255)
    assert "pinned" in tokens[1].get_attribute("class")  # the pinned token's overlay stays when the mouse leaves
    ActionChains(browser).click(tokens[1]).move_to_element(browser.find_element(By.ID, "title")).perform()
    assert not opacity().any()  # unpinned
