"""The contract every head keeps, written once (transformers' ``ModelTesterMixin``): a test class subclasses
``ContractTests`` and gives a ``tester`` fixture (a ``testers.Tester``); ``test_contract.py`` does so for every
registered family, and a family added at run time does so for its own head.

Equalities run in float64, where two code paths differ only by rounding (``conftest.FLOAT64_PATHS_RTOL`` of the size of
the values; weights, at most 1, against 1); padding is checked to be exactly 0, never nearly.
"""

import gc
import math
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from child_process import run_child
from conftest import DEVICES, assert_float64_close, assert_float64_gradients_close
from contract.devices import (LIBRARY, SEARCHES, STEP_SYNCS, STOP_DECISIONS, FactoriesOnMeta, syncs_per_step,
                              tensors)
from contract.mixed_precision import MixedPrecisionContract
from contract.testers import Over, Tester, padded_positions, with_float64
from hf_bahdanau.families import FAMILIES

BAD_HIDDEN_SIZES = (0, -4, 2.5, "8")  # each refused by the config, naming `hidden_size`


def run(model, batch: dict, **kwargs):
    with torch.no_grad():
        return model(**batch, output_attentions=True, **kwargs)


def compared(tester: Tester, model, output, batch: dict) -> dict[str, tuple[Over, float | None]]:
    """Every output the contract compares, by name, with the scale of its tolerance (None: the values' own size;
    attention weights: 1)."""
    return {**{name: (over, None) for name, over in tester.outputs(model, output, batch).items()},
            **{name: (over, 1.0) for name, over in tester.weights(model, output, batch).items()}}


def config_class(tester: Tester) -> type:
    """The config class of the tester's family: its descriptor's, or the tester's own for an unregistered family."""
    return tester.config_class or FAMILIES[tester.family].config_class


def assert_log_probs_close(actual: torch.Tensor, expected: torch.Tensor, scale: float | None = None) -> None:
    """Float64-close, with −∞ (a pointer network's padded inputs) at the same places on both sides."""
    finite = torch.isfinite(expected)
    assert torch.equal(torch.isfinite(actual), finite)
    assert torch.equal(actual[~finite], expected[~finite])
    assert_float64_close(actual[finite], expected[finite], scale=scale)


def on(device: str, batch: dict) -> dict:
    return {key: value.to(device) for key, value in batch.items()}


class ContractTests(MixedPrecisionContract):
    """What every head must do; ``tester`` is a fixture giving the head's ``Tester``."""

    @pytest.fixture(autouse=True)
    def _known_failure(self, request, tester: Tester):
        """A contract the head does not keep yet (``Tester.known_failures``) runs as a strict xfail."""
        reason = tester.known_failures.get(request.function.__name__)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(strict=True, reason=reason))

    def test_the_model_equals_the_reference(self, tester: Tester):
        """The batched model on a padded batch gives the logits of ``reference``'s equations, one example at a time,
        and every parameter the gradient of the reference's logits (against a fixed random probe)."""
        if tester.reference is None:
            pytest.skip(f"hf_bahdanau.reference has no equations for {tester.name}")
        model, batch = tester.model(), with_float64(tester.batch(False))
        with torch.no_grad():
            expected = tester.reference(model, batch)
            assert_log_probs_close(model(**batch).logits, expected)
        probe = torch.randn(expected.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        probe[~torch.isfinite(expected)] = 0

        def gradients(logits: torch.Tensor) -> dict[str, torch.Tensor]:
            model.zero_grad(set_to_none=True)
            (logits.masked_fill(probe == 0, 0) * probe).sum().backward()
            return {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

        fast = gradients(model(**batch).logits)
        assert_float64_gradients_close(fast, gradients(tester.reference(model, batch)))

    def test_padding_gets_exactly_zero_weight(self, tester: Tester):
        model = tester.model()
        for left in (False, True) if tester.left_padding else (False,):
            batch = with_float64(tester.batch(left))
            weights = tester.weights(model, run(model, batch), batch)
            if not weights:
                pytest.skip(f"{tester.name} returns no attention weights")
            for name, over in weights.items():
                padding = over.padding()
                assert padding.any(), f"{name}: the test batch has no padding"
                assert torch.equal(over.values[padding], torch.zeros_like(over.values[padding])), name

    def test_left_padding_equals_right_padding(self, tester: Tester):
        """The same inputs padded on the left give every output and weight of right padding, moved with them."""
        if not tester.left_padding:
            pytest.skip(f"{tester.name} reads positions: its inputs are right-padded only")
        model = tester.model()
        right_batch, left_batch = with_float64(tester.batch(False)), with_float64(tester.batch(True))
        right = compared(tester, model, run(model, right_batch), right_batch)
        left = compared(tester, model, run(model, left_batch), left_batch)
        assert left.keys() == right.keys()
        for name, (over, scale) in right.items():
            for row in range(over.values.shape[0]):
                assert_float64_close(left[name][0].real(row), over.real(row), scale=scale, msg=f"{name} row {row}")

    def test_a_padded_batch_equals_each_example_alone(self, tester: Tester):
        model = tester.model()
        batch = with_float64(tester.batch(False))
        together = compared(tester, model, run(model, batch), batch)
        rows = next(iter(together.values()))[0].values.shape[0]
        for row in range(rows):
            single = tester.alone(batch, row)
            alone = compared(tester, model, run(model, single), single)
            assert alone.keys() == together.keys()
            for name, (over, scale) in together.items():
                assert_float64_close(over.real(row), alone[name][0].real(0), scale=scale, msg=f"{name} row {row}")

    def test_gradients_reach_every_parameter_and_never_padding(self, tester: Tester):
        """The loss's gradient reaches every parameter (but those the head leaves unused by design) and no padding:
        not the padding id's embedding rows, not the padded positions of a float input (features, pixels)."""
        model = tester.model().train()  # as trained: hard attention samples, dropout drops
        batch = with_float64(tester.batch(False))
        inputs = {key: batch[key].clone().requires_grad_() for key in tester.float_inputs}
        model(**{**batch, **inputs}, labels=tester.labels(batch)).loss.backward()
        missing = [name for name, parameter in model.named_parameters()
                   if parameter.grad is None or not parameter.grad.any()]
        assert sorted(missing) == sorted(tester.no_gradient), missing
        for weight, row in tester.padding_rows(model):
            assert torch.equal(weight.grad[row], torch.zeros_like(weight.grad[row]))
        for key, mask_key in tester.float_inputs.items():
            grad = inputs[key].grad
            padding = padded_positions(grad, batch[mask_key]).expand_as(grad)
            assert padding.any() and torch.equal(grad[padding], torch.zeros_like(grad[padding])), key
            assert grad[~padding].any(), key

    def test_the_loss_ignores_minus_100_and_divides_by_num_items_in_batch(self, tester: Tester):
        """loss = Σ cross-entropy over the labels ≠ −100 / their count, or / ``num_items_in_batch`` when Trainer
        gives it (its count across gradient accumulation); 0 when every label is −100."""
        model = tester.model()
        batch = with_float64(tester.batch(False))
        labels = tester.labels(batch)
        output = run(model, batch, labels=labels)
        by_seven = run(model, batch, labels=labels, num_items_in_batch=7)
        kept = labels != -100
        assert 0 < int(kept.sum()) < kept.numel()  # the labels ignore something and keep something
        total = F.cross_entropy(output.logits[kept], labels[kept], reduction="sum")
        assert_float64_close(output.loss, total / int(kept.sum()))
        assert_float64_close(by_seven.loss, total / 7)
        nothing = run(model, batch, labels=torch.full_like(labels, -100))
        assert torch.equal(nothing.loss, torch.zeros_like(nothing.loss))  # no target: 0, not NaN
        assert type(model).accepts_loss_kwargs is True  # so Trainer passes num_items_in_batch

    def test_a_bad_input_is_refused_naming_it(self, tester: Tester):
        """An id out of range, a mask value other than 0 and 1, a label out of range: a ValueError naming it."""
        model = tester.model()
        batch = tester.batch(False)
        labels = tester.labels(batch)
        bad = {}
        for key, mask_key in tester.padded.items():
            if key == mask_key or not batch[key].is_floating_point():
                value = batch[key].clone()
                value.view(-1)[0] = 2 if key == mask_key else 10 ** 6
                bad[key] = {**batch, key: value}
        wrong_labels = labels.clone()
        wrong_labels[labels != -100] = 10 ** 6
        bad["labels"] = {**batch, "labels": wrong_labels}
        for argument, inputs in bad.items():
            with pytest.raises(ValueError, match=f"`{argument}`"):
                model(**inputs)
                pytest.fail(f"{argument}: refused nothing")

    @pytest.mark.parametrize("hidden_size", BAD_HIDDEN_SIZES)
    def test_a_bad_config_is_refused_naming_the_field(self, tester: Tester, hidden_size):
        with pytest.raises((ValueError, TypeError), match="hidden_size"):
            config_class(tester)(**tester.config_fields, hidden_size=hidden_size)

    def test_save_and_load_through_the_auto_classes(self, tester: Tester, tmp_path):
        """The family's descriptor lists the head with the Auto class that loads it; a saved folder loads through that
        class as the same head, with the same outputs, and through every Auto class of the family as its head."""
        from transformers import AutoConfig

        model = tester.model()
        heads = {(tester.auto_class, type(model))}
        if tester.family in FAMILIES:
            heads = {(head.auto_class, head.model_class) for head in FAMILIES[tester.family].heads}
            assert (tester.auto_class, type(model)) in heads
        model.save_pretrained(tmp_path)
        assert type(AutoConfig.from_pretrained(tmp_path)) is config_class(tester)
        for auto_class, model_class in heads:
            assert type(auto_class.from_pretrained(tmp_path)) is model_class, auto_class
        loaded = tester.auto_class.from_pretrained(tmp_path, dtype=torch.float64).eval()
        batch = with_float64(tester.batch(False))
        expected, got = run(model, batch), run(loaded, batch)
        loaded_outputs = compared(tester, loaded, got, batch)
        for name, (over, scale) in compared(tester, model, expected, batch).items():
            # the same weights at other memory alignments: kernels may round apart
            assert_log_probs_close(loaded_outputs[name][0].values, over.values, scale)
        if tester.generate is not None:
            source = {key: value for key, value in batch.items() if not key.startswith("decoder_")}
            with torch.no_grad():
                assert torch.equal(loaded.generate(**source, **tester.generate),
                                   model.generate(**source, **tester.generate))

    @pytest.mark.devices
    @pytest.mark.parametrize("device", DEVICES)
    def test_runs_on_the_device_of_its_weights_and_inputs(self, tester: Tester, device: str):
        """forward, the loss and its gradients, and generate() (``SEARCHES``: greedy, beam, sampling, with the
        alignments) run where the model and its inputs are, every output there; hf_bahdanau's code makes no tensor on
        the default device (``FactoriesOnMeta``: such a tensor is on meta and fails here, with no GPU needed)."""
        model = tester.model().to(device).train()  # as trained: hard attention samples, dropout drops
        batch = with_float64(tester.batch(False))
        batch, labels = on(device, batch), tester.labels(batch).to(device)
        with FactoriesOnMeta():
            output = model(**batch, labels=labels, output_attentions=True)
            output.loss.backward()
        assert torch.isfinite(output.loss)
        assert {value.device.type for value in tensors(output)} == {device}
        assert {p.grad.device.type for p in model.parameters() if p.grad is not None} == {device}
        if tester.generate is None:
            return
        source = {key: value for key, value in batch.items() if not key.startswith("decoder_")}
        model.eval()
        for name, search in SEARCHES.items():
            with torch.no_grad(), FactoriesOnMeta():
                generated = model.generate(**source, **{**tester.generate, **search})
            assert {value.device.type for value in tensors(generated)} == {device}, name

    @pytest.mark.devices
    @pytest.mark.parametrize("device", DEVICES)
    def test_a_trainer_step_runs_on_the_device(self, tester: Tester, device: str, tmp_path):
        """One step of the training scripts' Trainer (``TaskTrainer``; ``use_cpu`` for "cpu", else the GPU) on a batch
        of its data loader moves
        every weight the loss reaches, and leaves them on the device; neither hf_bahdanau's code nor the training
        driver's makes a tensor on the default device."""
        from transformers import Seq2SeqTrainingArguments, default_data_collator

        import training
        from training.common.trainer import TaskTrainer

        model = tester.model().train()
        batch = with_float64(tester.batch(False))
        columns = {**batch, "labels": tester.labels(batch)}
        rows = [{key: value[row] for key, value in columns.items()} for row in range(len(columns["labels"]))]
        before = {name: parameter.detach().clone() for name, parameter in model.named_parameters()}
        arguments = Seq2SeqTrainingArguments(output_dir=str(tmp_path), max_steps=1, use_cpu=device == "cpu",
                                             per_device_train_batch_size=len(rows), report_to="none",
                                             save_strategy="no", disable_tqdm=True)
        trainer = TaskTrainer(model=model, args=arguments, train_dataset=rows, data_collator=default_data_collator)
        gc.freeze()  # train() ends in gc.collect(): 1.5 s over the test session's objects, 2 ms over the step's
        try:
            with FactoriesOnMeta(roots=(LIBRARY, Path(training.__file__).parent)):
                result = trainer.train()
        finally:
            gc.unfreeze()
        assert math.isfinite(result.training_loss)
        assert {parameter.device.type for parameter in model.parameters()} == {device}
        unchanged = [name for name, parameter in model.named_parameters()
                     if torch.equal(parameter.detach().cpu(), before[name])]
        assert sorted(unchanged) == sorted(tester.no_gradient)

    @pytest.mark.devices
    @pytest.mark.parametrize("device", DEVICES)
    def test_a_decoding_step_waits_for_the_device_only_to_decide_whether_to_stop(self, tester: Tester, device: str):
        """Each step of generate() (``SEARCHES``) brings a value to the host once (``STEP_SYNCS``: whether to stop,
        in transformers' loop or ours; and the monotonic attention's scan), never for hf_bahdanau's checks or
        bookkeeping: on a GPU each such round trip stalls the step's kernels."""
        if tester.generate is None:
            pytest.skip(f"{tester.name} does not generate")
        model = tester.model().to(device)
        source = {key: value for key, value in on(device, with_float64(tester.batch(False))).items()
                  if not key.startswith("decoder_")}
        for name, search in SEARCHES.items():
            per_step = syncs_per_step(model, source, {**tester.generate, **search})
            assert {where: count for where, count in per_step.items() if where not in STEP_SYNCS} == {}, name
            assert sum(count for where, count in per_step.items() if where in STOP_DECISIONS) == 1, name

    @pytest.mark.slow
    def test_remote_code_in_a_process_without_the_package(self, tester: Tester, tmp_path):
        """A saved folder (with the family's image processor, if it has one) loads with ``trust_remote_code=True`` in a
        fresh ``python -I`` process where hf_bahdanau cannot be imported, as the code it carries, and gives the logits
        and the generated ids of the model here."""
        model = tester.model()
        folder = tmp_path / "model"
        model.save_pretrained(folder)
        family = FAMILIES.get(tester.family)
        if family is not None and family.image_processor is not None:
            family.image_processor().save_pretrained(folder)
        batch = with_float64(tester.batch(False))
        source = {key: value for key, value in batch.items() if not key.startswith("decoder_")}
        torch.save(dict(batch=batch, source=source, generate=tester.generate), tmp_path / "inputs.pt")
        child = run_child(REMOTE_CHILD, tmp_path, str(folder), tester.auto_class.__name__, isolated=True,
                          hide_package=True)
        assert child["hf_bahdanau_modules"] == []
        assert child["module"].startswith("transformers_modules.") and child["name"] == type(model).__name__
        if family is not None and family.image_processor is not None:
            assert child["processor"] == f"transformers_modules.{family.image_processor.__name__}"
        answers = torch.load(tmp_path / "answers.pt")
        assert_log_probs_close(answers["logits"], run(model, batch).logits)
        if tester.generate is not None:
            with torch.no_grad():
                assert torch.equal(answers["generated"], model.generate(**source, **tester.generate))


REMOTE_CHILD = """
    import json
    import sys
    from pathlib import Path

    import torch
    import transformers

    torch.set_num_threads(1)
    folder, auto_class = sys.argv[1:]
    inputs = torch.load(Path(folder).parent / "inputs.pt")
    model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=True, dtype=torch.float64)
    answers = {}
    with torch.no_grad():
        answers["logits"] = model.eval()(**inputs["batch"]).logits
        if inputs["generate"] is not None:
            answers["generated"] = model.generate(**inputs["source"], **inputs["generate"])
    torch.save(answers, Path(folder).parent / "answers.pt")
    processor = None
    if (Path(folder) / "preprocessor_config.json").is_file():
        processor = type(transformers.AutoImageProcessor.from_pretrained(folder, trust_remote_code=True))
    print(json.dumps(dict(module=type(model).__module__, name=type(model).__name__,
                          processor=None if processor is None else f"{processor.__module__.split('.')[0]}."
                                                                   f"{processor.__name__}",
                          hf_bahdanau_modules=sorted(name for name in sys.modules if name.startswith("hf_bahdanau")))))
"""
