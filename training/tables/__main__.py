"""``python -m training.tables TABLE ...``: see ``training.tables.main``."""

from training.tables import main

if __name__ == "__main__":
    main()
