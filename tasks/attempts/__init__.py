"""Stage 3, the fan-out: each group of attempts read, run through ``evidence.process_attempt``
and written as parts (``task.py`` is the Prefect task)."""
