"""Sending a run's rollout traces over OTLP/HTTP (OpenTelemetry SDK + its protobuf exporter).

Traces are sent whole, at most ``TRACES_PER_REQUEST`` per request: MLflow links at most 100
traces of one request to a run, and a trace split across requests would reach a collector
without its root for a while.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from itertools import islice
from typing import Any
from urllib.parse import urlsplit

from evidence import SERVICE_NAME, TraceModel, TraceSkipped
from tasks.export.run_dir import ExportError, finished_manifest, require, run_traces
from tasks.storage import Location

__all__ = ["TRACES_PER_REQUEST", "OtlpSender", "TraceExport", "check_endpoint", "export_to_otel", "traces_url"]

TRACES_PER_REQUEST = 50
TRACES_PATH = "/v1/traces"
TIMEOUT_S = 30.0


@dataclass
class TraceExport:
    """What one export sent: traces and spans, and the rows skipped by reason."""

    traces: int = 0
    spans: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"traces": self.traces, "spans": self.spans, "skipped": dict(sorted(self.skipped.items()))}


def check_endpoint(endpoint: str, option: str = "--endpoint") -> str:
    """``endpoint`` when it is an http(s) URL with a host; an ``ExportError`` naming what it is otherwise.

    ``ftp://x`` or a bare host was taken, then every request failed ("refused 20 traces").
    """
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportError(f"{option} must be an http:// or https:// URL such as http://collector:4318, not {endpoint!r}")
    return endpoint


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: ``endpoint`` itself when it ends with ``/v1/traces``, else that path appended."""
    if urlsplit(endpoint).path.rstrip("/").endswith(TRACES_PATH):
        return endpoint
    return endpoint.rstrip("/") + TRACES_PATH


class OtlpSender:
    """An OTLP/HTTP span exporter for one endpoint and the SDK types its encoder takes.

    Built before anything is read, so a missing extra stops an export at once.
    """

    def __init__(self, endpoint: str, headers: Mapping[str, str]) -> None:
        exporter = require("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        self.sdk = require("opentelemetry.sdk.trace")
        self.resources = require("opentelemetry.sdk.resources")
        self.api = require("opentelemetry.trace")
        scope = require("opentelemetry.sdk.util.instrumentation").InstrumentationScope
        self.scope = scope(SERVICE_NAME, version("evidence-stage"))
        self.url = traces_url(endpoint)
        self.exporter = exporter.OTLPSpanExporter(endpoint=self.url, headers=dict(headers), timeout=TIMEOUT_S)
        self.kinds = {"internal": self.api.SpanKind.INTERNAL, "client": self.api.SpanKind.CLIENT}
        self.statuses = {"unset": self.api.StatusCode.UNSET, "ok": self.api.StatusCode.OK, "error": self.api.StatusCode.ERROR}

    def send(self, items: Iterable[TraceModel | TraceSkipped]) -> TraceExport:
        """Send every trace of ``items``, whole, in requests of at most ``TRACES_PER_REQUEST``."""
        result = TraceExport()
        try:
            for batch in _batches(_counted(items, result), TRACES_PER_REQUEST):
                spans = [span for trace in batch for span in self._sdk_spans(trace)]
                if self.exporter.export(spans).name != "SUCCESS":
                    raise ExportError(f"the OTLP collector at {self.url} refused {len(batch)} traces (see the log above)")
                result.traces += len(batch)
                result.spans += len(spans)
        finally:
            self.exporter.shutdown()
        return result

    def _sdk_spans(self, trace: TraceModel) -> list[Any]:
        """The SDK's finished-span objects for one trace (what its OTLP encoder takes)."""
        resource = self.resources.Resource(dict(trace.resource))
        trace_id = int.from_bytes(trace.trace_id, "big")
        api = self.api

        def context(span_id: bytes) -> Any:
            return api.SpanContext(
                trace_id, int.from_bytes(span_id, "big"), is_remote=False, trace_flags=api.TraceFlags(api.TraceFlags.SAMPLED)
            )

        return [
            self.sdk.ReadableSpan(
                name=span.name,
                context=context(span.span_id),
                parent=context(span.parent_id) if span.parent_id is not None else None,
                resource=resource,
                attributes=dict(span.attributes),
                kind=self.kinds[span.kind],
                status=api.Status(self.statuses[span.status]),
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=self.scope,
                events=[self.sdk.Event(event.name, dict(event.attributes), event.time_ns or 0) for event in span.events],
            )
            for span in trace.spans
        ]


def _counted(items: Iterable[TraceModel | TraceSkipped], result: TraceExport) -> Iterator[TraceModel]:
    for item in items:
        if isinstance(item, TraceSkipped):
            result.skipped[item.reason] += 1
        else:
            yield item


def _batches(traces: Iterator[TraceModel], size: int) -> Iterator[list[TraceModel]]:
    while batch := list(islice(traces, size)):
        yield batch


def export_to_otel(run_dir: Location, endpoint: str, headers: Mapping[str, str]) -> TraceExport:
    """One trace per main row of a finished run, sent to an OTLP/HTTP endpoint."""
    sender = OtlpSender(check_endpoint(endpoint), headers)
    return sender.send(run_traces(run_dir, finished_manifest(run_dir)))
