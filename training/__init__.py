"""Training scripts and their helpers (tokenizers, metrics, bundled data); not part of the installed library.

Scripts run as ``python training/<script>.py`` and put the repository root on ``sys.path`` so that
``training.*`` imports the same way there and in the tests.
"""
