"""The parameter models: the Prefect UI's forms and the CLI's options, one declaration each.

``stage`` (one job's run), ``batch`` (a bucket of jobs), ``compare`` (two runs), ``export``
(MLflow and OTel), the gate's limits (``gate``), storage URLs and how storage is reached
(``storage``: ``StorageAccess``, whose fields every flow's model takes), the terminal's options
of the commands that run flows, in no form (``console``), the form's optional field types and
borrowed fields (``fields``) and the command-line metadata a field carries where its option
differs from the one its type implies (``cli``; ``flows/cli/options.py`` makes the options).
"""
