"""The ``ng_trajectory`` projection (spec: collection.md §8).

``attach_trajectory`` is the entry point of the per-row sequence; ``build_trajectory`` returns
the validated record without touching the row.
"""

from evidence.projection.attach import attach_trajectory
from evidence.projection.build import build_trajectory

__all__ = ["attach_trajectory", "build_trajectory"]
