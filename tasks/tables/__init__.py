"""A run's analysis outputs: its tables (``<run>/tables/*.parquet``) and rollout viewer (``<run>/viewer/``).

The reduce feeds both one judged attempt at a time (``sink``, ``viewer``, ``judged``);
``build`` rebuilds them from a finished run's outputs; ``selection`` reads the tables back.
"""
