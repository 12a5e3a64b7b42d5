"""The storage layer on local disk, memory:// and S3 (listing): streaming lines, atomic writes, create-if-absent."""

from __future__ import annotations

import errno
import itertools
import mmap
import os
import pickle
import random
import resource
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest

import tasks.storage.fs
import tasks.storage.listing
import tasks.storage.retry
from tasks.storage import FileEntry, InputNotFound, Location, atomic_writer, release_view
from tasks.storage.base import PermanentStorageError, TransientStorageError, classify
from tasks.storage.listing import entry_of


@pytest.fixture(params=["local", "memory"])
def root(request: pytest.FixtureRequest, tmp_path: Path, memfs: None) -> Location:
    return Location(str(tmp_path) if request.param == "local" else "memory://store")


def test_iter_lines_gives_numbers_offsets_and_unterminated_tail(root: Location) -> None:
    data = b'{"a":1}\n\n{"b":2}\r\nlast'
    f = root.child("x.jsonl")
    f.write_bytes(data)
    lines = list(f.iter_lines())
    assert lines == [(1, 0, b'{"a":1}'), (2, 8, b""), (3, 9, b'{"b":2}\r'), (4, 18, b"last")]
    for _, offset, raw in lines:
        assert data[offset : offset + len(raw)] == raw


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_iter_lines_across_block_boundaries(root: Location, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Lines longer than a block, newlines at block edges, empty lines: as splitting the whole file."""
    monkeypatch.setattr(tasks.storage.fs, "READ_BLOCK", block)
    data = b"\n".join([b"", b"a", b"0123456789abcdef", b"", b"\xff\xfe", b"xy" * 9, b"tail"])
    f = root.child("blocks.jsonl")
    f.write_bytes(data)
    expected, offset = [], 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        expected.append((number, offset, line))
        offset += len(line) + 1
    assert list(f.iter_lines()) == expected
    f.write_bytes(data + b"\n")
    assert list(f.iter_lines()) == expected


@pytest.mark.parametrize("block", [1, 3, 64])
def test_spans_cut_anywhere_share_out_every_line_once(root: Location, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Parallel discovery reads a file in spans: together they are the whole file's lines, in order."""
    monkeypatch.setattr(tasks.storage.fs, "READ_BLOCK", block)
    rng = random.Random(block)
    for data in (b"\n".join([b"", b"a", b"0123456789abcdef", b"", b"\n", b"xy" * 9, b"tail"]), b"one\ntwo\n", b"\n\n\n", b"x"):
        f = root.child("spans.jsonl")
        f.write_bytes(data)
        whole = list(f.iter_lines())
        for _ in range(20):
            cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(rng.randrange(4)))})
            joined, base = [], 0
            for start, end in itertools.pairwise(cuts):
                span = list(f.iter_lines(start, end))
                joined += [(base + number, offset, line) for number, offset, line in span]
                base += len(span)
            assert joined == whole, (data, cuts)


def test_iter_lines_retries_a_block_read_that_fails_once(root: Location, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection reset while streaming a rollouts file costs a retry of that block, not the run."""
    monkeypatch.setattr(tasks.storage.fs, "READ_BLOCK", 4)
    monkeypatch.setattr(tasks.storage.retry, "backoff_delay", lambda attempt: 0.0)
    f = root.child("flaky.jsonl")
    f.write_bytes(b"first\nsecond\nthird")
    opened = f.fs.open

    def open_flaky(path: str, mode: str = "rb", **kwargs: object) -> object:
        handle = opened(path, mode, **kwargs)
        read, failed = handle.read, []

        def flaky_read(size: int = -1) -> bytes:
            if handle.tell() >= 4 and not failed:
                failed.append(True)
                raise ConnectionResetError(errno.ECONNRESET, "reset by peer")
            return read(size)

        handle.read = flaky_read
        return handle

    monkeypatch.setattr(f.fs, "open", open_flaky)
    assert [line for _, _, line in f.iter_lines()] == [b"first", b"second", b"third"]


def test_read_range_returns_exact_slice(root: Location) -> None:
    f = root.child("r.bin")
    f.write_bytes(b"0123456789")
    assert f.read_range(2, 5) == b"234"


@pytest.mark.parametrize("data", [b"", b"0123456789"])
def test_read_view_holds_the_whole_object_and_outlives_a_replacement(root: Location, data: bytes) -> None:
    """A view taken before an atomic replacement still reads the bytes it was taken of."""
    f = root.child("v.bin")
    f.write_bytes(data)
    view = f.read_view()
    f.write_bytes(b"replaced")
    assert bytes(view) == data
    with pytest.raises(InputNotFound):
        root.child("absent.bin").read_view()


def _faults_touching(view: memoryview) -> int:
    """Page faults this process takes reading one byte of each page of ``view``: none while its
    pages are mapped in; for pages the kernel took back, one per fault-around window (Linux maps
    up to 16 neighbouring pages of a file per read fault). Slicing allocates nothing."""

    def faults() -> int:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_minflt + usage.ru_majflt

    before = faults()
    sum(view[:: mmap.PAGESIZE])
    return faults() - before


@pytest.mark.skipif(tasks.storage.fs._MADV_PAGEOUT is None, reason="MADV_PAGEOUT is Linux's")
def test_a_released_map_gives_back_its_clean_pages_and_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "segment.seg"
    data = os.urandom(8 * 2**20)
    with open(path, "wb") as f:
        f.write(data)
        os.fsync(f.fileno())  # clean pages, as a segment's are once the kernel has written it back
    view = Location(str(path)).read_view()
    assert isinstance(view, memoryview)
    assert bytes(view) == data  # every page read, so mapped
    windows = len(data) // (16 * mmap.PAGESIZE)
    assert _faults_touching(view) < windows / 4  # mapped: reading again costs (almost) nothing
    release_view(view)
    assert _faults_touching(view) > windows / 2  # given back: faulted in again
    assert bytes(view) == data
    release_view(b"an object store's bytes")  # nothing to give back


def test_atomic_writer_publishes_nothing_on_error(root: Location) -> None:
    target = root.child("out", "file.json")
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_writer(target) as f:  # noqa: PT012  # raised inside the writer, which must discard it
        f.write(b"partial")
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    leftovers = [e.name for e in root.child("out").list_files() if e.name != "file.json"]
    assert leftovers == []


def test_write_new_claims_once(root: Location) -> None:
    target = root.child("runs", "r1", "params.json")
    assert target.write_new(b"first") is True
    assert target.write_new(b"second") is False
    assert target.read_bytes() == b"first"


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_local_outputs_get_the_umask_permissions(tmp_path: Path, umask: int) -> None:
    """Written and created-if-absent files are 0666 less the umask, as any program's (not mkstemp's 0600)."""
    previous = os.umask(umask)
    try:
        written, claimed = Location(str(tmp_path / "out" / "file.json")), Location(str(tmp_path / "runs" / "params.json"))
        written.write_bytes(b"{}")
        assert claimed.write_new(b"{}")
    finally:
        os.umask(previous)
    for path in (written.path, claimed.path):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask, path


def test_within_compares_normalised_locations(tmp_path: Path) -> None:
    inputs = tmp_path / "job"
    (inputs / "model-calls").mkdir(parents=True)
    (tmp_path / "link").symlink_to(inputs)
    folder = Location(str(inputs))
    for inside in [
        str(inputs),
        f"{inputs}/",
        f"{inputs}/out",
        f"{inputs}//out/",
        f"{tmp_path}/x/../job/out",
        f"file://{inputs}/out",
        f"{tmp_path}/link/out",
    ]:
        assert Location(inside).within(folder), inside
    for outside in [str(tmp_path), f"{inputs}-out", f"{tmp_path}/jobs/out", f"memory://{inputs}/out"]:
        assert not Location(outside).within(folder), outside
    bucket = Location("s3://bucket/evals/job")
    assert Location("s3://bucket/evals/job/out").within(bucket)
    assert Location("s3://bucket//evals/job/").within(bucket)
    assert not Location("s3://bucket/evals/job-2/out").within(bucket)
    assert not Location("s3://other/evals/job").within(bucket)


def test_missing_file_is_input_not_found(root: Location) -> None:
    with pytest.raises(InputNotFound):
        root.child("nope.jsonl").read_bytes()


def test_list_files_is_flat_and_sorted(root: Location) -> None:
    for name in ["b.capture.jsonl", "a.capture.incomplete", "sub/c.txt"]:
        root.child("dir", *name.split("/")).write_bytes(b"x")
    assert [e.name for e in root.child("dir").list_files()] == ["a.capture.incomplete", "b.capture.jsonl"]
    assert [(e.name, e.folder) for e in root.child("dir").list_files(folders=True)] == [
        ("a.capture.incomplete", False),
        ("b.capture.jsonl", False),
        ("sub", True),
    ]


def _fsspec_listing(folder: Location) -> list[FileEntry]:
    """What fsspec's own ``ls`` says, as entries: the streamed listings must agree with it."""
    folder.fs.invalidate_cache(folder.path)
    return sorted((entry_of(i) for i in folder.fs.ls(folder.path, detail=True) if i["type"] == "file"), key=lambda e: e.name)


def test_streamed_listing_equals_fsspec_ls(root: Location) -> None:
    for name in ["b.capture.jsonl", "a.capture.incomplete", "sub/c.txt"]:
        root.child("dir", *name.split("/")).write_bytes(b"x" * len(name))
    assert root.child("dir").list_files() == _fsspec_listing(root.child("dir"))


def test_streamed_s3_listing_spans_pages(s3: str) -> None:
    """Over 1,000 objects: s3fs's pages, read one at a time, give what its ls gives."""
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("bucket")
    fs.pipe({f"bucket/job/calls/{i:04d}.capture.jsonl": b"{}\n" * (i % 3) for i in range(1005)} | {"bucket/job/calls/sub/x": b""})
    folder = Location("s3://bucket/job/calls")
    listed = folder.list_files()
    assert len(listed) == 1005
    assert listed == _fsspec_listing(folder)
    assert [(e.name, e.folder) for e in folder.list_files(folders=True) if e.folder] == [("sub", True)]


def test_s3_file_and_folder_checks_cost_one_request_each(s3: str) -> None:
    """A missing sidecar is one HEAD (s3fs's exists adds a LIST); a capture folder is one small
    LIST however many captures it holds (s3fs's isdir lists it whole, page after page)."""
    import s3fs

    from tests.reliability.faultproxy import FaultPlan, FaultProxy

    s3fs.S3FileSystem().mkdir("bucket")
    s3fs.S3FileSystem().pipe(
        {f"bucket/job/calls/{i:04d}.capture.jsonl": b"{}\n" for i in range(1005)} | {"bucket/job/rollouts.jsonl": b"{}\n"}
    )
    plan = FaultPlan()
    with FaultProxy(s3, plan) as proxy:
        options = {"endpoint_url": proxy.url}
        checks = {
            "s3://bucket/job/rollouts.jsonl": (True, False),
            "s3://bucket/job/rollouts_failures.jsonl": (False, False),
            "s3://bucket/job/calls": (False, True),
            "s3://bucket/job/absent": (False, False),
        }
        for url, (is_file, is_dir) in checks.items():
            assert (Location(url, options).is_file(), Location(url, options).is_dir()) == (is_file, is_dir), url
    assert sum(plan.by_method.values()) == 2 * len(checks)


def _client_error(code: str, status: int) -> BaseException:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject")


def _translated(code: str, status: int) -> BaseException:
    """What s3fs raises for an S3 error reply: an OSError of its own, the ClientError as cause."""
    from s3fs.errors import translate_boto_error

    return translate_boto_error(_client_error(code, status))


def _raised_from(exc: BaseException, cause: BaseException) -> BaseException:
    exc.__cause__ = cause
    return exc


def _aiohttp_status(status: int) -> BaseException:
    from aiohttp import ClientResponseError, RequestInfo
    from multidict import CIMultiDict, CIMultiDictProxy
    from yarl import URL

    info = RequestInfo(URL("http://s3/b/k"), "GET", CIMultiDictProxy(CIMultiDict()), URL("http://s3/b/k"))
    return ClientResponseError(info, (), status=status)


def _sdk(name: str, **kwargs: str) -> BaseException:
    import botocore.exceptions

    return getattr(botocore.exceptions, name)(**kwargs)


def _aiohttp(name: str) -> BaseException:
    import aiohttp

    return getattr(aiohttp, name)()


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda: FileNotFoundError("x"), InputNotFound),
        (lambda: PermissionError("x"), PermanentStorageError),
        (lambda: ConnectionResetError("reset"), TransientStorageError),
        (TimeoutError, TransientStorageError),
        # the message is never read: a 500 in a key is no server error, an error's words are not its kind
        (lambda: KeyError("s3://b/job-500/x"), PermanentStorageError),
        (lambda: OSError("503 SlowDown"), PermanentStorageError),
        (lambda: ValueError("connection reset by timeout"), PermanentStorageError),
        (lambda: RuntimeError("SlowDown"), PermanentStorageError),
        # errno
        (lambda: OSError(errno.EBUSY, "x"), TransientStorageError),
        (lambda: OSError(errno.ECONNRESET, "x"), TransientStorageError),
        (lambda: OSError(errno.ENOSPC, "No space left on device"), PermanentStorageError),
        (lambda: OSError(errno.ENAMETOOLONG, "503"), PermanentStorageError),
        (lambda: OSError(errno.ENOENT, "x"), InputNotFound),
        # botocore replies: error code and HTTP status
        (lambda: _client_error("SlowDown", 503), TransientStorageError),
        (lambda: _client_error("InternalError", 500), TransientStorageError),
        (lambda: _client_error("SomethingNew", 502), TransientStorageError),
        (lambda: _client_error("TooManyRequests", 429), TransientStorageError),
        (lambda: _client_error("RequestTimeout", 400), TransientStorageError),
        (lambda: _client_error("NoSuchKey", 404), InputNotFound),
        (lambda: _client_error("AccessDenied", 403), PermanentStorageError),
        (lambda: _client_error("InvalidArgument 500", 400), PermanentStorageError),
        # s3fs's translations keep the reply as cause: the reply decides, also over s3fs's EIO for codes it does not know
        (lambda: _translated("SlowDown", 503), TransientStorageError),
        (lambda: _translated("InternalError", 500), TransientStorageError),
        (lambda: _translated("SomethingNew", 503), TransientStorageError),
        (lambda: _translated("SomethingNew", 400), PermanentStorageError),
        (lambda: _translated("NoSuchKey", 404), InputNotFound),
        (lambda: _translated("AccessDenied", 403), PermanentStorageError),
        (lambda: _raised_from(OSError(), _client_error("SlowDown", 503)), TransientStorageError),
        # SDK and aiohttp transport errors, bare or as the cause
        (lambda: _sdk("EndpointConnectionError", endpoint_url="http://s3"), TransientStorageError),
        (lambda: _sdk("ConnectionClosedError", endpoint_url="http://s3"), TransientStorageError),
        (lambda: _sdk("ReadTimeoutError", endpoint_url="http://s3"), TransientStorageError),
        (lambda: _sdk("ResponseStreamingError", error="reset"), TransientStorageError),
        (lambda: _sdk("IncompleteReadError", actual_bytes=1, expected_bytes=2), TransientStorageError),
        (lambda: _sdk("NoCredentialsError"), PermanentStorageError),
        (lambda: _aiohttp("ServerDisconnectedError"), TransientStorageError),
        (lambda: _aiohttp("ClientPayloadError"), TransientStorageError),
        (lambda: _aiohttp_status(503), TransientStorageError),
        (lambda: _aiohttp_status(404), InputNotFound),
        (lambda: _aiohttp_status(403), PermanentStorageError),
        (lambda: _raised_from(RuntimeError("wrapped"), _aiohttp("ServerDisconnectedError")), TransientStorageError),
    ],
)
def test_classify_by_type_and_status(make: Callable[[], BaseException], kind: type) -> None:
    assert type(classify("s3://b/k", make())) is kind


def test_a_file_renamed_while_a_folder_is_listed_is_left_out_not_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reduce lists a segment folder while workers rename temp files into it."""
    for name in ("a.seg", ".tmp-1.part", "b.seg"):
        (tmp_path / name).write_bytes(b"x")
    real_scandir = os.scandir

    class RenamedDuringScan:
        def __init__(self, path: str) -> None:
            with real_scandir(path) as scan:
                self._entries = list(scan)
            (tmp_path / ".tmp-1.part").rename(tmp_path / "c.seg")  # after the scan, before the stats

        def __enter__(self) -> list[os.DirEntry[str]]:
            return self._entries

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(tasks.storage.listing.os, "scandir", RenamedDuringScan)
    assert [e.name for e in Location(str(tmp_path)).list_files()] == ["a.seg", "b.seg"]


def test_a_location_parses_its_url_once_and_sends_only_its_fields(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    parsed: list[str] = []
    real = fsspec.core.url_to_fs

    def counting(url: str, **options: Any) -> Any:
        parsed.append(url)
        return real(url, **options)

    monkeypatch.setattr(fsspec.core, "url_to_fs", counting)
    location = Location(str(tmp_path / "f"))
    assert (location.path, location.is_local, location.display) == (str(tmp_path / "f"), True, str(tmp_path / "f"))
    assert parsed == [str(tmp_path / "f")]
    sent = pickle.loads(pickle.dumps(location))
    assert sent == location
    assert vars(sent) == {"url": location.url, "options": {}}  # no filesystem object travels


@pytest.mark.parametrize(
    "url", ["{tmp}", "{tmp}/", "file://{tmp}", "memory://", "memory://store", "memory://store/", "s3://bucket/job", "s3://bucket"]
)
def test_a_child_of_a_parsed_location_has_the_filesystem_and_path_its_url_gives(url: str, tmp_path: Path, memfs: None, s3: str) -> None:
    folder = Location(url.format(tmp=tmp_path))
    assert folder.fs is not None  # parsed once, so its children take their path from it
    for parts in [("a",), ("shard-0001/main", "000000001-000000064-ab.seg"), ("a", "b.json")]:
        child = folder.child(*parts)
        derived = vars(child)["_fs_path"]
        parsed = fsspec.core.url_to_fs(child.url, **child.options)
        assert (derived[0], derived[1]) == (parsed[0], parsed[1]), parts
    for odd in ["..", "a//b", "./a"]:  # parts a path would not simply join: parsed from the child's URL
        assert "_fs_path" not in vars(folder.child(odd))
