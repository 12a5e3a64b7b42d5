"""discover."""
