"""Configuration: presets, per-persona stage settings, model aliases and prices, and provider/model routes."""

from __future__ import annotations

import copy
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.core.errors import InputError

CONFIG_DIR = Path(__file__).parent  # the TOML tables live beside the code that reads them
PRESETS = ("tiny", "small", "clonemem")
PROVIDERS = ("anthropic", "openai", "local", "fake")


def _load(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def model_table() -> dict:
    return _load(CONFIG_DIR / "models.toml")


def recorded_section(config: dict, name: str) -> dict:
    """A section of a dataset's recorded config over the shipped `[defaults]`: a dataset made before a key existed
    is read with that key's default."""
    return {**_load(CONFIG_DIR / "presets.toml")["defaults"].get(name, {}), **(config.get(name) or {})}


def synth_version() -> str:
    """The installed synth's version, recorded in dataset.json and each manifest (which code wrote a dataset)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("synth")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class RecordedConfig:
    """A dataset's recorded config read as "what was set then", grown to today's settings."""

    config: dict
    filled: list[str]  # "[arcs] everyday_min_days = 3 (default)": keys added to synth since, at today's default
    removed: list[str]  # "[filter] blind_confidence": keys synth no longer knows, ignored
    reshaped: list[str] = field(default_factory=list)  # recorded values read in a key's new shape (RESHAPED)


def _media_per_language(value: Any) -> Any:
    """[traces] media was one mix for every language before it was per language: the recorded mix for each."""
    if isinstance(value, dict) and value and all(isinstance(w, (int, float)) for w in value.values()):
        return {"en": dict(value), "zh": dict(value)}
    return value


# Recorded settings whose shape changed (section, key → the new shape of an old value; a value already in the new
# shape is returned as it is). Add a row when a release changes a key's shape, so older datasets still load.
RESHAPED = {("traces", "media"): ("a single mix, now per language (the recorded mix for each)", _media_per_language)}


def grow_recorded(recorded: dict, today: dict) -> RecordedConfig:
    """Keys the recorded config lacks take today's value (the preset's defaults); keys no settings model declares
    any more are dropped. Values that are there are kept as recorded — a now-invalid one is refused by the caller's
    `settings.parse`, which names the file, the key and the value."""
    from synth.config import settings

    filled: list[str] = []
    removed: list[str] = []
    reshaped: list[str] = []

    def walk(old: dict, new: dict, model, where: str) -> dict:
        out: dict = {}
        for key, value in old.items():
            if key not in model.model_fields:
                removed.append(f"[{where}] {key}" if where else key)
                continue
            sub = settings._section_model(model, key)
            if sub is not None and isinstance(value, dict) and isinstance(new.get(key), dict):
                out[key] = walk(value, new[key], sub, f"{where}.{key}" if where else key)
                continue
            out[key] = copy.deepcopy(value)
            if (where, key) in RESHAPED:
                said, reshape = RESHAPED[(where, key)]
                out[key] = reshape(value)
                if out[key] != value:
                    reshaped.append(f"[{where}] {key}: {said}")
        for key, value in new.items():
            if key not in old and key in model.model_fields:
                out[key] = copy.deepcopy(value)
                if settings._section_model(model, key) is not None:
                    filled.append(f"[{key}] (a new section, its defaults)")
                    continue
                shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, dict) else "{…}"
                filled.append(f"[{where}] {key} = {shown} (default)" if where else f"{key} = {shown} (default)")
        return out

    public = {k: v for k, v in today.items() if not k.startswith("_")}
    grown = walk({k: v for k, v in recorded.items() if not k.startswith("_")}, public, settings.Settings, "")
    return RecordedConfig(grown, filled, removed, reshaped)


def prune_scale_overrides(overrides: dict, removed: list[str]) -> dict:
    """A recorded per-scale override keeps only keys synth still declares (the others are reported as removed)."""
    from synth.config import settings

    def walk(node: dict, model, where: str) -> dict:
        out = {}
        for key, value in node.items():
            if key not in model.model_fields:
                removed.append(f"[{where}] {key}")
                continue
            sub = settings._section_model(model, key)
            out[key] = walk(value, sub, f"{where}.{key}") if sub is not None and isinstance(value, dict) else value
        return out

    return {scale: walk(over, settings.Settings, f"scale.{scale}") if isinstance(over, dict) else over
            for scale, over in (overrides or {}).items()}


def preset_config(preset: str, user_config: Path | None = None) -> dict:
    """The preset's settings (before per-persona scale overrides), every section checked against its typed model:
    an unknown key or a wrong type is one line naming the file, the section and the key."""
    from synth.config import settings

    if preset not in PRESETS:
        raise InputError(f"--preset: unknown preset '{preset}' (choose one of {', '.join(PRESETS)})")
    presets_file = CONFIG_DIR / "presets.toml"
    table = _load(presets_file)
    merged = deep_merge(table["defaults"], {k: v for k, v in table[preset].items() if k != "scale"})
    merged["preset"] = preset
    merged["_scale"] = table[preset].get("scale", {})
    blame: dict[str, Path | str] = {}
    if user_config is not None:
        user = _load(user_config)
        settings.check_keys(user, user_config, allow_scale=True)
        blame = {key: user_config for key in settings.dotted_keys({k: v for k, v in user.items() if k != "scale"})}
        merged["_scale"] = deep_merge(merged["_scale"], user.pop("scale", {}))
        merged = deep_merge(merged, user)
    settings.parse(merged, blame, str(presets_file))
    for scale in merged["_scale"]:
        settings.check_keys(merged["_scale"][scale], f"{user_config or presets_file}: scale {scale}", allow_scale=False)
        settings.parse(persona_config(merged, scale), blame, f"{user_config or presets_file} (scale {scale})")
    return merged


def persona_config(config: dict, scale: str, languages: list[str] | tuple[str, ...] = ()) -> dict:
    """Apply the preset's per-scale overrides for one persona, and its file's release `languages` when the config
    names none ([translate] languages, or --languages, wins)."""
    scaled = deep_merge({k: v for k, v in config.items() if k != "_scale"}, config.get("_scale", {}).get(scale, {}))
    if languages and "translate" in scaled and not scaled["translate"].get("languages"):
        scaled["translate"] = {**scaled["translate"], "languages": list(languages)}
    return scaled


@dataclass(frozen=True)
class Route:
    """Which provider and model answer a task, with the model's price row."""

    provider: str
    model: str
    base_url: str | None = None
    prices: tuple[tuple[str, float], ...] = ()

    def price(self, key: str) -> float:
        return dict(self.prices).get(key, 0.0)

    def cost(self, input_tokens: int, output_tokens: int, cached: int = 0, cache_write: int = 0, batch: bool = False) -> float:
        fresh = max(0, input_tokens - cached - cache_write)
        usd = (
            fresh * self.price("input")
            + cached * self.price("cache_read")
            + cache_write * self.price("cache_write")
            + output_tokens * self.price("output")
        ) / 1e6
        return usd * (self.price("batch_discount") or 1.0) if batch else usd

    @property
    def spec(self) -> str:
        return f"{self.provider}/{self.model}"


def resolve_route(provider: str, model: str | None, base_url: str | None = None) -> Route:
    """Check a provider/model pair against the model table; unknown names are a clear InputError."""
    table = model_table()
    if provider not in PROVIDERS:
        raise InputError(f"--provider: unknown provider '{provider}' (choose one of {', '.join(PROVIDERS)})")
    name = model or table["providers"][provider]["default_model"]
    name = table.get("aliases", {}).get(name, name)
    row = table.get("models", {}).get(name)
    if provider == "local" and row is None:
        if not name.endswith(".gguf"):
            raise InputError(f"--model: the local provider takes a path to a .gguf file or 'gemma3-270m' (got '{name}')")
        if not Path(name).is_file():
            raise InputError(f"--model: {name}: no such GGUF file")
        row = {"input": 0.0, "output": 0.0}
    elif row is None:
        if provider == "openai" and base_url:
            row = {"input": 0.0, "output": 0.0}  # a self-hosted server: any model name, no price
        else:
            raise InputError(
                f"--model: unknown model '{name}' for provider {provider} "
                f"(add it with its prices to synth/config/models.toml)"
            )
    elif row.get("provider") not in (provider, None) and not (provider == "openai" and base_url):
        raise InputError(f"--model: '{name}' is a {row['provider']} model, not {provider}")
    prices = tuple((k, float(v)) for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    if base_url:
        # Another endpoint (a proxy, a self-hosted server, the fake): the vendor's rate limits don't describe it.
        prices = tuple((k, v) for k, v in prices if k not in ("rpm", "tpm"))
    return Route(provider=provider, model=name, base_url=base_url, prices=prices)


def parse_route_spec(spec: str, default: Route) -> Route:
    """A `provider/model` string from config (`routes` table); the model part may contain slashes."""
    provider, _, model = spec.partition("/")
    base_url = default.base_url if provider == default.provider else None
    return resolve_route(provider, model or None, base_url)


def choose_provider(explicit: str | None, env: dict[str, str] | None = None) -> tuple[str, str]:
    """Explicit --provider wins; else a key in the environment picks anthropic or openai; else local."""
    env = os.environ if env is None else env
    if explicit:
        return explicit, "--provider was given"
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic", "ANTHROPIC_API_KEY is set"
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        return "openai", "OPENAI_API_KEY or OPENAI_BASE_URL is set"
    return "local", "no API key in the environment: the embedded local model (smoke quality)"


def key_env(provider: str) -> str | None:
    return model_table()["providers"].get(provider, {}).get("key_env")


def get(config: dict, dotted: str, default: Any = None) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node
