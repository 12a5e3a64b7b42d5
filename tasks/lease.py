"""The lease on a running run: one process at a time works in a run directory.

A run directory's ``LEASE`` names the process working in it (host, pid), since when, and until
when the lease holds. The holder renews it on a daemon thread while it runs and removes it when
it ends, however the flow ends. A second claimant (two ``--resume`` of one run at once) is
refused at once, naming the holder; without the lease it failed late, with a missing segment.

A lease outlives its holder only until it expires, and not even that long on the holder's own
host: a process found dead there (``kill -9``) holds nothing, so a resume right after a crash
never waits. Taking over an expired lease is itself a create-if-absent write (of a marker named
after the expired lease's bytes), so of two processes taking over the same lease one wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from tasks.rundir import LEASE_FILE, RunPaths
from tasks.storage import InputNotFound, Location, StorageError

LEASE_TTL_S = 60.0
"""How long a lease holds without renewal: a holder on another host that died blocks a resume this long at most."""
RENEW_EVERY_S = 15.0


class LeaseHeld(Exception):
    """Another process is working in the run directory."""


@dataclass(frozen=True)
class Lease:
    """What ``LEASE`` says: who holds the run, since when, and until when without renewal."""

    host: str
    pid: int
    since: str
    expires: str
    token: str

    @classmethod
    def mine(cls, since: str | None = None) -> Lease:
        now = datetime.now(UTC)
        return cls(socket.gethostname(), os.getpid(), since or _iso(now), _iso(now + timedelta(seconds=LEASE_TTL_S)), os.urandom(8).hex())

    def renewed(self) -> Lease:
        return Lease(self.host, self.pid, self.since, _iso(datetime.now(UTC) + timedelta(seconds=LEASE_TTL_S)), self.token)

    def encode(self) -> bytes:
        return orjson.dumps(self.__dict__, option=orjson.OPT_INDENT_2) + b"\n"

    @classmethod
    def decode(cls, data: bytes) -> Lease | None:
        """The lease in ``data``; None for bytes that are not one (a lease torn by a crash holds nothing)."""
        try:
            fields: dict[str, Any] = orjson.loads(data)
            return cls(str(fields["host"]), int(fields["pid"]), str(fields["since"]), str(fields["expires"]), str(fields["token"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None

    @property
    def holder(self) -> str:
        return f"process {self.pid} on {self.host}"

    def holds(self) -> bool:
        """Whether the lease still holds: not expired, and its holder alive when it is on this host."""
        if datetime.fromisoformat(self.expires) <= datetime.now(UTC):
            return False
        return self.host != socket.gethostname() or _alive(self.pid)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _read(location: Location) -> bytes:
    try:
        return location.read_bytes()
    except InputNotFound:  # released meanwhile
        return b""


def _refuse_held(data: bytes, run_id: str) -> None:
    current = Lease.decode(data)
    if current is not None and current.holds():
        raise LeaseHeld(
            f"run {run_id} is in use by {current.holder} since {current.since} (its lease holds until {current.expires} unless renewed):"
            " wait for it to end, or stop it and resume again"
        )


def check_free(run_dir: Location, run_id: str) -> None:
    """Raise ``LeaseHeld`` when another process holds the run's lease (the CLI asks before it starts a flow)."""
    _refuse_held(_read(RunPaths(run_dir).lease), run_id)


def acquire(run_dir: Location, run_id: str) -> Lease:
    """Take the run's lease, or raise ``LeaseHeld`` naming who holds it and since when."""
    location = RunPaths(run_dir).lease
    mine = Lease.mine()
    if location.write_new(mine.encode()):
        return mine
    data = _read(location)
    _refuse_held(data, run_id)
    marker = run_dir.child(f"{LEASE_FILE}.takeover-{hashlib.sha256(data).hexdigest()[:16]}")
    if not marker.write_new(mine.encode()):
        raise LeaseHeld(f"run {run_id} is being taken over by another process: wait for it to end")
    try:
        location.write_bytes(mine.encode())
    finally:
        marker.remove()
    return mine


def release(run_dir: Location, lease: Lease) -> None:
    """Remove the lease if it is still ours."""
    location = RunPaths(run_dir).lease
    try:
        current = Lease.decode(location.read_bytes())
        if current is not None and current.token == lease.token:
            location.remove()
    except InputNotFound:
        pass


@contextmanager
def held(run_dir: Location, run_id: str) -> Iterator[Lease]:
    """The run's lease, renewed every ``RENEW_EVERY_S`` until the block ends, then released."""
    lease = acquire(run_dir, run_id)
    stop = threading.Event()

    def renew() -> None:
        current = lease
        while not stop.wait(RENEW_EVERY_S):
            try:
                found = Lease.decode(RunPaths(run_dir).lease.read_bytes())
                if found is None or found.token != lease.token:
                    return  # taken over after it expired (this process was stopped for longer): not ours to renew
                current = current.renewed()
                RunPaths(run_dir).lease.write_bytes(current.encode())
            except StorageError:
                continue  # storage weather: the next renewal tries again, well within the lease

    renewer = threading.Thread(target=renew, name="run-lease", daemon=True)
    renewer.start()
    try:
        yield lease
    finally:
        stop.set()
        renewer.join(timeout=5)
        with contextlib.suppress(StorageError):  # it expires on its own
            release(run_dir, lease)
