"""Stage 5, publishing: the quality gate, the report, ``manifest.json``, ``_SUCCESS`` and LATEST,
events and artifacts (``task.py`` talks to Prefect)."""
