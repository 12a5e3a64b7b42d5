"""How a flow runs: resolving the run, grouping attempts, the task runners and their workers, progress and the console."""
