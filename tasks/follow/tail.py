"""Tailing a running job: the new complete lines of its rollouts files and sidecars, its captures' activity.

NeMo Gym 0.7.0 appends and flushes each row the moment its rollout completes, so a followed file
only grows: a local or shared filesystem is read by size, from where the last look stopped to
the last newline (a half-written last line waits for its newline). An object store has no
append: a producer (or a sync) replaces the whole object, and the tail reads it the same way,
by its new size, as long as the earlier bytes are an unchanged prefix. A file that shrank, or
whose bytes already read changed, cannot be followed: the tail raises ``FollowedFileChanged``
naming it (the run is kept). New shard files matching the rollouts glob are picked up.

Each new row becomes the ``AttemptRef`` discovery would make of it (``tasks.discover.scan``), so
the parts processed while following are the ones the final, post-hoc pass reuses.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from evidence import CAPTURE_SUFFIX, MARKER_SUFFIX, ShardAccount, StageError, capture_file_id, rollout_key, run_accounting
from tasks.discover.inputs import JobInputs, capture_entries, list_inputs
from tasks.discover.refs import FAILURES, MAIN, AttemptRef, SkippedLine
from tasks.discover.scan import JobPlan, attempt_ref, describe_inputs, orphans, scan_lines
from tasks.inputs.shards import Shard, expand_rollouts, find_shards
from tasks.storage import FileEntry, InputNotFound, Location

AGGREGATE_SUFFIX = "_aggregate_metrics"
"""``<stem>_aggregate_metrics.json``: 0.7.0 writes it last, once a (not sharded) job is over."""
ANCHOR_BYTES = 64
"""The last bytes read of a followed file, checked on every look: replaced bytes are noticed."""
READ_WINDOW = 32 * 2**20
"""New bytes read at one look (a longer single line is read whole)."""


class FollowedFileChanged(StageError):
    """A followed input file was truncated or replaced: what was read of it is no longer what it holds."""


@dataclass
class FileTail:
    """How far one followed file has been read: complete lines only."""

    location: Location
    read: int = 0  # bytes of complete lines taken
    lines: int = 0  # lines taken (numbers of the next lines follow on)
    anchor: bytes = b""  # the last ANCHOR_BYTES taken
    seen: bool = False  # the file exists (a snapshot lists it)

    def new_lines(self) -> list[tuple[int, int, bytes]]:
        """The complete lines written since the last look (``(line number, offset, line)``); none while the file is missing."""
        if not self.location.is_local:
            self.location.fs.invalidate_cache(self.location.path)  # s3fs answers info from its listing cache
        try:
            size = self.location.entry().size
        except InputNotFound:
            if self.read:
                raise FollowedFileChanged(f"{self.location.display} was removed while followed ({self.read} bytes read)") from None
            return []
        self.seen = True
        if size < self.read:
            raise FollowedFileChanged(
                f"{self.location.display} was truncated while followed ({self.read} bytes read, {size} now): the run is kept; "
                "start a new run once the job is over"
            )
        if size == self.read:
            return []
        start = self.read - len(self.anchor)
        data = self.location.read_range(start, min(size, self.read + READ_WINDOW))
        if not data.startswith(self.anchor):
            raise FollowedFileChanged(
                f"{self.location.display} was replaced while followed (its first {self.read} bytes changed): the run is kept; "
                "start a new run once the job is over"
            )
        cut = data.rfind(b"\n")
        if cut < len(self.anchor) and size > self.read + READ_WINDOW:  # one line longer than the window: read it whole
            data = self.location.read_range(start, size)
            cut = data.rfind(b"\n")
        if cut < len(self.anchor):
            return []  # no complete new line yet
        found = []
        offset = self.read
        for raw in data[len(self.anchor) : cut].split(b"\n"):
            self.lines += 1
            found.append((self.lines, offset, raw))
            offset += len(raw) + 1
        self.read = start + cut + 1
        self.anchor = data[max(cut + 1 - ANCHOR_BYTES, 0) : cut + 1]
        return found


@dataclass
class ShardTail:
    """One shard's followed files and what they said so far."""

    shard: Shard
    tails: dict[str, FileTail] = field(default_factory=dict)  # MAIN, FAILURES, materialized
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys((MAIN, FAILURES), 0))
    owed: dict[Any, str] = field(default_factory=dict)  # rollout key -> capture id, from the materialized inputs
    answered: set[Any] = field(default_factory=set)  # rollout keys with a main or a sidecar row
    account: ShardAccount | None = None  # its accounting as discovery folds it, from its first line on
    skipped: list[tuple[str, int, str]] = field(default_factory=list)  # (source, line, why): lines that are not rows

    def accounted(self) -> ShardAccount:
        """Its account, begun with what is known then: whether it has materialized inputs (``plan`` checks it still holds)."""
        if self.account is None:
            self.account = ShardAccount(self.shard.name, "materialized" in self.tails)
        return self.account

    @property
    def expected(self) -> int | None:
        return len(self.owed) if "materialized" in self.tails and self.tails["materialized"].read else None

    @property
    def closed(self) -> bool:
        """Every owed rollout answered: the shard's row count is final."""
        return self.expected is not None and self.answered.issuperset(self.owed)

    def outstanding(self) -> Iterator[str]:
        return (capture for key, capture in self.owed.items() if key not in self.answered)


@dataclass(frozen=True)
class Look:
    """What one look at the job found."""

    attempts: list[AttemptRef]  # new rows to process, in input order within each file
    lines: int  # new lines of rollouts files and sidecars
    changed: bool  # anything new: a line, a capture written


class JobTail:
    """The followed job: its shards (a glob picks up new ones), their files and the capture directory."""

    def __init__(self, rollouts: str | list[str], failures: str | None, options: dict[str, Any], capture_dir: Location) -> None:
        self.rollouts = rollouts
        self.failures = failures
        self.options = options
        self.capture_dir = capture_dir
        self.shards: list[ShardTail] = []
        self.captures: dict[str, FileEntry] = {}
        self.activity: dict[str, float] = {}  # capture file name -> when it was last seen to change (seconds since the epoch)
        self._held: list[AttemptRef] = []  # main rows of a later shard, until the shards before it are closed
        self._claimed: set[str] = set()  # the rollout ids of the rows read (discovery's orphans are the captures of no row)

    # -- one look

    def look(self, now: float) -> Look:
        """Read what was written since the last look; ``now`` stamps the captures seen to change."""
        self._refresh_shards()
        read = [
            (k, tail, source, file_tail.new_lines())
            for k, tail in enumerate(self.shards)
            for source in (MAIN, FAILURES, "materialized")
            if (file_tail := tail.tails.get(source)) is not None
        ]
        # Listed after the lines are read: a rollout's capture is written before its row, so each row
        # read is given its capture as complete (listed before, a capture still being written when
        # listed would make its row's part stale at once).
        changed = self._list_captures(now)
        attempts: list[AttemptRef] = []
        lines = 0
        for k, tail, source, new in read:
            if source == "materialized":
                self._owe(tail, new)
                continue
            lines += len(new)
            attempts += self._attempts(tail, source, k if len(self.shards) > 1 else None, new)
        released = self._release(attempts)
        return Look(released, lines, changed or bool(lines))

    def _refresh_shards(self) -> None:
        """The shards as they are now: a glob may match new files, and sidecars may appear beside them."""
        try:
            urls = expand_rollouts(self.rollouts, self.options)
        except InputNotFound:
            urls = []  # a glob that matches nothing yet
        known = {tail.shard.main.url: tail for tail in self.shards}
        shards = find_shards(urls, self.options, self.failures)
        ordered = []
        for shard in shards:
            tail = known.get(shard.main.url) or ShardTail(shard)
            tail.shard = shard
            for source, location in ((MAIN, shard.main), (FAILURES, shard.failures), ("materialized", shard.materialized)):
                if location is not None and source not in tail.tails:
                    tail.tails[source] = FileTail(location)
            ordered.append(tail)
        self.shards = ordered

    def _list_captures(self, now: float) -> bool:
        try:
            listed = {entry.name: entry for entry in capture_entries(self.capture_dir)}  # as discovery lists them
        except InputNotFound:
            listed = {}
        changed = False
        for name, entry in listed.items():
            before = self.captures.get(name)
            if before is None or (before.size, before.version) != (entry.size, entry.version):
                changed = True
                self.activity[name] = now if before is not None else _first_seen(entry, now)
        self.captures = listed
        return changed

    def _owe(self, tail: ShardTail, lines: list[tuple[int, int, bytes]]) -> None:
        account = tail.accounted()
        for _, _, raw in lines:
            if raw.strip():
                try:
                    row = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    row = None
                if account.expected is not None:  # every non-blank line is owed, as discovery reads the inventory
                    account.expect(row)
                if isinstance(row, dict):
                    tail.owed.setdefault(rollout_key(row), capture_file_id(row) or "")

    def _attempts(self, tail: ShardTail, source: str, shard: int | None, lines: list[tuple[int, int, bytes]]) -> list[AttemptRef]:
        scanned = scan_lines(lines, self.captures)
        attempts = []
        account = tail.accounted()
        for row in scanned.rows:
            if row.skipped is not None:
                tail.skipped.append((source, row.line, row.skipped))
                continue
            tail.rows[source] += 1
            tail.answered.add(rollout_key(row.accounted))
            (account.land if source == MAIN else account.fail)(row.accounted)
            if row.rollout_id is not None:
                self._claimed.add(row.rollout_id)
            attempts.append(attempt_ref(row, source, row.line, tail.rows[source], shard))
        return attempts

    def _release(self, attempts: list[AttemptRef]) -> list[AttemptRef]:
        """The attempts whose part can be made now, numbered in the job's outputs.

        A main row's output line numbers on across shards, so a later shard's main rows wait
        until every shard before it is closed (its row count final); sidecar rows never wait.
        """
        self._held += [a for a in attempts if a.source == MAIN]
        ready = [a for a in attempts if a.source == FAILURES]
        base, closed, held = 0, True, []
        bases: dict[int | None, int] = {}
        for k, tail in enumerate(self.shards):
            bases[k if len(self.shards) > 1 else None] = base if closed else -1
            base += tail.rows[MAIN]
            closed = closed and tail.closed
        for attempt in self._held:
            offset = bases.get(attempt.shard, -1)
            if offset < 0:
                held.append(attempt)
            else:
                ready.append(replace(attempt, out_line=attempt.out_line + offset))
        self._held = held
        return sorted(ready, key=_input_order)

    # -- what the job looks like

    def counts(self) -> tuple[int, int, int | None]:
        """Main rows, sidecar rows and rollouts owed (None when a shard has no materialized inputs yet)."""
        rows = sum(tail.rows[MAIN] for tail in self.shards)
        failures = sum(tail.rows[FAILURES] for tail in self.shards)
        owed = [tail.expected for tail in self.shards]
        expected = None if not owed or None in owed else sum(o for o in owed if o is not None)
        return rows, failures, expected

    def outstanding(self) -> list[str]:
        """The capture ids of owed rollouts with no row yet."""
        return [capture for tail in self.shards for capture in tail.outstanding()]

    def plan(self, main: Iterable[AttemptRef], failures: Iterable[AttemptRef]) -> JobPlan | str:
        """The plan discovery would make of the job now, from what the tail read (no row parsed again), or why it cannot be made so.

        ``main`` and ``failures`` are the attempts the tail released (main rows in input order). It
        holds when every followed file was read to its end, no row waits for a shard before it,
        each shard's debt was known from its first line, and every attempt's capture is listed as
        it was when its row was read: then each attempt is the one discovery makes (the same
        fingerprint), and the accounting, skipped lines and orphans are discovery's. Only the
        files are listed again (their entries, the captures).
        """
        if self._held:
            return f"{len(self._held)} main rows of a later shard wait for a shard before it"
        for tail in self.shards:
            for file_tail in tail.tails.values():
                if file_tail.location.entry().size != file_tail.read:
                    return f"{file_tail.location.display} has bytes past the last complete line read"
            if (tail.accounted().expected is not None) != (tail.shard.materialized is not None):
                return f"the materialized inputs of {tail.shard.name} appeared after its first rows"
        inputs = list_inputs([tail.shard for tail in self.shards], self.capture_dir)
        listing = {entry.name: entry for entry in inputs.captures}
        plan = self._described(inputs)
        try:
            for attempt in itertools.chain(main, sorted(failures, key=_input_order)):
                if attempt.rollout_id is not None and (
                    listing.get(attempt.rollout_id + CAPTURE_SUFFIX) != attempt.capture
                    or (attempt.rollout_id + MARKER_SUFFIX in listing) != attempt.incomplete
                ):
                    plan.close()
                    return f"the capture of rollout {attempt.rollout_id} changed after its row was processed"
                plan.attempts.add(attempt)
        except BaseException:
            plan.close()
            raise
        return plan

    def described(self) -> JobPlan:
        """The job as read so far, without its attempts: accounting, skipped lines, orphans, its files (a snapshot's manifest)."""
        return self._described(list_inputs([tail.shard for tail in self.shards], self.capture_dir))

    def _described(self, inputs: JobInputs) -> JobPlan:
        shards = [tail.shard for tail in self.shards]
        sharded = len(shards) > 1
        plan = JobPlan()
        try:
            plan.skipped = [
                SkippedLine(source, line, why, tail.shard.name if sharded else None)
                for wanted in (MAIN, FAILURES)
                for tail in self.shards
                for source, line, why in tail.skipped
                if source == wanted
            ]
            plan.orphans = orphans((entry.name for entry in inputs.captures), self._claimed)
            plan.accounting = run_accounting(tail.accounted() for tail in self.shards)
            rows = Counter(
                {(k if sharded else None, source): tail.rows[source] for k, tail in enumerate(self.shards) for source in tail.rows}
            )
            describe_inputs(plan, shards, inputs, rows)
        except BaseException:
            plan.close()
            raise
        return plan

    def end_file(self) -> bool:
        """Whether 0.7.0's end-of-job file exists beside the rollouts file (a sharded job has none)."""
        if len(self.shards) != 1:
            return False
        return Location(self.shards[0].shard.main.url.removesuffix(".jsonl") + AGGREGATE_SUFFIX + ".json", self.options).is_file()


def _input_order(attempt: AttemptRef) -> tuple[bool, int, int]:
    return attempt.source != MAIN, attempt.shard or 0, attempt.line


def _first_seen(entry: FileEntry, now: float) -> float:
    """When a capture found at the first look last changed: its modification time where the listing has one, else now."""
    try:
        return min(float(entry.version), now)
    except ValueError:
        return now
