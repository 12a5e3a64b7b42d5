"""Model-call capture files: tolerant reading and the ``ng_model_call_capture`` merge.

Spec: collection.md §3–§5. Bytes in, dicts and :class:`~evidence.models.capture.ModelCallRecord`
out; the caller (the task layer) owns the files and hands over their bytes via a lookup.
"""

from evidence.capture.merge import CAPTURE_SUFFIX, MARKER_SUFFIX, CaptureFiles, CaptureLookup, merge_capture, merge_model_call_capture
from evidence.capture.reading import read_capture

__all__ = ["CAPTURE_SUFFIX", "MARKER_SUFFIX", "CaptureFiles", "CaptureLookup", "merge_capture", "merge_model_call_capture", "read_capture"]
