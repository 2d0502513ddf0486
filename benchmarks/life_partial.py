"""Figures of a lived life from a run whose traces stage was stopped, and the re-dating of its events replayed.

`waves OUT DST`: the traces stage's journal (`<persona>/.work/traces.journal.jsonl`) keeps every finished event's
traces; events finish roughly in time order (a trace waits for the earlier traces it reads as its voice), by
stretches of `[traces] voice_wave_days`. This builds a dataset at DST of the leading stretches that finished: each
persona's timeline cut at the end of its last complete stretch, the events, evidence, phases, major events and
people of that span, and the journal's traces as `traces.jsonl`. `synth stats --out DST` and
`synth validate --out DST` then read it like any dataset (a major event running past the cut is a validate finding
of the cut, not of the run).

`redate OUT`: the events as the model dated them (`redated_from`, else `time`) re-dated with this checkout's
`close_gaps` (no filler calls: those need the model), against the run's own re-dating: the longest stretch without
an event, the stretches over `max_gap_days`, events per month, how many moved.

    python benchmarks/life_partial.py waves outputs/small /tmp/small_waves && synth stats --out /tmp/small_waves
    python benchmarks/life_partial.py redate outputs/small
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
from collections import Counter
from pathlib import Path

from synth.config.conf import recorded_section
from synth.core.calendar import holidays_between
from synth.core.jsonl import read_records
from synth.life.gaps import DayPins, all_gaps, close_gaps, open_gaps
from synth.quality.validate import recorded_config
from synth.records import Event, Persona, Phase


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _persona_dirs(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.glob("*/persona.jsonl"))


def waves(out: Path, dst: Path) -> None:
    wave_days = int(recorded_section(recorded_config(out), "traces")["voice_wave_days"])
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    shutil.copy(out / "dataset.json", dst / "dataset.json")
    for src in _persona_dirs(out):
        persona = _rows(src / "persona.jsonl")[0]
        start = dt.date.fromisoformat(persona["start"])
        events = _rows(src / "events.jsonl")
        carried = {e["event_id"] for e in _rows(src / "evidence.jsonl")}
        journal = _rows(src / ".work" / "traces.journal.jsonl")[1:]
        done = {j["unit"]: j["records"].get("traces.jsonl", []) for j in journal if "records" in j}
        def wave(e: dict, start: dt.date = start) -> int:
            return (dt.datetime.fromisoformat(e["time"]).date() - start).days // wave_days
        complete = []
        for w in sorted({wave(e) for e in events}):
            if not all(e["id"] in done for e in events if wave(e) == w and e["id"] in carried):
                break
            complete.append(w)
        if not complete:
            print(f"{src.name}: no complete wave")
            continue
        end = start + dt.timedelta(days=wave_days * (complete[-1] + 1) - 1)
        def inside(day: str | None, end: dt.date = end) -> bool:
            return day is None or dt.date.fromisoformat(day[:10]) <= end
        kept = [e for e in events if wave(e) <= complete[-1]]
        ids = {e["id"] for e in kept}
        d = dst / src.name
        d.mkdir()
        _write(d / "persona.jsonl", [{**persona, "end": end.isoformat()}])
        _write(d / "events.jsonl", kept)
        _write(d / "evidence.jsonl", [x for x in _rows(src / "evidence.jsonl") if x["event_id"] in ids])
        for name in ("phases.jsonl", "major_events.jsonl"):
            _write(d / name, [p for p in _rows(src / name) if inside(p["start"])])
        for name in ("people.jsonl", "phase_people.jsonl"):
            _write(d / name, [p for p in _rows(src / name) if inside(p.get("first_date"))])
        for name in ("arcs.jsonl", "seeds.jsonl"):
            shutil.copy(src / name, d / name)
        traces = sorted((t for e in kept for t in done.get(e["id"], [])), key=lambda t: (t["time"], t["id"]))
        _write(d / "traces.jsonl", traces)
        print(f"{src.name}: {len(complete)} complete waves with events, {start} to {end}: {len(kept)} of "
              f"{len(events)} events, {len(traces)} traces")


def _summary(items: list[Event], persona: Persona, max_gap_days: int) -> str:
    days = [e.time.date() for e in items]
    gaps = [g.days for g in all_gaps(days, persona.start, persona.end)]
    over = open_gaps(days, persona.start, persona.end, max_gap_days)
    months = Counter((day.year, day.month) for day in days)
    per = [months.get((y, m), 0) for y in range(persona.start.year, persona.end.year + 1) for m in range(1, 13)
           if persona.start <= dt.date(y, m, 28) and dt.date(y, m, 1) <= persona.end]
    moved = sum(e.redated_from is not None for e in items)
    return (f"longest stretch without an event {max(gaps)} days; over {max_gap_days} days: {len(over)}; "
            f"events per month {per}; re-dated {moved} of {len(items)}")


def redate(out: Path) -> None:
    config = recorded_config(out)
    section = recorded_section(config, "events")
    limit = max(1, section["max_gap_days"] - section["gap_room_days"])
    countries = config.get("holiday_countries", {})
    for d in _persona_dirs(out):
        persona = read_records(d / "persona.jsonl", Persona)[0]
        events = read_records(d / "events.jsonl", Event)
        phases = {p.id: p for p in read_records(d / "phases.jsonl", Phase)}
        holidays = holidays_between(countries.get(persona.language, ""), persona.language, persona.start, persona.end)
        pins = DayPins.of(section.get("date_words", []), holidays)
        model = [e.model_copy(update={"time": e.redated_from or e.time, "redated_from": None}) for e in events]
        replayed = close_gaps(model, phases, persona.start, persona.end, limit, (), pins)

        limit_days = section["max_gap_days"]
        print(f"{d.name}, the model's days: {_summary(model, persona, limit_days)}")
        print(f"{d.name}, the run:          {_summary(events, persona, limit_days)}")
        print(f"{d.name}, this checkout:    {_summary(replayed, persona, limit_days)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("waves", help="a dataset of the finished voice waves of a stopped traces stage")
    w.add_argument("out", type=Path)
    w.add_argument("dst", type=Path)
    r = sub.add_parser("redate", help="replay the re-dating of a run's events with this checkout")
    r.add_argument("out", type=Path)
    args = parser.parse_args()
    waves(args.out, args.dst) if args.command == "waves" else redate(args.out)


if __name__ == "__main__":
    main()
