"""Stage 4, the reduce: every attempt's part folded, in input order, into the run's outputs (``task.py`` is the Prefect task)."""
