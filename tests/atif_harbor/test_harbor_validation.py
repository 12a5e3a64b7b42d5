"""Every ATIF file we emit for the golden cases and samples passes harbor 0.25.0's validator."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from evidence.atif import export_rollouts
from evidence.errors import AtifExportError
from evidence.models.atif import Exporter
from tests.conformance.conftest import load_cases
from tests.evidence.atif.test_samples import content, export_line, sample_rows

EXPORTER = Exporter(name="evidence-stage", version="0.1.0")
VALIDATE = Path(__file__).with_name("validate.py")


def _golden_files() -> dict[str, bytes]:
    files = {}
    for name, case in load_cases("atif"):
        if "expected_files" in case:
            exported = export_rollouts(
                case["rollouts_jsonl"].encode(),
                session_id=case["session_id"],
                agent_version=case["agent_version"],
                exporter=EXPORTER,
            )
            files.update({f"{name}__{file}": content for file, content in exported if file.endswith(".json")})
    return files


def _sample_files() -> dict[str, bytes]:
    files = {}
    for job in ("realistic_job", "hostile_job"):
        for line, _ in sample_rows(job):
            try:
                rollout = export_line(line, session_id="sample", agent_version="1.0.0", exporter=EXPORTER)
            except AtifExportError:
                continue
            files[f"{job}__{rollout.name}"] = content(rollout)
    return files


def _example_job_files(output: Path) -> dict[str, bytes]:
    """The bundled example job through the stage's own per-rollout export (collection included)."""
    from flows.cli.main import main
    from tests.conftest import example_run_argv

    assert (
        main(
            [
                *example_run_argv(output),
                "--run-id",
                "harbor",
            ]
        )
        == 0
    )
    (atif,) = output.glob("*/runs/harbor/atif")
    return {f"example__{p.name}": p.read_bytes() for p in sorted(atif.glob("*.json"))}


def _harbor_errors(harbor: Path, directory: Path, files: dict[str, bytes]) -> dict[str, list[str]]:
    paths = []
    for name, data in files.items():
        path = directory / name
        path.write_bytes(data)
        paths.append(str(path))
    done = subprocess.run([str(harbor), str(VALIDATE)], input="\n".join(paths), capture_output=True, text=True, check=True)
    return {Path(path).name: errors for path, errors in json.loads(done.stdout).items()}


def test_emitted_files_validate_with_harbor(harbor: Path, tmp_path: Path, prefect_server: str) -> None:
    example = _example_job_files(tmp_path / "run")
    assert example, "the example job has convertible rollouts"
    files = {**_golden_files(), **_sample_files(), **example}
    assert len(files) >= 40 + len(example)
    broken = json.loads(next(iter(files.values())))
    broken["steps"][0]["step_id"] = 5
    files["negative_control.json"] = json.dumps(broken).encode()
    (tmp_path / "files").mkdir()
    errors = _harbor_errors(harbor, tmp_path / "files", files)
    assert errors.keys() == files.keys()
    assert errors.pop("negative_control.json"), "harbor must flag a wrong step_id"
    assert {name: problems for name, problems in errors.items() if problems} == {}
