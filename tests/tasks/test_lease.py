"""The lease on a running run (``tasks/lease.py``): held, expired, dead holders, takeovers, renewal."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from tasks import lease as leases
from tasks.lease import Lease, LeaseHeld, acquire, check_free, held, release
from tasks.rundir import RunPaths
from tasks.storage import Location

pytestmark = pytest.mark.usefixtures("memfs")
RUN = Location("memory://out/job/runs/r1")


def _write(lease: Lease) -> None:
    RunPaths(RUN).lease.write_bytes(lease.encode())


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_held_lease_refuses_a_second_claimant_naming_the_holder_and_since_when() -> None:
    mine = acquire(RUN, "r1")
    with pytest.raises(LeaseHeld, match=re.escape(f"run r1 is in use by process {mine.pid} on {socket.gethostname()} since {mine.since}")):
        acquire(RUN, "r1")
    with pytest.raises(LeaseHeld):
        check_free(RUN, "r1")
    release(RUN, mine)
    assert not RunPaths(RUN).lease.exists()
    check_free(RUN, "r1")


def test_the_lease_of_a_dead_process_on_this_host_holds_nothing() -> None:
    """``kill -9`` never blocks a later resume: the holder is looked up, not waited for."""
    _write(dataclasses.replace(Lease.mine(), pid=_dead_pid()))
    taken = acquire(RUN, "r1")
    assert Lease.decode(RunPaths(RUN).lease.read_bytes()) == taken


def test_an_expired_lease_is_taken_over_and_a_live_one_on_another_host_is_not() -> None:
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat(timespec="seconds")
    elsewhere = dataclasses.replace(Lease.mine(), host="another-host", pid=1)
    _write(elsewhere)
    with pytest.raises(LeaseHeld, match="in use by process 1 on another-host"):
        acquire(RUN, "r1")
    _write(dataclasses.replace(elsewhere, expires=past))
    assert acquire(RUN, "r1").host == socket.gethostname()


def test_of_two_takeovers_of_one_expired_lease_one_wins() -> None:
    past = (datetime.now(UTC) - timedelta(seconds=1)).isoformat(timespec="seconds")
    _write(dataclasses.replace(Lease.mine(), host="another-host", expires=past))
    expired = RunPaths(RUN).lease.read_bytes()
    RUN.child(f"LEASE.takeover-{hashlib.sha256(expired).hexdigest()[:16]}").write_bytes(b"another claimant's")  # it got there first
    with pytest.raises(LeaseHeld, match="being taken over by another process"):
        acquire(RUN, "r1")


def test_a_torn_lease_holds_nothing_and_release_leaves_another_holders_lease() -> None:
    RunPaths(RUN).lease.write_bytes(b'{"host": "x", "pi')
    mine = acquire(RUN, "r1")
    _write(dataclasses.replace(mine, token="someone-else"))
    release(RUN, mine)
    assert RunPaths(RUN).lease.exists()


def test_a_held_lease_is_renewed_while_the_block_runs_and_removed_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leases, "RENEW_EVERY_S", 0.05)
    with held(RUN, "r1") as mine:
        first = Lease.decode(RunPaths(RUN).lease.read_bytes())
        time.sleep(1.2)  # the expiry has a resolution of one second
        renewed = Lease.decode(RunPaths(RUN).lease.read_bytes())
        assert first is not None
        assert renewed is not None
        assert renewed.token == mine.token
        assert renewed.since == mine.since
        assert renewed.expires > first.expires
    assert not RunPaths(RUN).lease.exists()
