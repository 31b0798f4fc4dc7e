"""Write the model card of a saved model folder.

    python -m hf_bahdanau.cards outputs/dates --task translation --dataset_name dates \
        --dataset_description "Generated dates -> ISO 8601" --language en de fr --model_id me/dates-rnnsearch
"""

import argparse
import json

from hf_bahdanau.families import FAMILIES

from .card import write_model_card


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m hf_bahdanau.cards", description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", help="a folder written by save_pretrained (config.json, *.safetensors)")
    parser.add_argument("--task", choices=[family.task for family in FAMILIES.values()],
                        help="default: the task of the folder's model family (translation for a seq2seq model)")
    parser.add_argument("--results", help="JSON file of metrics (default: MODEL_DIR/all_results.json)")
    parser.add_argument("--dataset_name")
    parser.add_argument("--dataset_description")
    parser.add_argument("--training_args", help="JSON file of TrainingArguments.to_dict() "
                                                "(default: MODEL_DIR/training_args.bin)")
    parser.add_argument("--language", nargs="+")
    parser.add_argument("--license", help="a Hub license id (default: the folder's card's, else apache-2.0)")
    parser.add_argument("--base_model")
    parser.add_argument("--model_id", help="the name the usage code loads, e.g. the Hub repository")
    parser.add_argument("--example_inputs", nargs="+", help="texts the usage code runs on (image-to-text: image files "
                                                             "in MODEL_DIR, default: its example_*.png)")
    args = parser.parse_args(argv)

    def load(path):
        return None if path is None else json.loads(open(path).read())

    path = write_model_card(
        args.model_dir, task=args.task, results=load(args.results), dataset_name=args.dataset_name,
        dataset_description=args.dataset_description, training_args=load(args.training_args),
        language=args.language, license=args.license, base_model=args.base_model, model_id=args.model_id,
        example_inputs=args.example_inputs,
    )
    print(path)


if __name__ == "__main__":
    main()
