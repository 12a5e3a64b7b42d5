"""The ``ng_trajectory`` projection (spec: collection.md §8).

``attach_trajectory`` is the entry point of the per-row sequence (``attach_joined_trajectory``
when the caller holds the joined observation bundle); ``build_trajectory`` returns the validated
record without touching the row.
"""

from evidence.projection.attach import attach_joined_trajectory, attach_trajectory
from evidence.projection.build import build_joined_trajectory, build_trajectory

__all__ = ["attach_joined_trajectory", "attach_trajectory", "build_joined_trajectory", "build_trajectory"]
