"""Training: one driver with a plug-in per task, its helpers and the bundled data; not part of the installed library.

Everything runs as a package from the repository root: ``python -m training TASK ...`` trains (``python -m training
--help`` lists the tasks), ``python -m training.<module>`` and ``python -m training.data.make_<data>`` run the other
tools. ``python training/run_<task>.py`` still works, through the shim of ``training/script_path.py``.
"""
