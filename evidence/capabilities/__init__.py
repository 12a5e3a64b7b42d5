"""Measured trajectory-capability matrix: what evidence each agent really supplied in a run.

NeMo Gym publishes a hand-maintained matrix of which agents supply which trajectory evidence.
This package measures the same seven dimensions from a run's enriched rows, so
``capabilities.json`` states what *this* run's evidence contains. Definitions: the README's
"Trajectory capability matrix" section (keep it in step with ``dimensions.py``).
"""

from evidence.capabilities.dimensions import DIMENSION_LABELS, DIMENSIONS
from evidence.capabilities.matrix import (
    STATUS_SYMBOLS,
    UNKNOWN_AGENT,
    build_capabilities,
    capability_digest,
    histogram_values,
)

__all__ = [
    "DIMENSIONS",
    "DIMENSION_LABELS",
    "STATUS_SYMBOLS",
    "UNKNOWN_AGENT",
    "build_capabilities",
    "capability_digest",
    "histogram_values",
]
