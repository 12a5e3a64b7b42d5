"""The attempt engine: one row's whole journey, bytes in, one typed outcome out.

:func:`process_attempt` runs 0.7.0's per-row sequence and every per-row digest; the outcome
(:mod:`evidence.attempt.outcome`) is encoded as the attempt's part (:mod:`evidence.attempt.part`)
and folded by the reduce. Nothing raises out of an attempt.
"""

from evidence.attempt.outcome import AtifFile, AtifRefusal, AttemptOutcome, MainDigests, PerfDigest, Status
from evidence.attempt.part import PART_VERSION, AttemptPart, PartError, decode_part, decode_part_located, encode_part
from evidence.attempt.process import AttemptConfig, AttemptInputs, process_attempt, unprocessed_attempt
from evidence.errors import failure_reason

__all__ = [
    "PART_VERSION",
    "AtifFile",
    "AtifRefusal",
    "AttemptConfig",
    "AttemptInputs",
    "AttemptOutcome",
    "AttemptPart",
    "MainDigests",
    "PartError",
    "PerfDigest",
    "Status",
    "decode_part",
    "decode_part_located",
    "encode_part",
    "failure_reason",
    "process_attempt",
    "unprocessed_attempt",
]
