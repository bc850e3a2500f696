"""Live tailing: apply lag under a steady appended load, and fan-in throughput with 1, 2 and 4 channels.

    python benchmarks/live_throughput.py [--size MB] [--rates R,R] [--workers N,N] [--transactions N]
                                         [--warmup N] [--channel-size MB] [--repeats N] [--seed N]

(a) Lag. A generated oltp relay log is appended to a live relay-log folder by a feeder thread, the
    way a receiver thread writes it: events outside transactions (format description,
    previous-GTIDs, rotate) are copied as they are; each transaction's GTID event gets its immediate
    and original commit timestamps set to the wall-clock time at which it is appended (its CRC32
    recomputed). Each relay file enters a new index when its first bytes are written. The first
    --warmup transactions (the schema, the initial rows, then some) are appended at once and applied
    before the clock starts, so what is measured is the steady state rather than the channel's start
    or the DDL; the rest, up to --transactions in all, are appended at a steady rate, a quarter of
    them in two writes cut inside an event, so the applier meets torn tails. A
    ReplicaServer(follow=True) in the same process applies the folder (single applier, and for
    --workers N > 0 the LOGICAL_CLOCK multi-threaded applier); its on_commit callback records when
    each transaction's DuckDB commit happened. lag = commit wall time - original_commit_timestamp.
    Reported per rate and worker count, over the paced transactions: p50, p99 and max lag, the rate
    the feeder achieved and the apply rate (first append to last commit), and whether the applier
    kept up: the median lag of the last 20% of transactions is at most twice that of the first 20%
    plus 100 ms (a falling-behind applier's lag grows with every transaction). When the whole log was
    fed, the slave's tables are compared with the generator's oracle; when --transactions cut it
    short, with a batch replay of the same fed bytes. Every commit timestamp the applier read must
    be the one the feeder wrote.

(b) Fan-in (WL#1697 NR2). Four oltp logs with different seeds and databases (namespaces _c0.._c3)
    are replayed by one ReplicaServer(follow=False) into one slave with 1, 2 and 4 channels (single
    applier each): wall time until every channel reached the end of its logs, aggregate and
    per-channel transactions/s, and the ratio of each aggregate to the 1-channel one. The
    configurations run interleaved, --repeats rounds of 1, 2, 4, and the best round of each is
    kept, so the ratios are measured side by side. Every channel's tables are checked against its
    own oracle.

The feeder, the appliers and DuckDB share one process (and its GIL) and the machine's cores: the
figures are for that setup. They are printed and written to benchmarks/results/live_throughput.json
with the command line and the machine's CPU count. Relay logs are generated once into
benchmarks/work/ and reused.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / "work"
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))

from lags import lag_distribution  # noqa: E402
from machine import measurement_header  # noqa: E402

from engine.generate import generate  # noqa: E402
from engine.relaylog.index import read_index  # noqa: E402
from engine.relaylog.stream import stream_events  # noqa: E402
from engine.replay import ChannelSpec, Replay  # noqa: E402
from engine.replica.server import ReplicaServer  # noqa: E402
from engine.slave.database import Slave  # noqa: E402
from engine.slave.export import differences, export_csv  # noqa: E402
from engine.transactions import Transaction  # noqa: E402

BINLOG_MAGIC = b"\xfebin"
EVENT_HEADER_SIZE = 19  # binlog format v4, what MySQL 5.0+ writes
CHECKSUM_SIZE = 4
# GTID event body: flags (1), source UUID (16), GNO (8), then, after the logical-timestamp typecode
# (1) = 2, last_committed and sequence_number (8 + 8), the 7-byte immediate commit timestamp.
GTID_TYPECODE_AT = 1 + 16 + 8
LOGICAL_TIMESTAMP_TYPECODE = 2
LOGICAL_TIMESTAMPS_SIZE = 1 + 8 + 8
COMMIT_TIMESTAMP_SIZE = 7
ORIGINAL_FOLLOWS = 1 << 55  # set in the immediate timestamp when the original one follows it
# Events a receiver writes outside transactions: the feeder copies them at once, unpaced.
CONTROL_EVENTS = frozenset({"Format_desc", "Previous_gtids", "Rotate", "Stop"})
TORN_SHARE = 0.25  # of transactions written in two parts, cut inside an event
KEPT_UP_FACTOR, KEPT_UP_SLACK_MS = 2.0, 100.0
START_SETTLE_S = 0.5  # lets the channel reach its wait for the index before the clock starts
DRAIN_TIMEOUT_S = 300.0
LIVE_CHANNEL = "live"
FAN_IN_CHANNELS = (1, 2, 4)


# -- relay logs ---------------------------------------------------------------------------------


def generated(size: float, seed: int, namespace: str = "") -> Path:
    """The folder of a generated oltp relay log (relay-bin.index, expected/), made once and reused.

    Without a namespace the folder is named as in the other benchmarks, so they share their files.
    """
    out = WORK / f"oltp-{seed}-{size:g}MB{namespace}"
    # The oracle's manifest is written last: without it the folder is from an interrupted run.
    if not (out / "relay-bin.index").exists() or not (out / "expected" / "manifest.json").exists():
        if out.exists():
            shutil.rmtree(out)
        print(f"generating oltp ({size:g} MB, seed {seed}, namespace {namespace!r}) into {out}", flush=True)
        generate("oltp", seed, out, size, namespace=namespace)
    return out


def transactions_in(folder: Path) -> int:
    return json.loads((folder / "expected" / "manifest.json").read_text())["generator"]["transactions"]


# -- the feeder ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """Consecutive bytes of one relay file that the feeder appends as a unit.

    A transaction piece starts with its GTID event and runs to the next GTID or control event;
    anything else is a control piece (one event), written as soon as the feeder reaches it.
    """

    file_name: str
    data: bytes
    gtid: str | None = None  # set on transaction pieces
    gtid_event_size: int = 0
    event_ends: frozenset[int] = frozenset()  # offsets in data where an event ends


def plan_feed(index: Path) -> list[Piece]:
    """The relay log cut into pieces, in order; joined per file after the magic, they are the file."""
    files = {path.name: path.read_bytes() for path in read_index(index).files}
    pieces: list[Piece] = []
    # the transaction piece being gathered: file name, start, GTID, GTID event size, event ends
    open_trx: tuple[str, int, str, int, list[int]] | None = None

    def close_trx(name: str, start: int, gtid: str, gtid_size: int, ends: list[int]) -> None:
        data = files[name][start : ends[-1]]
        pieces.append(Piece(name, data, gtid, gtid_size, frozenset(e - start for e in ends)))

    events = stream_events(read_index(index))
    try:
        for logged in events:
            if logged.inner:  # inside a compressed payload: its bytes come with the payload event
                continue
            starts_piece = logged.event_type == "Gtid" or logged.event_type in CONTROL_EVENTS
            if open_trx is not None and (starts_piece or logged.log_name != open_trx[0]):
                close_trx(*open_trx)
                open_trx = None
            if logged.event_type == "Gtid":
                raw = files[logged.log_name][logged.pos : logged.end_pos]
                if zlib.crc32(raw[:-CHECKSUM_SIZE]) != int.from_bytes(raw[-CHECKSUM_SIZE:], "little"):
                    raise SystemExit(f"{logged.log_name}:{logged.pos}: GTID event without a valid CRC32")
                gtid = logged.event.gtid_text  # type: ignore[attr-defined]
                open_trx = (logged.log_name, logged.pos, gtid, logged.end_pos - logged.pos, [])
            if open_trx is not None:
                open_trx[4].append(logged.end_pos)
            else:
                data = files[logged.log_name][logged.pos : logged.end_pos]
                pieces.append(Piece(logged.log_name, data))
    finally:
        events.close()
    if open_trx is not None:
        close_trx(*open_trx)
    for name, data in files.items():  # nothing left out: the feeder must rebuild the files exactly
        fed = sum(len(p.data) for p in pieces if p.file_name == name)
        assert fed + len(BINLOG_MAGIC) == len(data), (name, fed, len(data))
    return pieces


def stamp_commit_time(event: bytes, now_us: int) -> bytes:
    """A GTID event with its immediate and original commit timestamps set to now_us, CRC redone."""
    out = bytearray(event)
    at = EVENT_HEADER_SIZE + GTID_TYPECODE_AT
    if out[at] == LOGICAL_TIMESTAMP_TYPECODE:
        at += LOGICAL_TIMESTAMPS_SIZE
    immediate = int.from_bytes(out[at : at + COMMIT_TIMESTAMP_SIZE], "little")
    if immediate & ORIGINAL_FOLLOWS:  # keep the layout: an original timestamp follows, rewrite both
        out[at : at + COMMIT_TIMESTAMP_SIZE] = (now_us | ORIGINAL_FOLLOWS).to_bytes(7, "little")
        at += COMMIT_TIMESTAMP_SIZE
    out[at : at + COMMIT_TIMESTAMP_SIZE] = now_us.to_bytes(7, "little")
    out[-CHECKSUM_SIZE:] = zlib.crc32(out[:-CHECKSUM_SIZE]).to_bytes(CHECKSUM_SIZE, "little")
    return bytes(out)


class Feeder(threading.Thread):
    """Appends pieces to a live folder; stops after `limit` transactions.

    The first `warmup` transactions are appended at once (whole); then the feeder sets `warmed`
    and waits for `go` before appending the rest at a steady `rate`.
    """

    def __init__(
        self, pieces: list[Piece], folder: Path, rate: float, limit: int, warmup: int, seed: int
    ) -> None:
        super().__init__(name="feeder", daemon=True)
        self.pieces = pieces
        self.folder = folder
        self.index = folder / "relay-bin.index"
        self.interval = 1.0 / rate
        self.limit = limit
        self.warmup = warmup
        self.rng = random.Random(seed)
        self.warmed = threading.Event()
        self.go = threading.Event()
        self.appended_us: dict[str, int] = {}  # GTID -> the commit timestamp written into it
        self.paced: set[str] = set()  # GTIDs appended at the steady rate (after the warm-up)
        self.torn_writes = 0
        self.behind_schedule = 0  # paced transactions appended more than one interval late
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._feed()
        except BaseException as exc:  # reported by the caller, which waits on the applier
            self.error = exc
        finally:
            self.warmed.set()  # a short log, or an error: the caller must not wait for it

    def _feed(self) -> None:
        out = None
        current = None
        fed = 0
        start = 0.0
        try:
            for piece in self.pieces:
                if piece.gtid is not None and fed >= self.limit:
                    break
                if piece.gtid is not None and fed == self.warmup:
                    self.warmed.set()
                    self.go.wait()
                    start = time.perf_counter()
                if piece.file_name != current:
                    if out is not None:
                        out.close()
                    current = piece.file_name
                    out = open(self.folder / current, "ab", buffering=0)  # noqa: SIM115
                    out.write(BINLOG_MAGIC)
                    with open(self.index, "a") as index:  # listed once its first bytes are there
                        index.write(f"./{current}\n")
                assert out is not None
                if piece.gtid is None:
                    out.write(piece.data)
                    continue
                paced = fed >= self.warmup
                if paced:
                    delay = start + (fed - self.warmup) * self.interval - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    elif delay < -self.interval:
                        self.behind_schedule += 1
                now_us = time.time_ns() // 1000
                gtid_event = stamp_commit_time(piece.data[: piece.gtid_event_size], now_us)
                data = gtid_event + piece.data[piece.gtid_event_size :]
                if paced and self.rng.random() < TORN_SHARE:
                    cut = self._cut_inside_an_event(piece)
                    out.write(data[:cut])
                    time.sleep(self.interval / 2)  # the follower may look in between: a torn tail
                    out.write(data[cut:])
                    self.torn_writes += 1
                else:
                    out.write(data)
                self.appended_us[piece.gtid] = now_us
                if paced:
                    self.paced.add(piece.gtid)
                fed += 1
        finally:
            if out is not None:
                out.close()

    def _cut_inside_an_event(self, piece: Piece) -> int:
        cut = self.rng.randrange(1, len(piece.data))
        while cut in piece.event_ends:  # between two events is not torn: move into the next one
            cut += 1
        return cut


# -- checks -------------------------------------------------------------------------------------


def table_differences(slave_path: Path, expected_dirs: Iterable[Path]) -> list[str]:
    """Tables that differ from the oracles (<db>/<table>.csv); empty when the slave is exact."""
    slave = Slave(slave_path, read_only=True)
    try:
        return differences(slave, *expected_dirs)
    finally:
        slave.close()


def slave_differences(slave_path: Path, reference_path: Path) -> list[str]:
    """Tables of two slaves that differ (for a partial feed, which no oracle describes)."""
    slave, reference = Slave(slave_path, read_only=True), Slave(reference_path, read_only=True)
    try:
        ours, theirs = set(slave.user_tables()), set(reference.user_tables())
        problems = [f"{db}.{t}: only on one side" for db, t in sorted(ours ^ theirs)]
        for key in sorted(ours & theirs):
            if export_csv(slave, slave.catalog[key]) != export_csv(reference, reference.catalog[key]):
                problems.append(f"{key[0]}.{key[1]}: contents differ")
        return problems
    finally:
        slave.close()
        reference.close()


# -- (a) lag under a steady appended load -------------------------------------------------------


@dataclass
class CommitLog:
    """What on_commit saw: per transaction, its GTID, original commit timestamp and commit time."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    rows: list[tuple[str | None, int, float]] = field(default_factory=list)

    def __call__(self, batch: list[Transaction]) -> None:
        now = time.time()  # right after the DuckDB commit: what a reader of the slave would see
        with self.lock:  # appliers' worker threads call this concurrently
            self.rows.extend((t.gtid, t.original_commit_timestamp or 0, now) for t in batch)

    def __len__(self) -> int:
        return len(self.rows)


def lag_figures(commits: CommitLog, feeder: Feeder) -> dict[str, object]:
    """Lag of the paced transactions, in the order they were appended."""
    # Each commit timestamp the applier read must be the one the feeder wrote into that GTID event.
    mismatched = sum(1 for gtid, ts, _ in commits.rows if feeder.appended_us.get(gtid or "") != ts)
    rows = sorted((ts, committed, gtid) for gtid, ts, committed in commits.rows if gtid in feeder.paced)
    lags = [(committed - ts / 1e6) * 1000 for ts, committed, _ in rows]
    if not lags:
        return {"applied": 0, "timestamps_mismatched": mismatched}
    figures = lag_distribution(lags)
    first, last = figures["lag_ms_first_20pct_median"], figures["lag_ms_last_20pct_median"]
    appended = sorted(feeder.appended_us[gtid] for gtid in feeder.paced)
    feed_s = (appended[-1] - appended[0]) / 1e6
    apply_s = rows[-1][1] - rows[0][0] / 1e6 if len(rows) > 1 else 0.0
    return {
        "paced_applied": len(lags),
        **figures,
        "kept_up": last <= KEPT_UP_FACTOR * first + KEPT_UP_SLACK_MS,
        "fed_trx_per_s": round((len(appended) - 1) / feed_s) if feed_s > 0 else None,
        # from the first append to the last commit: falls below the feed rate when the applier lags
        "applied_trx_per_s": round((len(lags) - 1) / apply_s) if apply_s > 0 else None,
        "timestamps_mismatched": mismatched,
    }


def lag_run(
    folder: Path, pieces: list[Piece], rate: float, workers: int, limit: int, warmup: int, seed: int
) -> dict[str, object]:
    """One live run: a fresh slave follows a folder the feeder appends to; figures and checks."""
    work = Path(tempfile.mkdtemp(prefix="relaydeck-live-"))
    live = work / "live"
    live.mkdir()
    commits = CommitLog()
    feeder = Feeder(pieces, live, rate, limit, warmup, seed)
    errors: list[str] = []
    try:
        replica = ReplicaServer(work / "slave.duckdb", work / "repo.sqlite", follow=True, on_commit=commits)
        try:
            replica.execute(f"SET GLOBAL replica_parallel_workers = {workers}")
            if workers:
                replica.execute("SET GLOBAL replica_parallel_type = LOGICAL_CLOCK")
            replica.execute(
                f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{feeder.index}' FOR CHANNEL '{LIVE_CHANNEL}'"
            )
            replica.execute(f"START REPLICA FOR CHANNEL '{LIVE_CHANNEL}'")
            time.sleep(START_SETTLE_S)  # started before the relay log exists, as a replica's applier
            feeder.start()
            # The paced feed starts once the warm-up is applied: the lag measured is the steady one,
            # not the channel's start or the schema's DDL.
            feeder.warmed.wait()
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            warm = len(feeder.appended_us)
            while len(commits) < warm and replica.running(LIVE_CHANNEL) and time.monotonic() < deadline:
                time.sleep(0.02)
            feeder.go.set()
            feeder.join()
            if feeder.error is not None:
                errors.append(f"feeder: {type(feeder.error).__name__}: {feeder.error}")
            fed = len(feeder.appended_us)
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while len(commits) < fed and replica.running(LIVE_CHANNEL) and time.monotonic() < deadline:
                time.sleep(0.02)
            if len(commits) < fed:
                errors.append(f"{len(commits)} of {fed} fed transactions committed")
            replica.execute(f"STOP REPLICA FOR CHANNEL '{LIVE_CHANNEL}'")
            run = replica.run_of(LIVE_CHANNEL)
            if run is not None and run.outcome.error is not None:
                errors.append(run.outcome.error.one_line())
        finally:
            replica.close()
        whole_log = fed == transactions_in(folder)
        if whole_log:
            reference = "generator oracle"
            diffs = table_differences(work / "slave.duckdb", [folder / "expected"])
        else:
            reference = "batch replay of the fed transactions"
            Replay(work / "reference.duckdb", None, [ChannelSpec("", feeder.index)]).run()
            diffs = slave_differences(work / "slave.duckdb", work / "reference.duckdb")
        figures = lag_figures(commits, feeder)
        return {
            "rate_trx_per_s": rate,
            "workers": workers,
            "fed": fed,
            "warmup": min(warmup, fed),
            "torn_writes": feeder.torn_writes,
            "appended_late": feeder.behind_schedule,
            **figures,
            "whole_log_fed": whole_log,
            "compared_with": reference,
            "identical": not diffs and not errors and figures["timestamps_mismatched"] == 0,
            "differences": diffs,
            "errors": errors,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- (b) fan-in ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FanInLog:
    channel: str
    folder: Path
    transactions: int


def fan_in_run(logs: list[FanInLog]) -> dict[str, object]:
    """One slave, one channel per log, started together; wall time until the last one ends."""
    work = Path(tempfile.mkdtemp(prefix="relaydeck-fanin-"))
    errors: list[str] = []
    try:
        replica = ReplicaServer(work / "slave.duckdb", work / "repo.sqlite", follow=False)
        ended: dict[str, float] = {}
        try:
            replica.execute("SET GLOBAL replica_parallel_workers = 0")
            for log in logs:
                index = log.folder / "relay-bin.index"
                replica.execute(
                    f"CHANGE REPLICATION SOURCE TO RELAY_LOG_INDEX = '{index}' FOR CHANNEL '{log.channel}'"
                )
            start = time.perf_counter()
            replica.execute("START REPLICA")

            def note_end(channel: str) -> None:
                run = replica.run_of(channel)
                assert run is not None
                run.join()
                ended[channel] = time.perf_counter()

            watchers = [threading.Thread(target=note_end, args=(log.channel,)) for log in logs]
            for watcher in watchers:
                watcher.start()
            for watcher in watchers:
                watcher.join()
            wall = max(ended.values()) - start
            replica.wait()
            applied: dict[str, int] = {}
            for log in logs:
                outcome = replica.run_of(log.channel).outcome  # type: ignore[union-attr]
                if outcome.error is not None:
                    errors.append(f"{log.channel}: {outcome.error.one_line()}")
                applied[log.channel] = outcome.stats.transactions if outcome.stats else 0
                if applied[log.channel] != log.transactions:
                    errors.append(f"{log.channel}: applied {applied[log.channel]} of {log.transactions}")
        finally:
            replica.close()
        diffs = table_differences(work / "slave.duckdb", [log.folder / "expected" for log in logs])
        total = sum(applied.values())
        return {
            "channels": len(logs),
            "seconds": round(wall, 3),
            "transactions": total,
            "trx_per_s": round(total / wall),
            "per_channel_trx_per_s": {
                log.channel: round(applied[log.channel] / (ended[log.channel] - start)) for log in logs
            },
            "identical": not diffs and not errors,
            "differences": diffs,
            "errors": errors,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- report -------------------------------------------------------------------------------------


def print_table(head: list[str], lines: list[list[str]]) -> None:
    """Columns right-aligned (all figures here), a rule under the head."""
    widths = [max(len(row[i]) for row in [head, *lines]) for i in range(len(head))]
    for n, row in enumerate([head, *lines]):
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return str(value)


def _numbers(text: str, kind: type) -> list:  # type: ignore[type-arg]
    return [kind(part) for part in text.split(",") if part.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size", type=float, default=6.0, help="relay log fed in part (a), MB (default 6: ~2,750 trx)"
    )
    parser.add_argument("--rates", default="200,800", help="feed rates in trx/s, comma-separated")
    parser.add_argument(
        "--workers", default="0,4", help="replica_parallel_workers per run (0: single applier)"
    )
    parser.add_argument(
        "--transactions", type=int, default=3000, help="transactions fed per run at most (default 3000)"
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=100,
        help="transactions appended at once and applied before the paced feed (default 100: the "
        "schema and initial rows, then some); not in the lag figures",
    )
    parser.add_argument("--channel-size", type=float, default=3.0, help="each fan-in log, MB (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="fan-in rounds; the best of each is kept")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-lag", action="store_true", help="only part (b)")
    parser.add_argument("--skip-fan-in", action="store_true", help="only part (a)")
    args = parser.parse_args()
    rates = _numbers(args.rates, float)
    workers = _numbers(args.workers, int)

    results: dict[str, object] = {
        **measurement_header(),
        "options": {
            "size_mb": args.size,
            "rates": rates,
            "workers": workers,
            "transactions": args.transactions,
            "warmup": args.warmup,
            "channel_size_mb": args.channel_size,
            "repeats": args.repeats,
            "seed": args.seed,
            "torn_share": TORN_SHARE,
            "kept_up_rule": f"last-20% median lag <= {KEPT_UP_FACTOR:g} x first-20% median "
            f"+ {KEPT_UP_SLACK_MS:g} ms",
        },
    }
    failures: list[str] = []

    if not args.skip_lag:
        folder = generated(args.size, args.seed)
        pieces = plan_feed(folder / "relay-bin.index")
        runs = []
        for n in workers:
            for rate in rates:
                run = lag_run(folder, pieces, rate, n, args.transactions, args.warmup, args.seed)
                runs.append(run)
                print(json.dumps(run), flush=True)
                if not run["identical"]:
                    failures.append(f"lag rate {rate:g} workers {n}: {run['errors'] or run['differences']}")
        results["lag"] = {"relay_log": str(folder.relative_to(ROOT)), "runs": runs}
        print()
        print_table(
            [
                "rate",
                "workers",
                "paced",
                "p50 ms",
                "p99 ms",
                "max ms",
                "fed/s",
                "applied/s",
                "kept up",
                "identical",
            ],
            [
                [
                    f"{r['rate_trx_per_s']:g}",
                    str(r["workers"]),
                    _fmt(r.get("paced_applied")),
                    *(_fmt(r.get(k)) for k in ("lag_ms_p50", "lag_ms_p99", "lag_ms_max")),
                    *(_fmt(r.get(k)) for k in ("fed_trx_per_s", "applied_trx_per_s", "kept_up", "identical")),
                ]
                for r in runs
            ],
        )
        print()

    if not args.skip_fan_in:
        logs = []
        for i in range(max(FAN_IN_CHANNELS)):
            folder = generated(args.channel_size, args.seed + i, namespace=f"_c{i}")
            logs.append(FanInLog(f"c{i}", folder, transactions_in(folder)))
        rounds: dict[int, list[dict[str, object]]] = {n: [] for n in FAN_IN_CHANNELS}
        for _ in range(args.repeats):
            for n in FAN_IN_CHANNELS:  # interleaved: each round measures 1, 2 and 4 side by side
                run = fan_in_run(logs[:n])
                rounds[n].append(run)
                print(json.dumps(run), flush=True)
                if not run["identical"]:
                    failures.append(f"fan-in {n} channels: {run['errors'] or run['differences']}")
        best = {n: min(runs_n, key=lambda r: r["seconds"]) for n, runs_n in rounds.items()}  # type: ignore[arg-type,return-value]
        base = best[1]["trx_per_s"]
        summary = {
            str(n): {
                "channels": n,
                "transactions": r["transactions"],
                "best_seconds": r["seconds"],
                "runs_seconds": [x["seconds"] for x in rounds[n]],
                "trx_per_s": r["trx_per_s"],
                "ratio_to_1_channel": round(r["trx_per_s"] / base, 2),  # type: ignore[operator]
                # within each round, against that round's 1-channel run: how much the best-of moves
                "ratio_per_round": [
                    round(x["trx_per_s"] / one["trx_per_s"], 2)  # type: ignore[operator]
                    for x, one in zip(rounds[n], rounds[1], strict=True)
                ],
                "per_channel_trx_per_s": r["per_channel_trx_per_s"],
                "identical": all(x["identical"] for x in rounds[n]),
            }
            for n, r in best.items()
        }
        results["fan_in"] = {
            "logs": [
                {
                    "channel": log.channel,
                    "relay_log": str(log.folder.relative_to(ROOT)),
                    "transactions": log.transactions,
                }
                for log in logs
            ],
            "applier": "single applier per channel (replica_parallel_workers = 0)",
            "best": summary,
            "runs": {str(n): runs_n for n, runs_n in rounds.items()},
        }
        print()
        print_table(
            ["channels", "trx", "best s", "trx/s", "ratio", "per channel trx/s", "identical"],
            [
                [
                    str(n),
                    str(s["transactions"]),
                    f"{s['best_seconds']:.2f}",
                    str(s["trx_per_s"]),
                    f"{s['ratio_to_1_channel']:.2f}",
                    " ".join(str(v) for v in s["per_channel_trx_per_s"].values()),  # type: ignore[attr-defined]
                    _fmt(s["identical"]),
                ]
                for n, s in ((int(k), v) for k, v in summary.items())
            ],
        )

    results["failures"] = failures
    for failure in failures:
        print(f"FAILED: {failure}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "live_throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
