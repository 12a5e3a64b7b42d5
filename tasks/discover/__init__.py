"""Stage 2, discovery: a job's input files listed and fingerprinted, its rows scanned into one
``AttemptRef`` each (``task.py`` is the Prefect task)."""
