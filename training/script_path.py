"""The one ``sys.path`` change in ``training/`` and ``tests/``: ``python training/run_<task>.py`` runs a file, so Python
puts ``training/`` (not the repository) first on ``sys.path`` and ``import training`` would fail. The ``run_<task>.py``
shims import this module (found there) first; it puts the repository root on ``sys.path``. Everything else runs as a
package, ``python -m training ...``, which needs no change."""

import sys
from pathlib import Path

REPO_ROOT = str(Path(__file__).resolve().parents[1])
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)
