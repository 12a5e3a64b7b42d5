"""flows: Prefect flows (one job; a bucket of jobs), their parameter models and the CLI."""
