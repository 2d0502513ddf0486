"""The docs describe what exists: generated pages are current, and nothing in the repository points outside it."""

from __future__ import annotations

import subprocess

from kit import REPO

from synth.pipeline.stage_docs import page
from synth.stages import STAGES


def test_every_stage_has_a_current_generated_page():
    folder = REPO / "docs" / "stages"
    for stage in STAGES.values():
        path = folder / f"{stage.name}.md"
        assert path.is_file(), f"{path}: missing; run python -m synth.pipeline.stage_docs docs/stages"
        assert path.read_text(encoding="utf-8") == page(stage), \
            f"{path}: out of date; run python -m synth.pipeline.stage_docs docs/stages"
    assert {p.stem for p in folder.glob("*.md")} == set(STAGES), "a page for a stage that no longer exists"


def test_a_stage_page_lists_its_files_prompts_tasks_and_knobs():
    text = page(STAGES["traces"])
    for piece in ("`traces.jsonl`", "prompts/traces_write.j2", "`traces_privacy` (a judge", "## Knobs: `[traces]`",
                  "`voice_examples`"):
        assert piece in text, piece


def test_no_file_of_the_repository_points_outside_it():
    """A clone has no ../shared: code, docs and config never send a user there. (Tests may cross-check against the
    outside MCQ-bias script when it happens to be beside the checkout, and skip saying so when it is not.)"""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    outside = []
    for name in tracked:
        path = REPO / name
        if path.suffix in {".py", ".md", ".toml", ".j2", ".yml", ".cfg", ".txt", ""} and path.is_file():
            text = path.read_text(encoding="utf-8", errors="ignore")
            if "../shared" in text and not name.startswith("tests/"):
                outside.append(name)
    assert not outside, f"files pointing at ../shared (not part of a clone): {outside}"
