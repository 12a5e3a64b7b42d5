"""A bucket of jobs: finding job folders, deciding which are stale, and the per-job task of the bucket flow."""
