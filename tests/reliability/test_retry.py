"""Retry policy: transient storage errors are retried with backoff, everything else is not."""

from __future__ import annotations

import errno
from types import SimpleNamespace
from typing import Any

import pytest

from tasks.storage import InputNotFound, PermanentStorageError, TransientStorageError, retry
from tasks.storage.base import classify
from tasks.storage.retry import ATTEMPTS, backoff_delay, call_with_retries, retry_on_transient


class Flaky:
    """Raises the given exceptions in turn, then returns 'ok'; counts calls."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(retry.time, "sleep", slept.append)
    return slept


def test_transient_errors_are_retried_until_success(no_sleep: list[float]) -> None:
    flaky = Flaky(ConnectionResetError("reset"), OSError(errno.EBUSY, "SlowDown"))  # s3fs's SlowDown
    before = retry.RETRY_COUNTER.count
    assert call_with_retries("s3://b/k", flaky) == "ok"
    assert flaky.calls == 3
    assert len(no_sleep) == 2
    assert retry.RETRY_COUNTER.count - before == 2


@pytest.mark.parametrize("error", [FileNotFoundError("k"), PermissionError("denied"), ValueError("bad url"), KeyError("content")])
def test_permanent_and_content_errors_are_not_retried(error: BaseException, no_sleep: list[float]) -> None:
    flaky = Flaky(error)
    with pytest.raises(PermanentStorageError):
        call_with_retries("s3://b/k", flaky)
    assert flaky.calls == 1
    assert no_sleep == []


def test_budget_exhausted_raises_transient() -> None:
    flaky = Flaky(*[TimeoutError()] * ATTEMPTS)
    with pytest.raises(TransientStorageError):
        call_with_retries("s3://b/k", flaky)
    assert flaky.calls == ATTEMPTS


def test_backoff_is_full_jitter_and_capped() -> None:
    for attempt in range(1, 12):
        delays = [backoff_delay(attempt) for _ in range(50)]
        assert all(0 <= d <= min(retry.MAX_DELAY_S, retry.BASE_DELAY_S * 2**attempt) for d in delays)
        assert len(set(delays)) > 1


def _failed_state(exc: BaseException) -> Any:
    def result() -> None:
        raise exc

    return SimpleNamespace(result=result)


@pytest.mark.parametrize(
    ("exc", "retried"),
    [
        (TransientStorageError("u", "503"), True),
        (PermanentStorageError("u", "403"), False),
        (InputNotFound("u", "missing"), False),
        (ValueError("content error"), False),
    ],
)
def test_prefect_retries_only_transient_storage_failures(exc: BaseException, retried: bool) -> None:
    assert retry_on_transient(None, None, _failed_state(exc)) is retried


def test_sdk_wrapped_connection_errors_are_transient() -> None:
    from botocore.exceptions import EndpointConnectionError

    def connect() -> None:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")  # noqa: TRY301  # raised, for the chain botocore builds
        except ConnectionResetError as reset:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1/b/k", error=reset) from reset

    with pytest.raises(EndpointConnectionError) as wrapped:
        connect()
    assert isinstance(classify("s3://b/k", wrapped.value), TransientStorageError)
