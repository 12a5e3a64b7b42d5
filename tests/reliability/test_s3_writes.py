"""Atomic writes on a real S3 endpoint (moto): multipart uploads, parts behind the writer, failed uploads."""

from __future__ import annotations

import os

import pytest

import tasks.storage.writes
from tasks.storage import Location, StorageError, atomic_writer
from tasks.storage.retry import ATTEMPTS
from tests.reliability.faultproxy import FaultPlan, FaultProxy

PART = 5 * 2**20  # S3's smallest part size
NO_CLIENT_RETRIES = {"config_kwargs": {"retries": {"total_max_attempts": 1}}}


@pytest.fixture
def bucket(s3: str, monkeypatch: pytest.MonkeyPatch) -> str:
    import s3fs

    monkeypatch.setattr(tasks.storage.writes, "PART_BYTES", PART)
    s3fs.S3FileSystem().mkdir("writes")
    return s3


def _write(target: Location, data: bytes, piece: int = 1 << 20) -> None:
    with atomic_writer(target) as out:
        for start in range(0, len(data), piece):
            out.write(data[start : start + piece])


def _open_uploads() -> list[object]:
    import s3fs

    return s3fs.S3FileSystem().call_s3("list_multipart_uploads", Bucket="writes").get("Uploads", [])


@pytest.mark.parametrize("size", [0, 1000, PART, 2 * PART + 12345, 7 * PART + 1])
def test_object_is_the_bytes_written_at_any_size(bucket: str, size: int) -> None:
    """One PUT below a part, parts in flight above it (more parts than upload threads), the tail kept."""
    data = os.urandom(size)
    _write(Location("s3://writes/out.jsonl"), data)
    assert Location("s3://writes/out.jsonl").read_bytes() == data
    assert _open_uploads() == []


def test_writes_of_memoryviews_are_copied_before_the_writer_goes_on(bucket: str) -> None:
    """The reduce writes views of memory-mapped segments; a part in flight must not see later bytes."""
    buffer = bytearray(os.urandom(3 * PART))
    expected = bytes(buffer) * 2
    with atomic_writer(Location("s3://writes/views.jsonl")) as out:
        for _ in range(2):
            out.write(memoryview(buffer))
        buffer[:] = b"\0" * len(buffer)
    assert Location("s3://writes/views.jsonl").read_bytes() == expected


def test_a_part_failing_once_is_retried_alone(bucket: str) -> None:
    plan = FaultPlan(fail_first={"partNumber=2": 1})
    data = os.urandom(3 * PART + 7)
    with FaultProxy(bucket, plan) as proxy:
        _write(Location("s3://writes/retried.jsonl", {"endpoint_url": proxy.url, **NO_CLIENT_RETRIES}), data)
    assert plan.total_injected == 1
    assert Location("s3://writes/retried.jsonl").read_bytes() == data


def test_a_part_that_keeps_failing_raises_storage_error_publishes_nothing_and_aborts(bucket: str) -> None:
    plan = FaultPlan(fail_first={"partNumber=2": ATTEMPTS})
    with FaultProxy(bucket, plan) as proxy:
        target = Location("s3://writes/half.jsonl", {"endpoint_url": proxy.url, **NO_CLIENT_RETRIES})
        with pytest.raises(StorageError):
            _write(target, os.urandom(3 * PART))
    assert plan.total_injected == ATTEMPTS
    assert not Location("s3://writes/half.jsonl").exists()
    assert _open_uploads() == []


def test_an_error_in_the_writing_block_publishes_nothing_and_aborts(bucket: str) -> None:
    with pytest.raises(KeyError), atomic_writer(Location("s3://writes/broken.jsonl")) as out:  # noqa: PT012  # raised inside the writer
        out.write(os.urandom(2 * PART))
        raise KeyError("the producer failed")
    assert not Location("s3://writes/broken.jsonl").exists()
    assert _open_uploads() == []
