"""The VQA config is composed of sub-configs, as transformers' vision–language configs: the image encoder's
(``vision_config``, a ``BahdanauImageEncoderConfig``) and the question's, co-attention's and answer MLP's
(``text_config``, a ``BahdanauCoAttentionConfig``); the answers (``id2label``) are its own. Built flat, or loaded from a
flat config.json saved by hf_bahdanau 0.1.0, each field goes to its sub-config."""

import json
import logging
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, ResNetConfig, ResNetModel

from hf_bahdanau import BahdanauForVisualQuestionAnswering, BahdanauVisualQuestionAnsweringConfig
from hf_bahdanau.modeling.configuration_coattention import VQA_SUB_CONFIG_FIELDS, BahdanauCoAttentionConfig
from hf_bahdanau.modeling.configuration_image_encoder import BahdanauImageEncoderConfig
from training.common.arguments import parse_config_overrides

OLD_FOLDER = Path(__file__).parent / "fixtures" / "saved_by_0.1.0" / "vqa"
VISION = dict(cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 3]])
TEXT = dict(vocab_size=19, hidden_size=6, attention_size=5, answer_hidden_size=7, coattention="alternating")
ANSWERS = {0: "yes", 1: "no", 2: "red"}


def contents(config: BahdanauVisualQuestionAnsweringConfig) -> dict:
    """``to_dict()`` without where it was loaded from."""
    return {key: value for key, value in config.to_dict().items() if key != "_name_or_path"}


def test_a_flat_config_routes_each_field_to_its_sub_config():
    flat = BahdanauVisualQuestionAnsweringConfig(**VISION, **TEXT, id2label=ANSWERS, bos_token_id=1, eos_token_id=2)
    nested = BahdanauVisualQuestionAnsweringConfig(
        vision_config=BahdanauImageEncoderConfig(num_channels=3, **VISION),
        text_config=BahdanauCoAttentionConfig(**TEXT, bos_token_id=1, eos_token_id=2), id2label=ANSWERS)
    assert flat.to_dict() == nested.to_dict()
    assert (type(flat.vision_config), type(flat.text_config)) == (BahdanauImageEncoderConfig, BahdanauCoAttentionConfig)
    assert (flat.vision_config.num_channels, flat.vision_config.cnn_pool_sizes) == (3, [[2, 2], [2, 3]])  # VQA: RGB
    assert (flat.text_config.hidden_size, flat.text_config.coattention, flat.text_config.pad_token_id) == \
        (6, "alternating", 0)
    # the tokenizer's special ids live where Trainer aligns them (align_special_tokens reads get_text_config())
    assert flat.get_text_config() is flat.text_config
    assert (flat.text_config.bos_token_id, flat.text_config.eos_token_id) == (1, 2)
    assert (flat.num_labels, flat.id2label) == (3, ANSWERS)


def test_flat_fields_go_over_a_sub_config_given_with_them():
    base = BahdanauVisualQuestionAnsweringConfig(**VISION, **TEXT, id2label=ANSWERS)
    changed = BahdanauVisualQuestionAnsweringConfig(**base.to_dict() | dict(inputs="question", coattention="none"))
    assert (changed.text_config.inputs, changed.text_config.coattention, changed.text_config.hidden_size) == \
        ("question", "none", 6)
    assert changed.vision_config.to_dict() == base.vision_config.to_dict()


def test_a_field_of_no_sub_config_is_refused_by_name():
    with pytest.raises(ValueError) as caught:
        BahdanauVisualQuestionAnsweringConfig(hidden_size=6, hiden_size=8)
    assert str(caught.value) == (
        "`hiden_size`: not a field of BahdanauVisualQuestionAnsweringConfig nor of its sub-configs; their fields are "
        f"{ {key: list(names) for key, names in VQA_SUB_CONFIG_FIELDS.items()} }.")


def test_a_sub_config_s_field_read_or_set_on_the_vqa_config_reaches_the_sub_config():
    config = BahdanauVisualQuestionAnsweringConfig(**VISION, **TEXT)
    assert (config.hidden_size, config.inputs, config.cnn_channels) == (6, "both", [4, 8])
    config.hidden_size, config.cnn_channels = 8, [4]
    assert (config.text_config.hidden_size, config.vision_config.cnn_channels) == (8, [4])
    assert not {"hidden_size", "cnn_channels"} & set(vars(config))  # never a second copy on the VQA config
    with pytest.raises(TypeError, match=r"^`hidden_size` must be an int, got '8' \(str\)\.$"):
        config.hidden_size = "8"  # checked by the sub-config's class
    with pytest.raises(AttributeError, match=r"^'BahdanauVisualQuestionAnsweringConfig' object has no attribute 'x'$"):
        config.x


def test_resizing_the_embeddings_updates_the_question_s_vocabulary():
    model = BahdanauForVisualQuestionAnswering(BahdanauVisualQuestionAnsweringConfig(**VISION, **TEXT))
    model.resize_token_embeddings(25)  # transformers writes the size into get_text_config()
    assert (model.config.text_config.vocab_size, model.coattention.embeddings.num_embeddings) == (25, 25)
    logits = model(input_ids=torch.tensor([[24, 3]]), pixel_values=torch.rand(1, 3, 8, 12)).logits
    assert logits.shape == (1, 2)


def test_bad_values_are_named_by_the_sub_config_that_checks_them():
    with pytest.raises(ValueError, match=r"^`hidden_size` must be a positive integer, got 0"):
        BahdanauVisualQuestionAnsweringConfig(hidden_size=0)
    with pytest.raises(ValueError, match=r"^`cnn_pool_sizes` must be one \[height, width\] pair"):
        BahdanauVisualQuestionAnsweringConfig(cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2]])
    with pytest.raises(TypeError, match=r"^`vocab_size` must be an int, got None \(NoneType\)\.$"):
        BahdanauVisualQuestionAnsweringConfig(vocab_size=None)
    config = BahdanauVisualQuestionAnsweringConfig(**VISION, **TEXT)
    config.text_config.question_levels = ["phrase", "word"]  # changed after it was built: refused by the model
    with pytest.raises(ValueError, match=r"^`question_levels` must be one or more of"):
        BahdanauForVisualQuestionAnswering(config)


def test_the_saved_config_json_is_nested_and_loads_back_equal(tmp_path):
    model = BahdanauForVisualQuestionAnswering(BahdanauVisualQuestionAnsweringConfig(
        **VISION, **TEXT, id2label=ANSWERS, bos_token_id=1))
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert not set(saved) & {name for names in VQA_SUB_CONFIG_FIELDS.values() for name in names}
    assert (saved["model_type"], saved["vision_config"]["model_type"], saved["text_config"]["model_type"]) == \
        ("bahdanau-vqa", "bahdanau-image-encoder", "bahdanau-coattention")
    assert {key: saved["vision_config"][key] for key in VISION} == VISION
    assert {key: saved["text_config"][key] for key in TEXT} == TEXT
    assert (saved["text_config"]["bos_token_id"], saved["vision_config"]["num_channels"]) == (1, 3)
    assert saved["id2label"] == {str(key): value for key, value in ANSWERS.items()}
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert type(loaded) is BahdanauVisualQuestionAnsweringConfig
    assert contents(loaded) == contents(model.config)
    changed = AutoConfig.from_pretrained(tmp_path, inputs="question", coattention="none", num_channels=1)
    assert (changed.text_config.inputs, changed.text_config.coattention, changed.text_config.hidden_size,
            changed.vision_config.num_channels, changed.vision_config.cnn_channels) == ("question", "none", 6, 1, [4, 8])


def test_a_flat_config_json_saved_by_0_1_0_loads_into_the_sub_configs_with_a_log_line(tmp_path, caplog):
    old = json.loads((OLD_FOLDER / "config.json").read_text())
    with caplog.at_level(logging.WARNING):
        config = AutoConfig.from_pretrained(OLD_FOLDER)
    assert [record.getMessage() for record in caplog.records] == [
        "Upgraded a flat 'bahdanau-vqa' config (hf_bahdanau 0.1.0) to its sub-configs `vision_config` and "
        "`text_config` (18 fields moved). Save the model again to store the new config."]
    for key, names in VQA_SUB_CONFIG_FIELDS.items():
        part = getattr(config, key)
        assert {name: getattr(part, name) for name in names if name in old} == \
            {name: old[name] for name in names if name in old}, key
    assert config.id2label == {int(key): value for key, value in old["id2label"].items()}
    config.save_pretrained(tmp_path)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = AutoConfig.from_pretrained(tmp_path)  # the new, nested form: no upgrade
    assert caplog.records == [] and contents(again) == contents(config)


def test_config_overrides_take_the_sub_configs_fields_flat():
    overrides = parse_config_overrides("hidden_size=8,cnn_channels=[4,8],inputs=question",
                                       BahdanauVisualQuestionAnsweringConfig)
    assert overrides == {"hidden_size": 8, "cnn_channels": [4, 8], "inputs": "question"}
    with pytest.raises(ValueError, match=r"^`--config_overrides` takes 'field=value,\.\.\.' with "
                                         r"BahdanauVisualQuestionAnsweringConfig fields \[.*'answer_hidden_size'.*\], "
                                         r"got 'hiden_size=8'\.$"):
        parse_config_overrides("hiden_size=8", BahdanauVisualQuestionAnsweringConfig)


def test_the_question_s_config_loads_through_auto_config():
    config = AutoConfig.for_model("bahdanau-coattention", hidden_size=4, coattention="none")
    assert (type(config), config.hidden_size, config.coattention) == (BahdanauCoAttentionConfig, 4, "none")


def test_a_backbone_is_read_from_the_vision_config_and_its_weights_loaded_once(tmp_path):
    resnet = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 12], depths=[1, 1], layer_type="basic")
    torch.manual_seed(0)
    ResNetModel(resnet).save_pretrained(tmp_path / "resnet")
    model = BahdanauForVisualQuestionAnswering(BahdanauVisualQuestionAnsweringConfig(
        **TEXT, id2label=ANSWERS, backbone=str(tmp_path / "resnet")))
    vision = model.config.vision_config
    assert (vision.backbone_config["hidden_sizes"], vision.annotation_size, vision.use_pretrained_backbone) == \
        ([8, 12], 12, False)  # the checkpoint's weights are the model's own now
    assert model.coattention.region_projection.in_features == 12
    loaded = ResNetModel.from_pretrained(tmp_path / "resnet").state_dict()
    for name, value in model.coattention.image_encoder.regions.backbone.state_dict().items():
        assert torch.equal(value, loaded[name]), name
    logits = model(input_ids=torch.tensor([[3, 4]]), pixel_values=torch.rand(1, 3, 16, 16)).logits
    assert logits.shape == (1, len(ANSWERS))


def test_a_card_reads_a_flat_0_1_0_config_json_as_its_nested_upgrade():
    from hf_bahdanau.families.vqa import (describe_visual_question_answering, vqa_limitations, vqa_task_description,
                                          vqa_usage)

    flat = json.loads((OLD_FOLDER / "config.json").read_text())
    nested = AutoConfig.from_pretrained(OLD_FOLDER).to_dict()
    processor = json.loads((OLD_FOLDER / "preprocessor_config.json").read_text())
    assert "text_config" not in flat and "hidden_size" not in nested
    describe = describe_visual_question_answering
    assert describe(flat) == describe(nested)
    assert describe(nested).lines[0].startswith("**Image encoder**: our CNN over 3 input channels (RGB): 2 blocks")
    assert vqa_task_description(flat, processor) == vqa_task_description(nested, processor)
    assert vqa_limitations(flat, processor) == vqa_limitations(nested, processor)
    assert vqa_usage("m", [], {}, flat, remote=False) == vqa_usage("m", [], {}, nested, remote=False)
