"""What every training task shares: arguments, data files, tokenizers, metrics, the Trainer, the pictures and the end
of a run (card, Hub push). The tasks (``training/tasks/``) and the other scripts import from here."""
