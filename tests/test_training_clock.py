"""training_minutes in the Trainer's log (training_clock.TrainingClockCallback) and the curve drawn from it
(plot_curve.py): evaluation time is left out, and a run without the metric is a clear error."""

import json

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from training import plot_curve
from training.common import training_clock
from training.common.training_clock import TrainingClockCallback


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def log(callback, state, clock, seconds, entry):
    """Advance the clock by ``seconds``, then log ``entry`` as Trainer.log does (history first, then callbacks)."""
    clock.now += seconds
    state.log_history.append(dict(entry))
    callback.on_log(TrainingArguments("unused", report_to="none"), state, TrainerControl(), logs=entry)


def test_training_minutes_leave_out_evaluation(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(training_clock.time, "perf_counter", clock)
    callback, state = TrainingClockCallback(), TrainerState()
    callback.on_train_begin(None, state, TrainerControl())
    log(callback, state, clock, 60.0, {"loss": 2.0})                       # 1 minute of training
    log(callback, state, clock, 90.0, {"eval_wer": 40.0, "eval_runtime": 30.0})  # 1 more minute + 30 s evaluating
    log(callback, state, clock, 120.0, {"loss": 1.0})                      # 2 more minutes
    assert [entry["training_minutes"] for entry in state.log_history] == [1.0, 2.0, 4.0]


def test_nothing_is_added_before_training_begins():
    state = TrainerState(log_history=[{"eval_wer": 10.0}])
    TrainingClockCallback().on_log(None, state, TrainerControl(), logs={"eval_wer": 10.0})
    assert state.log_history == [{"eval_wer": 10.0}]


def test_the_curve_reads_the_metric_against_minutes(tmp_path, capsys):
    history = [{"loss": 3.0, "step": 10, "training_minutes": 0.5},
               {"eval_wer": 50.0, "step": 10, "training_minutes": 0.5},
               {"eval_wer": 30.0, "step": 20, "training_minutes": 1.25}]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    plot_curve.main([str(tmp_path), "--metric", "eval_wer", "--output", str(tmp_path / "curve.png")])
    assert (tmp_path / "curve.png").stat().st_size > 1000
    printed = capsys.readouterr().out.split("\n")
    assert printed[:2] == ["     0.5 min  eval_wer = 50.00", "     1.2 min  eval_wer = 30.00"]
    with pytest.raises(ValueError, match="'eval_per' is not logged with training_minutes.*eval_wer"):
        plot_curve.metric_against_time(history, "eval_per")


def test_the_curve_command_names_a_folder_without_a_run(tmp_path, capsys):
    with pytest.raises(SystemExit):
        plot_curve.main([str(tmp_path), "--output", str(tmp_path / "curve.png")])
    assert "has no trainer_state.json" in capsys.readouterr().err
