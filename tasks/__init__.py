"""tasks: binds the pure ``evidence`` library to storage (fsspec) and to Prefect with thin tasks."""
