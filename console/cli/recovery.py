"""`relaydeck recovery`: what the next start recovers after a parallel applier stopped (changes nothing)."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from engine.api import json_visible, visible


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "recovery",
        help="show what the next start recovers after a parallel applier stopped (changes nothing)",
    )
    parser.add_argument("--slave", required=True, metavar="SLAVE.duckdb")
    parser.add_argument("--repository", required=True, metavar="REPO.sqlite")
    parser.add_argument("--channel", default=None, metavar="NAME")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=cmd_recovery)
    return parser


def cmd_recovery(args: argparse.Namespace, out: TextIO) -> int:
    """The recovery picture after a parallel applier stopped: LWM, worker checkpoints, gaps, plan."""
    from engine.api import inspect_recovery

    pictures = inspect_recovery(args.slave, args.repository, args.channel)
    if args.channel is not None and not pictures:
        from engine.api import channel_does_not_exist

        raise channel_does_not_exist(args.channel)
    if args.json:
        out.write(json_visible(json.dumps([p.to_json() for p in pictures], ensure_ascii=False)) + "\n")
        return 0
    lines: list[str] = []
    for picture in pictures:
        lines.append(f"channel '{picture.channel}'")
        lwm = f"  low-water mark: #{picture.lwm} at relay log {picture.lwm_relay_position or '(start)'}"
        lines.append(lwm + (f", source {picture.lwm_source_position}" if picture.lwm_source_position else ""))
        lines.append(f"  committed after it: {picture.committed_after_lwm}; gaps: {len(picture.gaps)}")
        for w in picture.workers:
            lines.append(
                f"  worker {w.worker}: last {w.relay_log}, checkpoint {w.checkpoint_relay_log}, "
                f"seqno {w.checkpoint_seqno}/{w.checkpoint_group_size}, bitmap {w.bitmap or '-'}"
            )
        for g in picture.groups:
            who = "GAP" if g.is_gap else f"committed by worker {g.committed_by}"
            lines.append(f"  #{g.ordinal} {g.transaction} at {g.relay_start}: {who}")
        if picture.problem:
            lines.append(f"  problem: {picture.problem}")
        lines.extend(f"  plan: {step}" for step in picture.plan)
    # channel names, file names and transactions come from logs: print them escaped
    out.writelines(visible(line) + "\n" for line in lines)
    return 0
