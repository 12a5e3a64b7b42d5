"""Strict ATIF v1.7 export of enriched rollout rows, reproducing NeMo Gym 0.7.0.

Per rollout (the engine, and the batch): ``atif_of_line``, or ``convert_row`` then
``encode_converted`` (``digest.py``). Whole file (the ``export-atif`` drop-in):
``export_rollouts`` plus the message builders the CLI prints.
"""

from evidence.atif.batch import (
    MANIFEST_NAME,
    MULTIPLE_AGENTS_MESSAGE,
    NO_RECORDS_MESSAGE,
    BatchRules,
    FirstKeyWins,
    config_error_message,
    duplicate_key_message,
    export_rollouts,
    output_created_message,
    output_exists_message,
    rollouts_not_found_message,
    success_lines,
)
from evidence.atif.convert import rollout_to_atif
from evidence.atif.digest import AtifFile, AtifRefusal, atif_of_line, convert_row, encode_converted
from evidence.atif.encode import encode_trajectory, manifest_bytes
from evidence.atif.strict_json import json_equal, loads_strict

__all__ = [
    "MANIFEST_NAME",
    "MULTIPLE_AGENTS_MESSAGE",
    "NO_RECORDS_MESSAGE",
    "AtifFile",
    "AtifRefusal",
    "BatchRules",
    "FirstKeyWins",
    "atif_of_line",
    "config_error_message",
    "convert_row",
    "duplicate_key_message",
    "encode_converted",
    "encode_trajectory",
    "export_rollouts",
    "json_equal",
    "loads_strict",
    "manifest_bytes",
    "output_created_message",
    "output_exists_message",
    "rollout_to_atif",
    "rollouts_not_found_message",
    "success_lines",
]
