"""Continuous batching: one decode thread owns llama.cpp; requests join and leave between steps.

The :class:`Engine`'s thread runs a :class:`~localgcd.llama.decoding.BatchDecoder`
(``parallel`` slots, masks filled together and overlapped with the decode)
and is the only thread that touches llama.cpp, the matchers and the compiled
grammars.  The asyncio side talks to it through two queues: :meth:`Engine.submit`
and :meth:`Engine.cancel` go in (under one condition variable); each
:class:`Job`'s ``events`` (an ``asyncio.Queue``, fed with
``call_soon_threadsafe``) come out: ``started`` or ``error``, then for a
streamed request ``delta`` pieces, then ``done``.  Between two decode steps
the thread takes cancellations (a client gone: its slot is free for the next
step), admits waiting requests into free slots (compiling their constraint:
once per distinct constraint, the matchers' worker settled first; tokenizing
their prompt), then steps.  A request the model cannot run (its constraint
does not compile, its prompt does not fit) gets ``error`` before any text.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import secrets
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from localgcd.llama.decoding import BatchDecoder, Sampling, Sequence
from localgcd.compiler.constraints import Constraint, compile_constraint
from localgcd.errors import GrammarError, LocalgcdError
from localgcd.llama.chat import chat_template, chat_tokens, prompt_tokens
from localgcd.llama.loading import LoadedModel
from localgcd.llama.triggers import model_trigger
from localgcd.runtime.triggered import Trigger, TriggeredGrammar, TriggerTables
from localgcd.serve.parts import ReplyLayout, split_reply, visible
from localgcd.serve.requests import CHAT, CompletionRequest, InvalidRequest
from localgcd.serve.tools import TOOL_CALL_OPENER, tool_prompt

#: A request without a constraint: any text (the same masks, so the same code path, as every other).
FREE_TEXT = Constraint("regex", "(?s:.*)")
COMPILED_KEPT = 64  # distinct constraints kept compiled in memory (the on-disk cache keeps them all)


@dataclass(frozen=True)
class Event:
    """One message from the decode thread to a request: ``kind`` is started, delta, done or error."""

    kind: str
    text: str = ""
    seq: Sequence | None = None
    error: InvalidRequest | None = None
    field: str = "content"  # a delta's: content or reasoning_content


class Job:
    """One request's channel to the decode thread (made, and read, on the event loop)."""

    def __init__(self, request: CompletionRequest, loop: asyncio.AbstractEventLoop) -> None:
        self.request, self.loop = request, loop
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.seq: Sequence | None = None
        self.over = False  # done or error posted (set by the decode thread)
        self.sent = 0  # bytes of the text posted as deltas
        self.utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        #: the triggers the reply is generated under (None: none), set when admitted
        self.layout: ReplyLayout | None = None
        self.sent_reasoning = 0
        self.utf8_reasoning = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = request.sampling.stop
        # a streamed piece could be the start of a stop string: that many bytes wait for the next step
        self.holdback = max((len(s.encode("utf-8")) for s in stops), default=1) - 1

    def post(self, event: Event) -> None:
        if event.kind in ("done", "error"):
            self.over = True
        self.loop.call_soon_threadsafe(self.events.put_nowait, event)


class Engine:
    """The decode thread and its batch decoder over ``model`` (see the module docstring)."""

    def __init__(self, model: LoadedModel, parallel: int = 1, *, n_ctx: int | None = None,
                 n_threads: int | None = None, cache_dir: Any = None, overlap: bool = True) -> None:
        self.model, self.cache_dir = model, cache_dir
        self.decoder = BatchDecoder(model, parallel, n_ctx=n_ctx, n_threads=n_threads, overlap=overlap)
        self.n_ctx = self.decoder.n_ctx
        self._template = chat_template(model.llama)  # /v1/chat/completions: the GGUF's, whatever models.toml says
        self._lock = threading.Condition()
        self._inbox: deque[Job] = deque()
        self._cancels: list[Job] = []
        self._waiting: deque[Job] = deque()
        self._compiled: OrderedDict[str, Any] = OrderedDict()
        self._trigger_tables: dict[bytes, TriggerTables] = {}
        self._stopping = False
        #: counters, read by /health (ints: read whole from any thread)
        self.busy = 0
        self.completed = self.cancelled = self.refused = self.failed = 0
        self._thread = threading.Thread(target=self._run, name="localgcd-decode", daemon=True)
        self._thread.start()

    # -- the event loop's side ----------------------------------------------------

    def submit(self, job: Job) -> None:
        with self._lock:
            self._inbox.append(job)
            self._lock.notify()

    def cancel(self, job: Job) -> None:
        """The client is gone: free the job's slot (or its place in the queue) before the next step."""
        with self._lock:
            self._cancels.append(job)
            self._lock.notify()

    def stats(self) -> dict[str, int]:
        with self._lock:
            waiting = len(self._inbox) + len(self._waiting)
        return {"slots": self.decoder.n_parallel, "busy": self.busy, "waiting": waiting,
                "completed": self.completed, "cancelled": self.cancelled, "refused": self.refused,
                "failed": self.failed}

    def close(self) -> None:
        with self._lock:
            self._stopping = True
            self._lock.notify()
        self._thread.join()
        self.decoder.close()

    # -- the decode thread ----------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._lock:
                while not (self._stopping or self._inbox or self._cancels or self._waiting or self.decoder.active):
                    self._lock.wait()
                if self._stopping:
                    break
                self._waiting.extend(self._inbox)
                self._inbox.clear()
                cancels, self._cancels = self._cancels, []
            try:
                for job in cancels:
                    self._cancel(job)
                while self._waiting and self.decoder.free_slots:
                    job = self._waiting.popleft()
                    try:
                        self._admit(job)
                    except Exception as exc:  # a bug while admitting: this request fails (500), not hangs
                        if not job.over:
                            self.failed += 1
                            job.post(Event("error", error=server_error(exc)))
                        raise
                if self.decoder.active:
                    self._post(self.decoder.step())
            except Exception as exc:  # a bug: the running requests fail (500), the server goes on
                self._fail_running(exc)
            self.busy = self.decoder.active
        for job in [*self._waiting, *self._inbox]:
            job.post(Event("error", error=InvalidRequest("the server is shutting down", None, "shutting_down", 503,
                                                         "server_error")))

    def _cancel(self, job: Job) -> None:
        if job in self._waiting:
            self._waiting.remove(job)
        elif job.seq is not None and any(s is job.seq for s in self.decoder.slots):
            self._post(self.decoder.cancel(job.seq))
        else:
            return
        job.over = True
        self.cancelled += 1
        self.busy = self.decoder.active

    def _admit(self, job: Job) -> None:
        req = job.request
        try:
            layout = self._layout(req)
            compiled = self._compile(req, layout)
            prompt = self._prompt(req)
        except InvalidRequest as exc:
            self.refused += 1
            job.post(Event("error", error=exc))
            return
        s = req.sampling
        seed = secrets.randbits(31) if s.seed is None else s.seed
        seq = Sequence(tag=job, prompt=prompt, compiled=compiled, max_tokens=s.max_tokens or self.n_ctx,
                       sampling=Sampling(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, min_p=s.min_p,
                                         repeat_penalty=s.repeat_penalty, seed=seed),
                       stop=s.stop)
        job.seq = seq
        job.layout = layout
        job.post(Event("started"))
        done = self.decoder.start(seq)
        if done is not None:
            self._post([done])

    def _layout(self, req: CompletionRequest) -> ReplyLayout | None:
        """The triggers of ``req``'s reply: the end of a reasoning section, a tool call's opener."""
        reasoning_end = req.reasoning_end if req.reasoning_end is not None else self.model.spec.reasoning_end
        if req.endpoint != CHAT or (reasoning_end is None and not req.tool_auto):
            return None
        try:
            reasoning = None if reasoning_end is None else model_trigger(self.model, reasoning_end)
            call = model_trigger(self.model, TOOL_CALL_OPENER, free_text_may_end=True) if req.tool_auto else None
        except LocalgcdError as exc:
            raise InvalidRequest(f"reasoning_end: {exc}", "/reasoning_end") from None
        return ReplyLayout(reasoning, call, self.model.vocab.token_bytes)

    def _compile(self, req: CompletionRequest, layout: ReplyLayout | None) -> Any:
        """The request's constraint, behind its triggers (a reasoning section, a tool call's opener)."""
        base = self._compile_constraint(req)
        if layout is None:
            return base
        key = (req.constraint or FREE_TEXT).key + f"\0{layout.reasoning}\0{layout.tool_call}"
        if key not in self._compiled:
            grammar = base
            for trigger in (layout.tool_call, layout.reasoning):  # the reasoning first, then a call or text
                if trigger is not None:
                    grammar = TriggeredGrammar(grammar, self.model.vocab, trigger, self._tables(trigger))
            self._remember(key, grammar)
        self._compiled.move_to_end(key)
        return self._compiled[key]

    def _tables(self, trigger: Trigger) -> TriggerTables | None:
        """A text trigger's tables over the model's vocabulary, made once for every constraint behind it."""
        if trigger.text is None:
            return None
        if trigger.text not in self._trigger_tables:
            self._trigger_tables[trigger.text] = TriggerTables(trigger.text, self.model.vocab)
        return self._trigger_tables[trigger.text]

    def _remember(self, key: str, compiled: Any) -> None:
        self._compiled[key] = compiled
        if len(self._compiled) > COMPILED_KEPT:
            self._compiled.popitem(last=False)

    def _compile_constraint(self, req: CompletionRequest) -> Any:
        constraint = req.constraint or FREE_TEXT
        key = constraint.key
        if key in self._compiled:
            self._compiled.move_to_end(key)
            return self._compiled[key]
        self._post(self.decoder.settle())  # compiling may fill tables the worker's step reads: that step first
        try:
            compiled = compile_constraint(constraint.kind, constraint.value, self.model.vocab, self.cache_dir)
        except LocalgcdError as exc:
            raise constraint_error(exc, req.constraint_at) from None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
            raise InvalidRequest(f"{req.constraint_at}: the compiler failed on this constraint "
                                 f"({type(exc).__name__}: {exc})", req.constraint_at, "invalid_constraint") from None
        self._remember(key, compiled)
        return compiled

    def _prompt(self, req: CompletionRequest) -> list[int]:
        try:
            if req.endpoint == CHAT:
                if self._template is None:
                    raise InvalidRequest(f"model {self.model.spec.name!r} has no chat template in its GGUF: use "
                                         "/v1/completions with a prompt", "/messages", "no_chat_template")
                messages = tool_prompt(list(req.messages), req.tools, self._template, req.tool_call, req.tool_auto)
                tools = [t.to_openai() for t in req.tools] or None
                tokens = chat_tokens(self.model, messages, template=self._template, tools=tools)
            else:
                tokens = prompt_tokens(self.model, req.prompt or "", chat=False)
        except LocalgcdError as exc:  # the chat template refused the messages (raise_exception)
            raise InvalidRequest(str(exc).removesuffix("; use --no-chat"),
                                 "/messages" if req.endpoint == CHAT else "/prompt") from None
        if len(tokens) >= self.n_ctx:
            raise InvalidRequest(f"the prompt is {len(tokens)} tokens and the context holds {self.n_ctx} "
                                 "(prompt + reply); shorten it", "/messages" if req.endpoint == CHAT else "/prompt",
                                 "context_length_exceeded")
        return tokens

    def _post(self, finished: list[Sequence]) -> None:
        """The ended sequences' last text and ``done``; the new text of the streamed ones still running."""
        self.busy = self.decoder.active  # counts first: a client that reads /health after its reply sees them
        for seq in finished:
            job: Job = seq.tag
            if job.request.stream and not job.request.tool_call:
                self._delta(job, seq, final=True)
            self.completed += 1
            job.post(Event("done", seq=seq))
        for seq in self.decoder.slots:
            if seq is not None and seq.tag.request.stream and not seq.tag.request.tool_call:
                self._delta(seq.tag, seq, final=False)

    @staticmethod
    def _delta(job: Job, seq: Sequence, final: bool) -> None:
        limit = len(seq.raw) if final else len(seq.raw) - job.holdback  # a stop string may follow
        if job.layout is None:
            content = (0, len(seq.raw))
        else:
            parts = split_reply(job.layout, bytes(seq.raw), seq.tokens, final)
            reasoning, content = visible(parts, job.request.reasoning_format == "none")
            if reasoning is not None:
                job.sent_reasoning = max(job.sent_reasoning, reasoning[0])
                end = max(job.sent_reasoning, min(reasoning[1], limit))
                text = job.utf8_reasoning.decode(bytes(seq.raw[job.sent_reasoning:end]), final=final)
                job.sent_reasoning = end
                if text:
                    job.post(Event("delta", text, field="reasoning_content"))
            if final and parts.call is not None and not call_made(seq):
                content = (content[0], len(seq.raw))  # a call cut off: its text is the content's end
        job.sent = max(job.sent, content[0])
        end = max(job.sent, min(content[1], limit))
        text = job.utf8.decode(bytes(seq.raw[job.sent:end]), final=final)
        job.sent = end
        if text:
            job.post(Event("delta", text))

    def _fail_running(self, exc: Exception) -> None:
        error = server_error(exc)
        for slot, seq in enumerate(self.decoder.slots):
            if seq is not None:
                try:
                    self.decoder.cancel(seq)
                except Exception:  # the worker's step that failed: the slot is freed all the same
                    self.decoder.slots[slot] = None
                self.failed += 1
                self.busy = self.decoder.active
                seq.tag.post(Event("error", error=error))


def call_made(seq: Sequence) -> bool:
    """The sequence ended with a whole tool call (not cut off by a limit)."""
    return seq.complete and seq.finish_reason == "stop"


def server_error(exc: Exception) -> InvalidRequest:
    """A bug's exception as OpenAI's 500 error object."""
    return InvalidRequest(f"internal error: {type(exc).__name__}: {exc}", None, "server_error", 500, "server_error")


def constraint_error(exc: LocalgcdError, at: str) -> InvalidRequest:
    """A compile error as a 400 naming the constraint's field, and inside a schema the keyword's pointer."""
    message, param = str(exc).splitlines()[0], at
    if isinstance(exc, GrammarError):
        message = exc.message
        inner = re.match(r"(/\S*): ", message)
        if inner:  # a JSON Schema's keyword: its pointer inside the schema
            param, message = at + inner.group(1).rstrip("/"), message[inner.end():]
        if exc.line is not None:
            message = f"line {exc.line}, column {exc.column}: {message}"
    return InvalidRequest(f"{param}: {message}", param, "invalid_constraint")
