"""Where a local model's GGUF file is: a path, or an alias whose row in models.toml names the pip package that
ships it, assembled into a cache directory on first use (never over the network)."""

from __future__ import annotations

import importlib
import os
import threading
from pathlib import Path

from synth.core.errors import InputError

DEFAULT_ALIAS = "gemma3-270m"

# An alias is assembled (and its checksum checked) once per process; later providers reuse the path.
_resolved: dict[str, Path] = {}
_resolve_lock = threading.Lock()


def resolve_model_path(model: str) -> Path:
    """The GGUF file for `model`: a path to a .gguf file, or an alias from synth/config/models.toml whose row
    has `package` (assembled into the cache on first use). Never touches the network."""
    if model.endswith(".gguf") or os.sep in model or Path(model).is_file():
        path = Path(model).expanduser()
        if not path.is_file():
            raise InputError(f"--model: {model}: no such GGUF file")
        return path.resolve()
    with _resolve_lock:
        if model not in _resolved:
            _resolved[model] = _assemble_package(_package_for(model))
        return _resolved[model]


def _package_for(alias: str) -> str:
    from synth.config.conf import model_table

    table = model_table()
    name = table.get("aliases", {}).get(alias, alias)
    row = table.get("models", {}).get(name) or {}
    package = row.get("package")
    if row.get("provider") not in ("local", None) or not package:
        raise InputError(
            f"--model: the local provider takes a path to a .gguf file or '{DEFAULT_ALIAS}' (got '{alias}')"
        )
    return package


def _assemble_package(package: str) -> Path:
    try:
        module = importlib.import_module(package)
    except ImportError:
        dist = package.replace("_", "-")
        raise InputError(
            f"the local model package '{dist}' is not installed: pip install -e '.[local]' (or pip install {dist})"
        ) from None
    cache_dir = os.environ.get("SYNTH_LOCAL_CACHE_DIR")
    target = Path(cache_dir).expanduser() / module.MODEL_NAME if cache_dir else Path(module.default_output_path())
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            try:
                return Path(module.assemble(target))  # checks the sha256 of the cached file
            except FileExistsError:
                pass  # a stale or half-written file: rebuild it below
        # assemble beside the target and rename, so a concurrent process never sees a half-written model
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")
        try:
            module.assemble(tmp, overwrite=True)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target
    except FileNotFoundError as exc:  # a chunk package is missing
        raise InputError(f"the local model package '{package}' is incomplete: {exc}") from None
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot assemble the local model into {target.parent} ({exc}); set SYNTH_LOCAL_CACHE_DIR to a "
            f"writable directory"
        ) from None
