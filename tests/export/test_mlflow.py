"""``evidence-stage export mlflow|otel`` against a real MLflow server, read back through its REST API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from evidence import RUN_KEY_TAG, RolloutVerdicts, RunRecord, TraceModel, main_identities, rollout_trace
from flows.cli.main import main
from tasks.rundir import finished_run, run_attempts
from tasks.storage import Location

pytestmark = pytest.mark.timeout(300)


def _api(base: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    response = httpx.request(method, f"{base}{path}", timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def _expected_traces(run_dir: Path) -> dict[str, TraceModel]:
    """The traces the run's rows give, by MLflow trace id (``tr-<hex>``)."""
    location = Location(str(run_dir))
    record = RunRecord.from_finished(finished_run(location))
    rows = [orjson.loads(line) for line in (run_dir / "rollouts.jsonl").read_bytes().splitlines()]
    verdicts = RolloutVerdicts(orjson.loads(line) for line in (run_dir / "health" / "rollout_verdicts.jsonl").read_bytes().splitlines())
    pairs = zip(rows, main_identities(record, run_attempts(location)), strict=True)
    traces = [rollout_trace(row, identity, verdicts.take(row, n)) for n, (row, identity) in enumerate(pairs)]
    return {f"tr-{t.trace_id.hex()}": t for t in traces if isinstance(t, TraceModel)}


def _event_shape(spans: list[dict[str, Any]]) -> list[tuple[str, str, int, tuple[tuple[str, Any], ...]]]:
    """(span id hex, event name, time, attributes) of the server spans' events (OTLP's typed values unwrapped)."""
    import base64

    def value(typed: dict[str, Any]) -> Any:
        ((_, inner),) = typed.items()
        return inner

    return sorted(
        (
            base64.b64decode(s["span_id"]).hex(),
            e["name"],
            int(e["time_unix_nano"]),
            tuple(sorted((a["key"], value(a["value"])) for a in e.get("attributes", []))),
        )
        for s in spans
        for e in s.get("events", [])
    )


def _model_events(trace: TraceModel) -> list[tuple[str, str, int, tuple[tuple[str, Any], ...]]]:
    return sorted((s.span_id.hex(), e.name, e.time_ns or 0, tuple(sorted(e.attributes.items()))) for s in trace.spans for e in s.events)


def _traces_of(base: str, experiment_id: str, filter_string: str = "") -> dict[str, list[dict[str, Any]]]:
    """Trace id -> its spans as the server returns them (search, then one get per trace)."""
    body = {
        "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}],
        "max_results": 500,
        "filter": filter_string,
    }
    infos = _api(base, "POST", "/api/3.0/mlflow/traces/search", json=body).get("traces", [])
    return {
        info["trace_id"]: _api(base, "GET", "/api/3.0/mlflow/traces/get", params={"trace_id": info["trace_id"]})["trace"]["spans"]
        for info in infos
    }


def _span_shape(spans: list[dict[str, Any]]) -> list[tuple[str, str | None, str, int, int]]:
    """(span id hex, parent id hex, name, start, end) of server spans (ids arrive base64)."""
    import base64

    def hexed(value: str | None) -> str | None:
        return base64.b64decode(value).hex() if value else None

    return sorted(
        (hexed(s["span_id"]), hexed(s.get("parent_span_id")), s["name"], int(s["start_time_unix_nano"]), int(s["end_time_unix_nano"]))
        for s in spans
    )


def _model_shape(trace: TraceModel) -> list[tuple[str, str | None, str, int, int]]:
    return sorted(
        (s.span_id.hex(), s.parent_id.hex() if s.parent_id else None, s.name, s.start_ns or 0, s.end_ns or 0) for s in trace.spans
    )


def _export(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(list(argv)) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1, lines  # what was sent, as one JSON line: MLflow's own "View run" lines are not printed (issue 35)
    return json.loads(lines[0])


def _read_back(base: str, run_dir: Path, experiment_name: str) -> dict[str, Any]:
    experiment_id = _api(base, "GET", "/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": experiment_name})["experiment"][
        "experiment_id"
    ]
    manifest = orjson.loads((run_dir / "manifest.json").read_bytes())
    key = f"{manifest['run']['job_id']}/{manifest['run']['run_id']}"
    runs = _api(
        base, "POST", "/api/2.0/mlflow/runs/search", json={"experiment_ids": [experiment_id], "filter": f"tags.`{RUN_KEY_TAG}` = '{key}'"}
    )["runs"]
    run = _api(base, "GET", "/api/2.0/mlflow/runs/get", params={"run_id": runs[0]["info"]["run_id"]})["run"]
    run_id = run["info"]["run_id"]
    artifacts = {
        f["path"]: f.get("file_size")
        for f in _api(base, "GET", "/api/2.0/mlflow/artifacts/list", params={"run_id": run_id}).get("files", [])
        if not f["is_dir"]
    }
    artifacts |= {
        f["path"]: f.get("file_size")
        for f in _api(base, "GET", "/api/2.0/mlflow/artifacts/list", params={"run_id": run_id, "path": "health"}).get("files", [])
    }
    history = _api(base, "GET", "/api/2.0/mlflow/metrics/get-history", params={"run_id": run_id, "metric_key": "verdicts/healthy"})[
        "metrics"
    ]
    return {
        "experiment_id": experiment_id,
        "runs_with_key": len(runs),
        "run_id": run_id,
        "status": run["info"]["status"],
        "params": {p["key"]: p["value"] for p in run["data"]["params"]},
        "tags": {t["key"]: t["value"] for t in run["data"].get("tags", []) if t["key"].startswith("evidence_stage.")},
        "metrics": {m["key"]: m["value"] for m in run["data"]["metrics"]},
        "healthy_history": [(m["value"], m["timestamp"], m["step"]) for m in history],
        "artifacts": artifacts,
        "traces": _traces_of(base, experiment_id, f"run_id = '{run_id}'"),
    }


def test_export_mlflow_creates_one_run_then_updates_it(
    mlflow_server: str, example_run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("export", "mlflow", str(example_run_dir), "--tracking-uri", mlflow_server, "--experiment", "evidence-stage-test")
    first = _export(capsys, *argv)
    after_first = _read_back(mlflow_server, example_run_dir, "evidence-stage-test")
    second = _export(capsys, *argv)
    after_second = _read_back(mlflow_server, example_run_dir, "evidence-stage-test")

    manifest = orjson.loads((example_run_dir / "manifest.json").read_bytes())
    perf = orjson.loads((example_run_dir / "perf_summary.json").read_bytes())
    expected = _expected_traces(example_run_dir)
    assert (first["created"], second["created"]) == (True, False)
    assert first["run_id"] == second["run_id"] == after_first["run_id"] == after_second["run_id"]
    for back in (after_first, after_second):
        assert back["runs_with_key"] == 1
        assert back["status"] == "FINISHED"
        assert back["params"] == {
            "job_id": manifest["run"]["job_id"],
            "run_id": manifest["run"]["run_id"],
            "scope": "full",
            "config_fingerprint": manifest["config_fingerprint"],
            "input_fingerprint": manifest["inputs"]["fingerprint"],
            "package_version": manifest["run"]["package_version"],
        }
        assert back["metrics"]["verdicts/healthy"] == manifest["counts"]["verdicts"]["healthy"]
        assert back["metrics"]["verdict_shares/unhealthy"] == pytest.approx(
            manifest["counts"]["verdicts"]["unhealthy"] / manifest["counts"]["rows"]["main"]
        )
        assert back["metrics"]["atif/rejections"] == manifest["counts"]["atif_rejections"]
        assert back["metrics"]["findings/agent_turn_hollow"] == 11
        assert back["metrics"]["perf/total_prompt_tokens"] == perf["run"]["total_prompt_tokens"]
        assert back["metrics"]["perf_groups/chat_agent/mean_num_turns"] == pytest.approx(perf["groups"]["chat_agent"]["mean_num_turns"])
        assert len(back["metrics"]) == first["metrics"]
        scores = orjson.loads((example_run_dir / "scores.json").read_bytes())["groups"]
        assert back["metrics"]["scores/math_with_judge/mean/reward/raw"] == scores["math_with_judge"]["metrics"]["mean/reward"]["raw"]
        assert back["metrics"]["scores/math_with_judge/mean/reward/clean"] == scores["math_with_judge"]["metrics"]["mean/reward"]["clean"]
        assert back["metrics"]["scores/claude_code_agent/masked_rollouts/clean"] == 4
        assert "scores/claude_code_agent/mean/reward/clean" not in back["metrics"]  # every rollout masked: no clean score
        names = ("report.html", "scores.json", "capabilities.json", "health/quality_summary.json", "perf_summary.json", "manifest.json")
        assert back["artifacts"] == {name: (example_run_dir / name).stat().st_size for name in names}
        assert set(back["traces"]) == set(expected)
        for trace_id, spans in back["traces"].items():
            assert _span_shape(spans) == _model_shape(expected[trace_id]), trace_id
            assert _event_shape(spans) == _model_events(expected[trace_id]), trace_id
        health = [
            dict(a) for spans in back["traces"].values() for *_, a in _event_shape(spans) if dict(a)["gen_ai.evaluation.name"] == "health"
        ]
        assert len(health) == len(expected)  # every trace's verdict arrived
        assert {a["gen_ai.evaluation.score.label"] for a in health} <= {"healthy", "unhealthy", "unobserved"}
    assert len(after_second["healthy_history"]) == 1, "a second export must not add metric points"
    assert (
        first["traces"]
        == second["traces"]
        == {
            "traces": len(expected),
            "spans": sum(len(t.spans) for t in expected.values()),
            "skipped": {"ng_trajectory has no invocations": 4},
        }
    )
    print(
        "\nMLflow read-back after the second export:",
        json.dumps(
            {k: v if k != "traces" else {"count": len(v), "spans": sum(map(len, v.values()))} for k, v in after_second.items()},
            indent=1,
            sort_keys=True,
        ),
    )


def test_export_otel_sends_the_same_ids_to_an_otlp_receiver(
    mlflow_server: str, example_run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MLflow's /v1/traces is a real OTLP/HTTP receiver; a fresh experiment holds only what we sent."""
    experiment_id = _api(mlflow_server, "POST", "/api/2.0/mlflow/experiments/create", json={"name": "evidence-stage-otel"})["experiment_id"]
    argv = ("export", "otel", str(example_run_dir), "--endpoint", mlflow_server, "--header", f"x-mlflow-experiment-id={experiment_id}")
    sent = [_export(capsys, *argv) for _ in range(2)]
    expected = _expected_traces(example_run_dir)
    received = _traces_of(mlflow_server, experiment_id)
    assert sent[0] == sent[1]
    assert sent[0]["traces"] == len(expected) == len(received)
    for trace_id, spans in received.items():
        assert _span_shape(spans) == _model_shape(expected[trace_id])
        assert _event_shape(spans) == _model_events(expected[trace_id])


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    """Without the export extra's packages (import blocked), the CLI refuses in one line, before reading anything."""
    code = (
        "import sys; sys.modules['mlflow'] = None; sys.modules['opentelemetry.exporter'] = None; "
        "from flows.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    for argv in (
        ["export", "mlflow", str(tmp_path), "--tracking-uri", "http://127.0.0.1:9"],
        ["export", "otel", str(tmp_path), "--endpoint", "http://127.0.0.1:9"],
    ):
        done = subprocess.run([sys.executable, "-c", code, *argv], check=False, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [done.stderr.strip()]
        assert done.stderr.startswith("evidence-stage: error: exporting needs ")
        assert done.stderr.strip().endswith("install evidence-stage[export]")


def test_an_unfinished_run_directory_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    assert main(["export", "otel", str(tmp_path), "--endpoint", "http://127.0.0.1:9"]) == 2
    assert capsys.readouterr().err == f"evidence-stage: error: {tmp_path}/_SUCCESS: no _SUCCESS: not a finished run directory\n"


def test_an_unreachable_tracking_server_is_one_line_within_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listening, and a server that accepts and never answers: one line, in seconds (MLflow's own retries took 4 minutes)."""
    import socket
    import time

    from tasks.export import mlflow as exporter
    from tests.conftest import free_port

    (tmp_path / "_SUCCESS").write_text("")
    started = time.monotonic()
    assert main(["export", "mlflow", str(tmp_path), "--tracking-uri", f"http://127.0.0.1:{free_port()}"]) == 2
    assert capsys.readouterr().err.endswith("is not reachable: Connection refused\n")
    monkeypatch.setattr(exporter.check_reachable, "__defaults__", (1.0,))  # REACH_TIMEOUT_S, shortened
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        assert main(["export", "mlflow", str(tmp_path), "--tracking-uri", f"http://127.0.0.1:{silent.getsockname()[1]}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evidence-stage: error: the MLflow server at http://127.0.0.1:"), err
    assert err.endswith("is not reachable: timed out\n"), err
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("endpoint", ["ftp://collector:4318", "collector:4318", "http://"])
def test_an_otlp_endpoint_that_is_not_http_is_refused_before_sending(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "_SUCCESS").write_text("")
    assert main(["export", "otel", str(tmp_path), "--endpoint", endpoint]) == 2
    assert (
        capsys.readouterr().err
        == f"evidence-stage: error: --endpoint must be an http:// or https:// URL such as http://collector:4318, not {endpoint!r}\n"
    )
