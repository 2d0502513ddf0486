"""`synth browse`: a static HTML site for spot-checking a dataset — per persona a timeline (major events, phases
with their snapshots, arcs as lanes of anchor states, events, traces), the traces in full, and every question
linked both ways to its evidence and traces. One folder, no server: each page embeds its data and its script."""

from __future__ import annotations

import json
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from synth.core.jsonl import staged_dir
from synth.release.charts import arc_steps
from synth.release.view import PersonaView, dict_list, id_list, load_dataset, record_language, text

ASSETS = Path(__file__).parent / "assets" / "browse"
SITE = "site"


def page_name(persona_id: str) -> str:
    return f"{persona_id}.html"


def everyday(record: dict) -> bool:
    """Low-salience, everyday life (a field other stages may add: `everyday: true`, or a `kind` naming it)."""
    return record.get("everyday") is True or text(record.get("kind")) in {"everyday", "routine"}


def _question(item: dict, language: str, status: str) -> dict:
    evidence = [{"statement": text(e.get("statement")), "evidence_id": text(e.get("evidence_id")),
                 "traces": id_list(e.get("digital_trace_ids")), "background": bool(e.get("background"))}
                for e in dict_list(item.get("evidence"))]
    traces = list(dict.fromkeys([*id_list(item.get("digital_trace_ids")), *(t for e in evidence for t in e["traces"])]))
    row = {"id": text(item.get("id")), "type": text(item.get("question_type")), "dimension": text(item.get("dimension")),
           "arc": text(item.get("arc_id")), "time": text(item.get("question_time")), "question": text(item.get("question")),
           "answer": text(item.get("answer")), "language": record_language(item, language),
           "choices": [{"id": text(c.get("id")), "text": text(c.get("text"))} for c in dict_list(item.get("choices"))],
           "correct": text(item.get("correct_choice_id")), "evidence": evidence, "traces": traces, "status": status}
    if status == "rejected":
        row.update(filter=text(item.get("filter")), reason=text(item.get("reason")))
    return row


def site_data(view: PersonaView) -> dict:
    """Everything one persona page shows, as plain JSON (optional fields read defensively)."""
    arcs_of = {text(e.get("id")): id_list(e.get("arc_ids")) for e in view.evidence}
    steps = arc_steps(view)
    everyday_majors = {text(m.get("id")) for m in view.majors if everyday(m)}  # issue 15's everyday stretches
    phase_everyday = {text(p.get("id")) for p in view.phases
                      if everyday(p) or text(p.get("major_event_id")) in everyday_majors}
    p = view.persona
    return {
        "persona": {"id": view.id, "name": text(p.get("name")), "language": view.language,
                    "start": text(p.get("start")), "end": text(p.get("end")), "occupation": text(p.get("occupation")),
                    "age": p.get("age") if isinstance(p.get("age"), int) else None,
                    "backstory": text(p.get("backstory"))},
        "arcs": [{"id": text(a.get("id")), "title": text(a.get("title")), "dimension": text(a.get("dimension")),
                  "states": [{"label": text(s.get("label")), "description": text(s.get("description"))}
                             for s in dict_list(a.get("anchor_states"))],
                  "steps": [[d.isoformat(), i] for d, i in steps.get(text(a.get("id")), [])]} for a in view.arcs],
        "majors": [{"id": text(m.get("id")), "title": text(m.get("title")), "description": text(m.get("description")),
                    "start": text(m.get("start")), "end": text(m.get("end"))}
                   for m in view.majors if text(m.get("id")) not in everyday_majors],
        "phases": [{"id": text(ph.get("id")), "title": text(ph.get("title")), "description": text(ph.get("description")),
                    "start": text(ph.get("start")), "end": text(ph.get("end")),
                    "everyday": text(ph.get("id")) in phase_everyday,
                    "before": ph.get("snapshot_before") if isinstance(ph.get("snapshot_before"), dict) else {},
                    "after": ph.get("snapshot_after") if isinstance(ph.get("snapshot_after"), dict) else {}}
                   for ph in view.phases],
        "events": [{"id": text(e.get("id")), "title": text(e.get("title")), "description": text(e.get("description")),
                    "time": text(e.get("time")), "location": text(e.get("location")),
                    "everyday": everyday(e) or text(e.get("phase_id")) in phase_everyday} for e in view.events],
        "evidence": {text(e.get("id")): {"statement": text(e.get("statement")), "kind": text(e.get("kind"))}
                     for e in view.evidence},
        "traces": [{"id": text(t.get("id")), "time": text(t.get("time")), "medium": text(t.get("medium")),
                    "content": text(t.get("content")), "event": text(t.get("event_id")),
                    "evidence": id_list(t.get("evidence_ids")), "language": record_language(t, view.language),
                    "arcs": sorted({a for e in id_list(t.get("evidence_ids")) for a in arcs_of.get(e, [])})}
                   for t in sorted(view.traces, key=lambda t: (text(t.get("time")), text(t.get("id"))))],
        "questions": [_question(i, view.language, "final") for i in view.final],
        "rejected": [_question(i, view.language, "rejected") for i in view.rejected],
        "people": [{"id": text(x.get("id")), "name": text(x.get("name")), "relation": text(x.get("relation"))}
                   for x in view.people],
    }


def _embed(data: dict) -> str:
    """JSON safe inside a <script> element: no `</script>` or `<!--` can end it early."""
    return json.dumps(data, ensure_ascii=False).replace("</", "<\\/").replace("<!--", "<\\!--")


def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(ASSETS)), undefined=StrictUndefined, autoescape=True,
                       keep_trailing_newline=True)


def write_site(out: Path, only: set[str] | None = None) -> Path:
    """<out>/site/: index.html and one page per persona; replaces an older site only once the new one is complete.
    Returns the index path."""
    views = load_dataset(out, only)
    if not views:
        from synth.core.errors import InputError

        raise InputError(f"{out}: no persona directory (with persona.jsonl) to browse — run `synth persona` first")
    env = _environment()
    assets = {"style": (ASSETS / "browse.css").read_text(encoding="utf-8"),
              "script": (ASSETS / "browse.js").read_text(encoding="utf-8")}
    target = out / SITE
    with staged_dir(target, ".site.") as staging:
        for view in views:
            html = env.get_template("persona.html.j2").render(
                persona=view.persona, id=view.id, language=view.language, data=_embed(site_data(view)), **assets)
            (staging / page_name(view.id)).write_text(html, encoding="utf-8")
        index = env.get_template("index.html.j2").render(
            style=assets["style"],
            personas=[{"id": v.id, "page": page_name(v.id), "name": text(v.persona.get("name")),
                       "language": v.language, "traces": len(v.traces), "final": len(v.final),
                       "rejected": len(v.rejected)} for v in views])
        (staging / "index.html").write_text(index, encoding="utf-8")
    return target / "index.html"


def question_link(out: Path, persona_id: str, question_id: str) -> str:
    """The browser page of one question (a file:// URL; the page selects the question from its #q= fragment)."""
    return (out / SITE / page_name(persona_id)).resolve().as_uri() + f"#q={question_id}"
