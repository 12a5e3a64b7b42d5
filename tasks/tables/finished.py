"""What the table commands ask of a run directory before they read it: finished, of this stage, and its tables' version."""

from __future__ import annotations

import orjson

from evidence.tables import SCHEMA_FILE
from tasks.rundir import RunPaths, is_complete
from tasks.storage import Location
from tasks.tables.build import TablesError, require_outputs, tables_folder
from tasks.tables.manifest import ManifestError, ManifestStream


def finished_run(run_dir: Location) -> tuple[str, str]:
    """The ``(job_id, run_id)`` of a finished run directory, from its manifest.

    Raises:
        TablesError: not a run directory (no ``manifest.json``), an unfinished run (no
            ``_SUCCESS``), or one lacking an output the tables are built from.
    """
    paths = RunPaths(run_dir)
    if not paths.manifest.is_file():
        raise TablesError(f"not a run directory of evidence-stage (no manifest.json): {run_dir.display}")
    if not is_complete(run_dir):
        raise TablesError(f"the run is not complete (no _SUCCESS): {run_dir.display}")
    require_outputs(run_dir)
    try:
        run = ManifestStream(paths.manifest).head().run
    except (ManifestError, orjson.JSONDecodeError) as exc:
        raise TablesError(f"unreadable manifest.json: {exc}") from exc
    return run.job_id, run.run_id


def tables_version(run_dir: Location) -> int | None:
    """The schema version of the run's ``tables/`` (its ``_schema.json``), or None when it has none."""
    schema = tables_folder(run_dir).child(SCHEMA_FILE)
    if not schema.is_file():
        return None
    try:
        version = orjson.loads(schema.read_bytes())["schema_version"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise TablesError(f"unreadable {SCHEMA_FILE} in {tables_folder(run_dir).display}") from exc
    if not isinstance(version, int):
        raise TablesError(f"unreadable {SCHEMA_FILE} in {tables_folder(run_dir).display}")
    return version
