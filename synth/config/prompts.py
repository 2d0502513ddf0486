"""Prompt templates: one Jinja file per LLM task in prompts/, rendered strictly into chat messages."""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

import jinja2

from synth.config import question_types
from synth.config.conf import CONFIG_DIR, _load
from synth.core.calendar import weekday
from synth.core.errors import InputError

# A template's text before this marker is the stable, cacheable system prefix; after it, the task.
SPLIT = "=== TASK ==="


def prompts_dir() -> Path:
    """The templates folder: $SYNTH_PROMPTS_DIR if set (to try edited prompts), else the repository's prompts/."""
    override = os.environ.get("SYNTH_PROMPTS_DIR")
    if override:
        if not Path(override).is_dir():
            raise InputError(f"SYNTH_PROMPTS_DIR: {override}: not a directory")
        return Path(override)
    return _bundled_dir()


@lru_cache(maxsize=1)
def _bundled_dir() -> Path:
    """The repository's prompts/ (or the wheel's copy): resolved once, not on every render."""
    package = Path(__file__).resolve().parent.parent  # synth/
    for candidate in (package.parent / "prompts", package / "_prompts"):
        if candidate.is_dir():
            return candidate
    raise InputError("prompts/: the prompt templates directory is missing")


LABELS_FILE = CONFIG_DIR / "labels.toml"
# Templates that use these names depend on the labels table too (their hash includes it).
_LABEL_USE = re.compile(r"\b(label|pronoun)\(")
_SENTENCE_END = ("。", "！", "？", ".", "!", "?", "…")


@lru_cache(maxsize=1)
def labels() -> dict:
    """The native-label table (synth/config/labels.toml): {language: {group: {id: label}}}."""
    return _load(LABELS_FILE)


def label(value: object, group: str, language: str) -> str:
    """The native label of an id shown in a prompt (`'experience' | label('dimension', 'zh')` → 经历); the id itself
    when the table has no entry for it (English prompts show ids)."""
    text = str(value)
    found = labels().get(language, {}).get(group, {}).get(text)
    if found is None and group == "question_type":  # a type registered with its own labels
        spec = question_types.get(text)
        found = spec.labels.get(language) if spec is not None else None
    return str(text if found is None else found)


def pronoun(gender: object, language: str) -> str:
    """The third-person pronoun for a persona's gender as the record spells it; the table's `unknown` otherwise."""
    table = labels().get(language, {}).get("pronoun", {})
    key = str(gender).strip()
    return str(table.get(key, table.get(key.lower(), table.get("unknown", ""))))


def sentence(text: object, language: str) -> str:
    """Model text closed by exactly one full stop: a template writes `{{ x | sentence(language) }}` instead of
    `{{ x }}。`, which doubles the stop when the model already ended its text with one."""
    body = str(text).rstrip()
    if not body or body.endswith(_SENTENCE_END):
        return body
    return body + ("。" if language == "zh" else ".")


@lru_cache(maxsize=4)
def environment(root: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["label"] = label
    env.filters["sentence"] = sentence
    env.globals["label"] = lambda group, value, language: label(value, group, language)
    env.globals["pronoun"] = pronoun
    env.filters["weekday"] = weekday  # Monday 0 … Sunday 6; the templates name it in their language
    return env


def _env() -> jinja2.Environment:
    return environment(str(prompts_dir()))


def template_source_hash(name: str) -> str:
    """Hash of a template and every template it includes or imports, so editing a shared piece makes it stale."""
    root = prompts_dir()
    seen: set[str] = set()
    pending = [name]
    digest = hashlib.sha256()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        path = root / current
        if not path.is_file():
            raise InputError(f"prompts/{current}: template not found")
        text = path.read_text(encoding="utf-8")
        digest.update(current.encode() + b"\0" + text.encode("utf-8") + b"\0")
        if _LABEL_USE.search(text) and "labels.toml" not in seen:
            seen.add("labels.toml")
            digest.update(b"labels.toml\0" + LABELS_FILE.read_bytes() + b"\0")
        pending.extend(re.findall(r"{%-?\s*(?:include|import|from|extends)\s+['\"]([^'\"]+)['\"]", text))
    return "sha256:" + digest.hexdigest()


def render_text(name: str, /, **variables) -> str:
    try:
        return _env().get_template(name).render(**variables).strip()
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"prompts/{exc.name or name}: line {exc.lineno}: template syntax error: {exc.message}") from None
    except jinja2.UndefinedError as exc:
        raise InputError(f"prompts/{name}: undefined variable ({exc.message})") from None
    except jinja2.TemplateNotFound as exc:
        raise InputError(f"prompts/{exc.name}: template not found") from None


def render(name: str, /, **variables) -> list[dict[str, str]]:
    """Render a task template into messages: [system prefix, user task] or [user task]."""
    text = render_text(name, **variables)
    if SPLIT in text:
        system, task = text.split(SPLIT, 1)
        return [{"role": "system", "content": system.strip()}, {"role": "user", "content": task.strip()}]
    return [{"role": "user", "content": text}]


def check_templates(names: list[str]) -> None:
    """Parse every named template (syntax errors surface before the first model call)."""
    env = _env()
    for name in names:
        try:
            env.get_template(name)
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(
                f"prompts/{exc.name or name}: line {exc.lineno}: template syntax error: {exc.message}"
            ) from None
        except jinja2.TemplateNotFound as exc:
            raise InputError(f"prompts/{exc.name}: template not found") from None
