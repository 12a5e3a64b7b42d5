"""Atomic writes on a real S3 endpoint (moto): multipart uploads and failed uploads."""

from __future__ import annotations

import os

import pytest

from tasks.storage import Location, StorageError, atomic_writer
from tests.reliability.faultproxy import FaultPlan, FaultProxy

BLOCK = 5 * 2**20  # S3's smallest part size
SMALL_BLOCKS = {"default_block_size": BLOCK}


@pytest.fixture
def bucket(s3: str) -> str:
    import s3fs

    s3fs.S3FileSystem().mkdir("writes")
    return s3


def test_output_over_one_block_keeps_its_tail(bucket: str) -> None:
    data = os.urandom(2 * BLOCK + 12345)
    target = Location("s3://writes/big.jsonl", SMALL_BLOCKS)
    with atomic_writer(target) as out:
        for start in range(0, len(data), 1 << 20):
            out.write(data[start : start + (1 << 20)])
    assert Location("s3://writes/big.jsonl").read_bytes() == data


def test_failed_part_upload_raises_storage_error_and_publishes_nothing(bucket: str) -> None:
    plan = FaultPlan(fail_first={"partNumber=2": 1})
    with FaultProxy(bucket, plan) as proxy:
        target = Location("s3://writes/half.jsonl", {**SMALL_BLOCKS, "endpoint_url": proxy.url, "config_kwargs": {"retries": {"total_max_attempts": 1}}})
        with pytest.raises(StorageError):
            with atomic_writer(target) as out:
                for _ in range(3):
                    out.write(os.urandom(BLOCK))
    assert plan.total_injected == 1
    assert not Location("s3://writes/half.jsonl").exists()
