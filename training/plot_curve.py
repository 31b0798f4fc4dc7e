"""Plot an evaluation metric against the training time a run spent, from its ``trainer_state.json``
(``training_minutes``, logged by ``training_clock.TrainingClockCallback``), so users can choose a budget:

    python -m training.plot_curve outputs/g2p-cmudict --metric eval_wer --output docs/g2p_wer_curve.png
"""

import argparse
import json
from collections.abc import Sequence
from pathlib import Path


def metric_against_time(log_history: Sequence[dict], metric: str) -> list[tuple[float, float]]:
    """(training minutes, value) of every log entry that has ``metric``; ValueError if none has both."""
    points = [(entry["training_minutes"], entry[metric]) for entry in log_history
              if metric in entry and "training_minutes" in entry]
    if not points:
        logged = sorted({key for entry in log_history for key in entry})
        raise ValueError(f"`metric` {metric!r} is not logged with training_minutes in this run; logged keys: {logged}.")
    return points


def plot_metric_against_time(log_history: Sequence[dict], metric: str, path: str | Path, title: str = ""):
    """Save ``metric`` against training minutes as a line plot at ``path``."""
    from matplotlib.figure import Figure

    minutes, values = zip(*metric_against_time(log_history, metric))
    figure = Figure(figsize=(6, 4), layout="constrained")
    ax = figure.add_subplot()
    ax.plot(minutes, values, "o-")
    for x, y in zip(minutes, values):
        ax.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    ax.set(xlabel="training minutes (evaluation excluded)", ylabel=metric, title=title)
    ax.grid(alpha=0.3)
    figure.savefig(path, dpi=120)
    return figure


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path, help="a training script's output folder (with trainer_state.json)")
    parser.add_argument("--metric", default="eval_wer")
    parser.add_argument("--output", type=Path, required=True, help="the picture to write (.png, .svg, ...)")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    state_file = args.run_dir / "trainer_state.json"
    if not state_file.is_file():
        parser.error(f"run_dir {str(args.run_dir)!r} has no trainer_state.json: give a training script's output "
                     "folder.")
    log_history = json.loads(state_file.read_text())["log_history"]
    try:
        plot_metric_against_time(log_history, args.metric, args.output, title=args.title)
    except ValueError as error:
        parser.error(str(error))
    for minutes, value in metric_against_time(log_history, args.metric):
        print(f"{minutes:8.1f} min  {args.metric} = {value:.2f}")


if __name__ == "__main__":
    main()
