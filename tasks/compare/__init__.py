"""Comparing two finished run directories (``run_dirs.py``), and the comparison as a task with its artifacts (``task.py``)."""
