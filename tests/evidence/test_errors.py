"""Every exception the stage raises on purpose is a ``StageError``, the root of the one documented tree."""

from __future__ import annotations

import pytest

from evidence import AtifExportError, EvidenceError, PartError, RowRejected, StageError
from tasks.attempts.parts import PartMissing
from tasks.export.run_dir import ExportError, ExtraMissing
from tasks.publish.gate import GateFailed
from tasks.rundir import RunConflict
from tasks.storage import InputNotFound, PermanentStorageError, StorageError, TransientStorageError


@pytest.mark.parametrize(
    ("error", "parent"),
    [
        (EvidenceError, StageError),
        (RowRejected, EvidenceError),
        (AtifExportError, EvidenceError),
        (PartError, EvidenceError),
        (StorageError, StageError),
        (TransientStorageError, StorageError),
        (PermanentStorageError, StorageError),
        (InputNotFound, PermanentStorageError),
        (PartMissing, PermanentStorageError),
        (RunConflict, StageError),
        (GateFailed, StageError),
        (ExportError, StageError),
        (ExtraMissing, ExportError),
    ],
)
def test_each_exception_sits_where_the_tree_says(error: type[Exception], parent: type[Exception]) -> None:
    assert issubclass(error, parent)


def test_built_in_kinds_callers_catch_are_kept() -> None:
    assert issubclass(PartError, ValueError)
    assert issubclass(ExportError, RuntimeError)
