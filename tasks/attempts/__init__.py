"""attempts."""
