"""Folders saved by hf_bahdanau 0.1.0 (``tests/fixtures/saved_by_0.1.0``, written by ``make_saved_by_0_1_0.py`` from
commit 7618d4e, one per model family) keep loading: with the current code through the Auto classes (the package
installed), and through the code each folder carries (``trust_remote_code=True``, in a process without the package),
each gives the outputs and generated ids it gave when it was saved."""

import json
from pathlib import Path

import pytest
import torch
import transformers
from PIL import Image
from safetensors.torch import load_file
from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer

from child_process import run_child
from fixtures.saved_outputs import auto_class_name, read_saved, recorded_outputs

pytestmark = pytest.mark.usefixtures("one_thread")

SAVED = Path(__file__).parent / "fixtures" / "saved_by_0.1.0"
FOLDERS = sorted(path.name for path in SAVED.iterdir() if (path / "config.json").is_file())

UPGRADE_RTOL = 1e-5
"""The same float32 weights and inputs through code that may sum in another order: each product of these tiny models
(inner sizes ≤ 32) rounds within 2 n ε ≈ 8e-6 of the size of its terms (ε = 1.2e-7, ``conftest.product_tolerance``),
and a few recurrent steps through tanh and sigmoid gates (slopes ≤ 1) do not amplify it much: 1e-5 of the size of the
values. A wrong weight, a lost field or another option differs by far more (1e-2 and up with N(0, 1) weights)."""


def assert_same_outputs(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], folder: str) -> None:
    """The same tensors by name: ids equal, floats within ``UPGRADE_RTOL`` of the size of the values."""
    assert sorted(got) == sorted(want), folder
    for key, value in want.items():
        if value.is_floating_point():
            atol = UPGRADE_RTOL * max(float(value.abs().max()), 1.0)
            torch.testing.assert_close(got[key], value, atol=atol, rtol=0, msg=f"{folder}: {key}")
        else:
            assert torch.equal(got[key], value), f"{folder}: {key}: {got[key].tolist()} != {value.tolist()}"


def test_there_is_a_saved_folder_of_every_family():
    assert FOLDERS == ["classifier", "han", "image_to_text", "memory", "passage", "pointer", "seq2seq_luong",
                       "seq2seq_rnnsearch", "tagger", "vqa"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folder_saved_by_0_1_0_loads_with_the_auto_classes_and_gives_its_outputs(folder, tmp_path):
    record, inputs, want = read_saved(SAVED / folder)
    config = AutoConfig.from_pretrained(SAVED / folder)
    auto_class = getattr(transformers, auto_class_name(config))
    model = auto_class.from_pretrained(SAVED / folder).eval()
    assert type(model).__module__.startswith("hf_bahdanau.")  # the current code, not the folder's
    assert_same_outputs(recorded_outputs(model, inputs, record["generate"]), want, folder)
    model.save_pretrained(tmp_path)  # saved again by the current code (an upgraded config in its new form)
    assert_same_outputs(recorded_outputs(auto_class.from_pretrained(tmp_path).eval(), inputs, record["generate"]),
                        want, folder)


@pytest.mark.parametrize("folder", [name for name in FOLDERS if name != "pointer"])
def test_the_tokenizer_and_image_processor_of_a_folder_saved_by_0_1_0_give_their_inputs(folder):
    record, inputs, _ = read_saved(SAVED / folder)
    tokenizer = AutoTokenizer.from_pretrained(SAVED / folder)
    assert {text: tokenizer(text)["input_ids"] for text in record.get("tokens", {})} == record.get("tokens", {})
    if "image" in record:
        processor = AutoImageProcessor.from_pretrained(SAVED / folder)
        pixels = processor(Image.open(SAVED / folder / record["image"]), return_tensors="pt")
        torch.testing.assert_close(pixels["pixel_values"], inputs["pixel_values"])
        assert torch.equal(pixels["pixel_mask"], inputs["pixel_mask"])


REMOTE_CHILD = """
    import json
    import runpy
    import sys
    from pathlib import Path

    import torch
    import transformers
    from safetensors.torch import save_file

    torch.set_num_threads(1)
    root, out = Path(sys.argv[1]), sys.argv[2]
    saved_outputs = runpy.run_path(sys.argv[4])  # the tests' helpers, read from their file
    auto_class_name, read_saved, recorded_outputs = (saved_outputs[name] for name in (
        "auto_class_name", "read_saved", "recorded_outputs"))

    modules = {}
    for folder in json.loads(sys.argv[3]):
        config = transformers.AutoConfig.from_pretrained(root / folder, trust_remote_code=True)
        auto_class = getattr(transformers, auto_class_name(config))
        model = auto_class.from_pretrained(root / folder, trust_remote_code=True).eval()
        record, inputs, _ = read_saved(root / folder)
        result = recorded_outputs(model, inputs, record["generate"])
        save_file({key: value.contiguous() for key, value in result.items()}, f"{out}/{folder}.safetensors")
        modules[folder] = type(model).__module__
    modules["hf_bahdanau"] = sorted(name for name in sys.modules if name.split(".")[0] == "hf_bahdanau")
    print(json.dumps(modules))
"""


def test_every_folder_saved_by_0_1_0_loads_through_its_own_code_in_a_process_without_the_package(tmp_path):
    child = run_child(REMOTE_CHILD, tmp_path, str(SAVED), str(tmp_path), json.dumps(FOLDERS),
                      str(Path(__file__).parent / "fixtures" / "saved_outputs.py"), isolated=True, hide_package=True)
    assert child.pop("hf_bahdanau") == []
    for folder in FOLDERS:
        assert child[folder].startswith("transformers_modules."), folder
        _, _, want = read_saved(SAVED / folder)
        assert_same_outputs(load_file(tmp_path / f"{folder}.safetensors"), want, folder)
