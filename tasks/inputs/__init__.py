"""Stage 1, a job's inputs: its rollouts files (shards) and their sidecars, job and run ids, how a job folder is recognised."""
