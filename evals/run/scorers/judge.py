"""The model-graded scorer ``judge`` (docs/spec.md#judge): a model reads the case's input, reference
answer (if any) and the output against a rubric, and answers with a JSON verdict. The verdict and
the judge's reasoning are kept in the attempt (``metadata.judge``). It speaks the wire formats of
the model targets (``evals.run.targets.formats``: its request body, reply, usage, retryable
statuses, error words and key header are the format's): Anthropic Messages for an ``anthropic:``
model (on ``platform`` anthropic, bedrock or vertex), OpenAI Responses with ``api: responses``,
else OpenAI Chat Completions.

The graded output is written by the system under test, so it may try to grade itself: carry a
heading that looks like the prompt's rubric, a verdict line, a ready-made reply. The prompt
therefore gives its instructions first and frames the input, reference and output as data between
marker lines that carry a random nonce drawn for each call (redrawn if any framed text contains
it), so no framed text can close its block or forge the next one. The instructions and rubric are
a static prefix, byte-identical for every call of a judge, and the nonce comes only after them,
so a provider's prompt cache serves that prefix (Anthropic's marked with a cache breakpoint). The
verdict is read only from the judge's own reply: the whole reply must be one JSON object carrying
that call's nonce; a JSON object found somewhere in prose (it may be quoted from the output) is
never taken.

Every call the endpoint answers is paid for, a reply out of format included: its usage, prompt-cache
reads and writes included (and, with ``price_in_per_mtok``/``price_out_per_mtok``, its cost, the
cached tokens at ``price_cache_read_per_mtok``/``price_cache_write_per_mtok``), goes with the
verdict into the attempt's ``judge_usage``, so the run's spend and ``limits`` count the judge
beside the target. A verdict from the response cache paid nothing.

With ``repeats: k`` (docs/spec.md#judge-noise) each output is judged k times, each call its own
cache entry (the repeat index is in the key from the second on, so ``k: 1`` keeps the keys it always
had); the verdict is the mean of the k verdicts against ``pass_threshold`` (the share that passed,
at 0.5 by default a majority, a tie passing), the score the mean of the k scores, and every one of
the k judgements is kept in ``metadata.judge.repeats`` for the judge's self-agreement.

A judge that cannot give a verdict — unreachable, 408/409/429/5xx or a timeout after its retries,
a 4xx (a wrong key or model: the judge's set-up, not the answer), a reply not in that format —
raises ``ScorerUnavailable``: the attempt is an infra error, never a wrong answer (nor a pass).

```yaml
scorers:
  - judge:
      model: openai:gpt-4o-mini          # provider:model_name; anthropic:claude-… speaks Messages
      base_url: https://api.openai.com/v1
      api_key_env: OPENAI_API_KEY        # or null for a local server
      rubric: The answer states the capital and nothing false.   # or rubric_file: rubric.md
```"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evals.common import jsonsafe
from evals.common.confine import confined
from evals.common.errors import InputFileError
from evals.results.model import RetryRecord
from evals.results.spend import JudgeUsage
from evals.run.cache import ResponseCache
from evals.run.connections import HTTPError, KeepAlivePool, Reply
from evals.run.scorers.base import Score, ScorerUnavailable, as_text
from evals.run.targets.anthropic import AnthropicMessages
from evals.run.targets.formats import Turn, Usage, WireFormat, cost, parse_retry_after
from evals.run.targets.headers import headers_digest, request_headers
from evals.run.targets.openai_chat import OpenAIChat
from evals.run.targets.openai_responses import OpenAIResponses
from evals.suite.cases import Case
from evals.suite.targets import AnthropicParams, ModelName, OpenAIParams

TEMPLATES = Path(__file__).parent / "templates"
PROMPT_TEMPLATE = TEMPLATES / "judge.md.j2"  # the static prefix: instructions and rubric
FRAMED_TEMPLATE = TEMPLATES / "judge_framed.md.j2"  # the call's nonce and the data it frames
EXCERPT_CHARS = 300
NONCE_BYTES = 8
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)  # the one wrapper models add unasked
ANTHROPIC_PREFIX = "anthropic:"
MAX_REPEATS = 15  # each repeat is a paid call per attempt: beyond this, more cases buy more than more repeats


class JudgeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: ModelName = Field(
        description="provider:model_name; anthropic:<name> speaks Anthropic Messages, any other OpenAI's API."
    )
    base_url: str | None = Field(
        default=None,
        description="openai: the API's root (https://api.openai.com/v1 when unset); anthropic: the host root, as "
        "target.anthropic.base_url.",
    )
    api: Literal["chat", "responses"] = Field(
        default="chat", description="An OpenAI judge's API: Chat Completions or the Responses API."
    )
    platform: Literal["anthropic", "bedrock", "vertex"] | None = Field(
        default=None, description="An anthropic: judge's platform, as target.anthropic.platform (anthropic when unset)."
    )
    region: str | None = Field(default=None, description="bedrock/vertex: as target.anthropic.region.")
    project: str | None = Field(default=None, description="vertex: as target.anthropic.project.")
    api_key_env: str | None = Field(
        default="OPENAI_API_KEY",
        description="The variable holding the key, or null for a local server; an anthropic: judge's default is "
        "its platform's, as target.anthropic.api_key_env.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Headers sent with every call, as target.openai.headers: values may name environment variables, "
        "${NAME}, masked wherever they would be written.",
    )
    rubric: str | None = None
    rubric_file: str | None = Field(default=None, description="A file holding the rubric, relative to the config.")
    temperature: float | None = 0.0
    max_tokens: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="The most tokens a verdict may have (Responses: max_output_tokens; anthropic: 1024 when unset, "
        "as the Messages API requires one).",
    )
    timeout_s: Annotated[float, Field(gt=0)] = 60.0
    retries: Annotated[int, Field(ge=0)] = 3
    backoff_s: Annotated[float, Field(ge=0)] = 1.0
    pass_threshold: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.5,
        description="A reply with a score but no verdict passes at this score or above; with repeats, an output "
        "passes when this share of its verdicts or more passed.",
    )
    repeats: Annotated[int, Field(ge=1, le=MAX_REPEATS)] = Field(
        default=1,
        description="Judge each output this many times (each call cached on its own) and score the mean verdict: "
        "the report shows how often the judge agrees with itself (docs/spec.md#judge-noise).",
    )
    price_in_per_mtok: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="USD per million prompt tokens of the judge's model: with it (and price_out_per_mtok) each "
        "judged attempt records what its judge calls cost (judge_usage.cost_usd); limits.max_cost_usd needs them.",
    )
    price_out_per_mtok: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="USD per million completion tokens of the judge's model (see price_in_per_mtok)."
    )
    price_cache_read_per_mtok: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="USD per million prompt tokens read from the provider's prompt cache; unset: price_in_per_mtok.",
    )
    price_cache_write_per_mtok: Annotated[float, Field(ge=0)] | None = Field(
        default=None,
        description="USD per million prompt tokens written to the provider's prompt cache (Anthropic's "
        "cache_creation_input_tokens); unset: price_in_per_mtok.",
    )

    @model_validator(mode="after")
    def _one_rubric(self) -> JudgeParams:
        if (self.rubric is None) == (self.rubric_file is None):
            raise ValueError("give the judge exactly one of rubric: (text) or rubric_file: (a path)")
        self.wire_params()  # the format's own checks (a base_url with its route, a platform without region)
        return self

    def wire_params(self) -> OpenAIParams | AnthropicParams:
        """The judge as the params of the model target of its format, for that format to build its
        requests from (docs/spec.md#judge)."""
        given = self.model_fields_set
        common: dict[str, Any] = {"model": self.model, "temperature": self.temperature}
        if "api_key_env" in given or not self.model.startswith(ANTHROPIC_PREFIX):
            common["api_key_env"] = self.api_key_env
        if self.base_url is not None:
            common["base_url"] = self.base_url
        if self.headers:
            common["headers"] = self.headers
        try:
            if self.model.startswith(ANTHROPIC_PREFIX):
                if "api" in given:
                    raise ValueError("api: is an openai judge's (an anthropic: model speaks Messages)")
                extra = {k: getattr(self, k) for k in ("platform", "region", "project") if getattr(self, k)}
                if self.max_tokens is not None:
                    extra["max_tokens"] = self.max_tokens
                return AnthropicParams(**common, **extra)
            if given & {"platform", "region", "project"}:
                raise ValueError("platform:, region: and project: are an anthropic: judge's (model: anthropic:<name>)")
            common["max_output_tokens" if self.api == "responses" else "max_tokens"] = self.max_tokens
            return OpenAIParams(**common, api=self.api)
        except ValidationError as exc:
            raise ValueError("; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())) from None


def judge_format(wire: OpenAIParams | AnthropicParams) -> WireFormat:
    """The judge's wire format: the one the model target of that model and api would speak, with no
    tools and no system prompt (the instructions are part of the one prompt, docs/spec.md#judge)."""
    if isinstance(wire, AnthropicParams):
        return AnthropicMessages(wire, {}, None)
    return (OpenAIResponses if wire.api == "responses" else OpenAIChat)(wire, {}, None)


class Judge:
    """``await judge(output, case) -> Score``; one keep-alive pool to the endpoint per judge."""

    def __init__(self, params: JudgeParams, root: Path, cache: ResponseCache | None = None):
        self.params = params
        self.cache = cache
        if params.rubric_file is not None:
            # Sent to the judge's endpoint, which the config names too: confined like every path a
            # config names (evals.common.confine), or a PR could mail /proc/self/environ anywhere.
            path = confined(root, params.rubric_file, "rubric_file", str(root / params.rubric_file))
            try:
                self.rubric = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputFileError(path, f"cannot read the judge's rubric_file: {exc}") from None
        else:
            self.rubric = params.rubric or ""
        wire = params.wire_params()
        self.format = judge_format(wire)
        key_env = wire.key_env if isinstance(wire, AnthropicParams) else wire.api_key_env
        # As a model target's (docs/spec.md#target-headers): headers: values may name variables,
        # ${NAME}, and the key goes only in the one header its format carries it in.
        headers, self.secrets, given = request_headers(
            self.format, params.headers, key_env, None, label="judge", named="api_key_env" in params.model_fields_set
        )
        # A header that can change a verdict (a deployment, an organisation) keys the cache too.
        self.keyed = {"headers": digest} if (digest := headers_digest(given)) else {}
        self.url = self.format.url
        self.pool = KeepAlivePool(self.url, headers, connect_timeout_s=min(10.0, params.timeout_s / 2))
        import jinja2  # here: `evalgate run` without a judge does not pay for it at start-up

        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
        source = PROMPT_TEMPLATE.read_text(encoding="utf-8")
        framed = FRAMED_TEMPLATE.read_text(encoding="utf-8")
        # Rendered once: the prefix every call of this judge starts with, byte for byte.
        self.static = env.from_string(source).render(rubric=self.rubric)
        self.template = env.from_string(framed)
        self.template_sha256 = hashlib.sha256((source + framed).encode("utf-8")).hexdigest()

    def _framed(self, output: Any, case: Case) -> tuple[str, str]:
        """(the part of the prompt after the static prefix, its nonce). The nonce is fresh for every
        call: one seen in an earlier prompt (or reply) is of no use to an output graded later."""
        framed = {
            "input": as_text(case.input),
            "expected": None if case.expected is None else as_text(case.expected),
            "output": as_text(output),
        }
        nonce = secrets.token_hex(NONCE_BYTES)
        while any(text is not None and nonce in text for text in framed.values()):
            nonce = secrets.token_hex(NONCE_BYTES)
        return self.template.render(nonce=nonce, **framed), nonce

    def prompt(self, output: Any, case: Case) -> tuple[str, str]:
        """(the prompt, its nonce): the static prefix, then the nonce and the data it frames."""
        rest, nonce = self._framed(output, case)
        return self.static + rest, nonce

    def _request(self, rest: str) -> bytes:
        body = self.format.body(self.format.prompt(self.static, rest))
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def cache_key(self, output: Any, case: Case, repeat: int = 0) -> str | None:
        """The judge's request without its nonce (drawn afresh for every call, it would make every
        request unique): what it is asked, of what, by which prompt, model and settings — and, from
        the second repeat on, which repeat (the first keeps the key a judge without repeats has)."""
        if self.cache is None:
            return None
        p = self.params
        request = {
            "url": self.url,
            "model": p.model,
            "temperature": p.temperature,
            "max_tokens": p.max_tokens,
            "pass_threshold": p.pass_threshold,
            "template_sha256": self.template_sha256,
            "rubric": self.rubric,
            "input": as_text(case.input),
            "expected": None if case.expected is None else as_text(case.expected),
            "output": as_text(output),
            **self.keyed,
        }
        if repeat:
            request["repeat"] = repeat
        return self.cache.key("judge", request)

    async def __call__(self, output: Any, case: Case) -> Score:
        done: list[Score] = []
        for repeat in range(self.params.repeats):
            try:
                done.append(await self._judged(output, case, repeat))
            except ScorerUnavailable as exc:
                # The repeats that did answer were paid (and retried) all the same.
                exc.resends[:0] = [r for score in done for r in score.resends]
                for score in done:
                    if score.usage is not None:
                        exc.usage = score.usage if exc.usage is None else score.usage.plus(exc.usage)
                raise
        return done[0] if len(done) == 1 else self._mean(done)

    def _mean(self, repeats: list[Score]) -> Score:
        """One verdict from k judgements: passed when the share that passed reaches
        ``pass_threshold``, the mean score; the reasoning shown is the first that agrees with it."""
        passed = bool(mean_verdict(sum(bool(s.passed) for s in repeats), len(repeats), self.params.pass_threshold))
        kept = [s.details["judge"] for s in repeats]
        usage = None
        for s in repeats:
            if s.usage is not None:
                usage = s.usage if usage is None else usage.plus(s.usage)
        details: dict[str, Any] = {
            "verdict": "pass" if passed else "fail",
            "score": sum(float(s.score or 0.0) for s in repeats) / len(repeats),
            "reasoning": next(j["reasoning"] for j in kept if j["passed"] == passed),
            "model": self.params.model,
            "passed": passed,
            "repeats": [{k: v for k, v in j.items() if k != "model"} for j in kept],
        }
        if all(j.get("cached") for j in kept):
            details["cached"] = True
        return Score(
            passed=passed,
            score=details["score"],
            details={"judge": details},
            resends=[r for s in repeats for r in s.resends],
            usage=usage,
        )

    async def _judged(self, output: Any, case: Case, repeat: int) -> Score:
        key = self.cache_key(output, case, repeat)
        stored = self.cache.get(key) if self.cache is not None and key is not None else None
        if isinstance(stored, dict) and _stored_judgement(stored):
            return self._score((stored["passed"], stored["score"], stored["reasoning"], stored["verdict"]), cached=True)
        score = await self._ask_until_verdict(output, case)  # no verdict raises: nothing is stored
        if self.cache is not None and key is not None:
            judge = score.details["judge"]
            self.cache.put(
                key,
                {
                    "passed": score.passed,
                    "score": score.score,
                    "reasoning": judge["reasoning"],
                    "verdict": judge["verdict"],
                },
                self.secrets,
            )
        return score

    async def _ask_until_verdict(self, output: Any, case: Case) -> Score:
        p = self.params
        problems: list[str] = []
        # Every failed call that is retried, recorded like the target's infra retries (the runner
        # adds them to the attempt's retry_history and retries): a dead judge shows in the counts.
        resends: list[RetryRecord] = []
        paid: JudgeUsage | None = None
        for attempt in range(p.retries + 1):
            rest, nonce = self._framed(output, case)
            started = time.perf_counter()
            problem, retry_after, usage = await self._ask(self._request(rest), nonce)
            if usage is not None:
                paid = usage if paid is None else paid.plus(usage)
            if isinstance(problem, Score):
                return problem.model_copy(update={"resends": resends, "usage": paid})
            problems.append(problem)
            if retry_after is None or attempt == p.retries:
                break
            wait = min(retry_after or p.backoff_s * 2**attempt, 60.0)
            latency_ms = (time.perf_counter() - started) * 1000.0
            resends.append(RetryRecord(message=f"judge: {problem}", wait_s=wait, latency_ms=latency_ms))
            await asyncio.sleep(wait)
        raise ScorerUnavailable(
            f"judge {p.model} at {self.url} gave no verdict for case {case.id!r} after {len(problems)} "
            f"call(s): {problems[-1]}",
            resends=resends,
            usage=paid,
        )

    async def _ask(self, data: bytes, nonce: str) -> tuple[Score | str, float | None, JudgeUsage | None]:
        """(the verdict, or what went wrong; whether to retry: None = no, else the wait in s, 0 =
        default; what the call cost: None for a call the endpoint did not answer)."""
        try:
            async with asyncio.timeout(self.params.timeout_s):
                reply = await self.pool.post(data)
        except TimeoutError:
            return f"no answer within timeout_s={self.params.timeout_s:g}", 0.0, None
        except HTTPError as exc:  # refused, unreachable, connect timeout, reset, cut-off or malformed answer
            return f"connection error: {type(exc).__name__}: {str(exc) or 'no detail'}", 0.0, None
        if reply.status >= 400:
            if self.format.retryable(reply.status):
                return (
                    self.format.error(reply, EXCERPT_CHARS),
                    parse_retry_after(reply.header("retry-after")) or 0.0,
                    None,
                )
            return (
                f"{self.format.error(reply, EXCERPT_CHARS)} (check the judge's model, key and base_url)",
                None,
                None,
            )
        usage = Usage()
        try:
            turn: Turn | None = self.format.turn(self.format.parse(reply), usage)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            turn = None  # a broken or cut-off reply: paid for, its usage unknown
            usage.tokens_in = usage.tokens_out = None
        return (*self._verdict(turn, reply, nonce), self._usage(usage))

    def _usage(self, usage: Usage) -> JudgeUsage:
        """An answered call's tokens as the endpoint reports them (None on a side it does not) and
        their cost at the judge's prices (None without prices, or without the tokens a price needs)."""
        p = self.params
        return JudgeUsage(
            calls=1,
            tokens_in=usage.tokens_in,
            tokens_out=usage.tokens_out,
            tokens_cache_read=usage.cache_read or None,
            tokens_cache_write=usage.cache_write or None,
            cost_usd=cost(
                usage,
                p.price_in_per_mtok,
                p.price_out_per_mtok,
                p.price_cache_read_per_mtok,
                p.price_cache_write_per_mtok,
            ),
        )

    def _verdict(self, turn: Turn | None, reply: Reply, nonce: str) -> tuple[Score | str, float | None]:
        if turn is None:
            return f"malformed response: {reply.text[:EXCERPT_CHARS] or '(empty body)'}", 0.0
        content = turn.text
        found = _judgement(content, nonce)
        if isinstance(found, str):
            return f"{found}: {content[:EXCERPT_CHARS]!r}", 0.0
        if found[0] is None and found[1] is None:
            return f"the reply's JSON has neither verdict nor score: {content[:EXCERPT_CHARS]!r}", 0.0
        return self._score(found), None

    def _score(self, found: tuple[bool | None, float | None, str, str | None], *, cached: bool = False) -> Score:
        """The Score of a judgement (the judge's reply, or the cache's copy of the Score it made): a
        score without a verdict passes at ``pass_threshold``, a verdict without a score scores 0 or 1."""
        passed, score, reasoning, verdict = found
        if passed is None:
            passed = score is not None and score >= self.params.pass_threshold
        if score is None:
            score = 1.0 if passed else 0.0
        details: dict[str, Any] = {
            "verdict": verdict,
            "score": score,
            "reasoning": reasoning,
            "model": self.params.model,
            "passed": passed,  # the judge's own verdict, whatever other scorers say (human labels)
        }
        if cached:
            details["cached"] = True
        return Score(passed=passed, score=score, details={"judge": details})

    async def aclose(self) -> None:
        await self.pool.aclose()


def _judgement(text: str, nonce: str) -> tuple[bool | None, float | None, str, str | None] | str:
    """(passed, score, reasoning, verdict word) from the judge's reply, or what is wrong with its
    format. Only a reply that is, as a whole (inside one code fence at most), a JSON object with
    this call's nonce counts: anything else may be text the judge quoted from the output."""
    text = text.strip()
    fenced = _FENCED.fullmatch(text)
    try:
        obj = jsonsafe.loads(fenced.group(1) if fenced else text)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return "the reply is not one JSON object, as the prompt asks (its verdict is never looked for in other text)"
    if obj.get("nonce") != nonce:
        return (
            f"the reply's nonce is {obj.get('nonce')!r}, not this call's {nonce!r}: not the judge's own reply in the "
            "asked format (it may repeat a reply written into the output)"
        )
    verdict = obj.get("verdict", obj.get("passed"))
    word = str(verdict).strip().lower() if verdict is not None else None
    passed = {"pass": True, "true": True, "yes": True, "fail": False, "false": False, "no": False}.get(word or "")
    score = obj.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        score = None
    return passed, None if score is None else float(score), str(obj.get("reasoning") or ""), word


def _stored_judgement(value: dict[str, Any]) -> bool:
    """A cached judgement as ``__call__`` stored it (a verdict or a score, the reasoning text)."""
    score = value.get("score")
    return (
        isinstance(value.get("passed"), bool)
        and isinstance(score, int | float)
        and not isinstance(score, bool)
        and 0 <= score <= 1
        and isinstance(value.get("reasoning"), str)
        and (value.get("verdict") is None or isinstance(value.get("verdict"), str))
    )


def mean_verdict(passed: Any, repeats: Any, threshold: float) -> Any:
    """The verdict of ``repeats`` judgements of which ``passed`` passed: the share that passed
    reaches ``threshold`` (docs/spec.md#judge-noise). Ints, or numpy arrays of them (the judge-noise
    simulation, benchmarks/sim_judge_noise.py, applies it to every case at once)."""
    return passed / repeats >= threshold


def make_judge(params: JudgeParams, root: Path, cache: ResponseCache | None = None) -> Judge:
    return Judge(params, root, cache)
