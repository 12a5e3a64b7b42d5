"""Analysis tables: a run's outputs as Parquet under ``<run>/tables/`` (``build.build_tables``), and reading them back (``select``)."""
