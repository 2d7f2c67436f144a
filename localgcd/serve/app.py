"""The HTTP side: OpenAI's endpoints as a Starlette app over an :class:`~localgcd.serve.engine.Engine`.

``POST /v1/chat/completions``, ``POST /v1/completions``, ``GET /v1/models``,
``GET /health`` (slots busy and waiting, no key needed).  Every error is
OpenAI's error object; a request is refused (4xx) before any of its text is
sent, and a client that goes away (its connection closed) has its slot freed
at the next decode step.  Streaming is server-sent events: chunks with a
``delta``, then ``data: [DONE]``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from localgcd.llama.decoding import Sequence
from localgcd.serve.engine import Engine, Event, Job, call_made, server_error
from localgcd.serve.parts import split_reply, visible
from localgcd.serve.requests import CHAT, COMPLETIONS, CompletionRequest, InvalidRequest, parse_request
from localgcd.serve.tools import parse_tool_call


class ClientGone(Exception):
    """The client closed its connection before its reply was ready."""


def create_app(engine: Engine, model_name: str, api_key: str | None = None) -> Starlette:
    """The app serving ``engine``'s model as ``model_name``; with ``api_key``, /v1 needs ``Authorization: Bearer KEY``."""
    created = int(time.time())

    def authorize(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("authorization", "")
        if not given.startswith("Bearer "):
            raise InvalidRequest("missing API key: send the header 'Authorization: Bearer KEY'", None,
                                 "invalid_api_key", 401)
        if not secrets.compare_digest(given[len("Bearer "):].encode(), api_key.encode()):
            raise InvalidRequest("incorrect API key", None, "invalid_api_key", 401)

    async def models(request: Request) -> Response:
        authorize(request)
        return JSONResponse({"object": "list", "data": [{"id": model_name, "object": "model", "created": created,
                                                         "owned_by": "localgcd"}]})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": model_name, **engine.stats()})

    async def completions(request: Request, endpoint: str) -> Response:
        authorize(request)
        raw = await request.body()
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            what = f"{exc.msg} (line {exc.lineno}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) \
                else "not UTF-8" if isinstance(exc, UnicodeDecodeError) else "nested too deeply"
            raise InvalidRequest(f"the request body is not valid JSON: {what}", None, "invalid_json") from None
        req = parse_request(body, endpoint)
        if req.model != model_name:
            raise InvalidRequest(f"model {req.model!r} is not served here (this server serves {model_name!r})",
                                 "/model", "model_not_found", 404)
        job = Job(req, asyncio.get_running_loop())
        engine.submit(job)
        gone = asyncio.ensure_future(_disconnected(request))
        handed_on = False
        try:
            first = await _next(job, gone)
            if first.kind == "error":
                raise first.error  # type: ignore[misc]
            if req.stream:
                handed_on = True
                return StreamingResponse(_stream(engine, job, gone, model_name), media_type="text/event-stream",
                                         headers={"Cache-Control": "no-cache"})
            while (event := await _next(job, gone)).kind == "delta":
                pass
            if event.kind == "error":
                raise event.error  # type: ignore[misc]
            return JSONResponse(_reply(job, event.seq, model_name))  # type: ignore[arg-type]
        except ClientGone:
            return Response(status_code=499)
        finally:
            if not handed_on:
                gone.cancel()
                if not job.over:
                    engine.cancel(job)

    async def chat(request: Request) -> Response:
        return await completions(request, CHAT)

    async def complete(request: Request) -> Response:
        return await completions(request, COMPLETIONS)

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, InvalidRequest)
        return JSONResponse(exc.body(), status_code=exc.status)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = f"{request.method} {request.url.path}: {exc.detail}"
        return JSONResponse(InvalidRequest(message, None, code, exc.status_code).body(), status_code=exc.status_code)

    async def crashed(request: Request, exc: Exception) -> Response:
        return JSONResponse(server_error(exc).body(), status_code=500)

    routes = [Route("/v1/chat/completions", chat, methods=["POST"]),
              Route("/v1/completions", complete, methods=["POST"]),
              Route("/v1/models", models, methods=["GET"]),
              Route("/health", health, methods=["GET"])]
    return Starlette(routes=routes, exception_handlers={InvalidRequest: refused, HTTPException: http_error,
                                                        Exception: crashed})


async def _disconnected(request: Request) -> None:
    """Returns when the client closes the connection (the body is read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _next(job: Job, gone: asyncio.Future[None]) -> Event:
    """The job's next event, or ClientGone."""
    get = asyncio.ensure_future(job.events.get())
    await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
    if not get.done():
        get.cancel()
        raise ClientGone
    return get.result()


async def _stream(engine: Engine, job: Job, gone: asyncio.Future[None], model_name: str) -> AsyncIterator[str]:
    req = job.request
    rid, created = _id(req), int(time.time())

    def chunk(delta: dict[str, Any] | str | None, finish: str | None = None, usage: dict | None = None) -> str:
        if req.endpoint == CHAT:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
            obj: dict[str, Any] = {"id": rid, "object": "chat.completion.chunk", "created": created,
                                   "model": model_name, "choices": choices}
        else:
            choices = [] if delta is None else [{"index": 0, "text": delta, "logprobs": None, "finish_reason": finish}]
            obj = {"id": rid, "object": "text_completion", "created": created, "model": model_name,
                   "choices": choices}
        if usage is not None:
            obj["usage"] = usage
        return "data: " + json.dumps(obj, ensure_ascii=False) + "\n\n"

    try:
        if req.endpoint == CHAT:
            yield chunk({"role": "assistant", "content": ""})
        while (event := await _next(job, gone)).kind == "delta":
            yield chunk({event.field: event.text} if req.endpoint == CHAT else event.text)
        if event.kind == "error":  # after the headers: the error object as the last event
            yield "data: " + json.dumps(event.error.body()) + "\n\n"  # type: ignore[union-attr]
        else:
            seq = event.seq
            assert seq is not None
            message = _message(job, seq)
            if req.endpoint == CHAT and message.get("tool_calls"):
                calls = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
                yield chunk({"tool_calls": calls})
            yield chunk({} if req.endpoint == CHAT else "", _finish_reason(seq, message))
            if req.include_usage:
                yield chunk(None, usage=_usage(seq))
        yield "data: [DONE]\n\n"
    except ClientGone:
        return
    finally:
        gone.cancel()
        if not job.over:
            engine.cancel(job)


def _message(job: Job, seq: Sequence) -> dict[str, Any]:
    req = job.request
    if req.tool_call and call_made(seq):
        return {"role": "assistant", "content": None, "tool_calls": parse_tool_call(seq.text)}
    if job.layout is None:
        return {"role": "assistant", "content": seq.text}
    raw = bytes(seq.raw)
    parts = split_reply(job.layout, raw, seq.tokens, final=True)
    reasoning, content = visible(parts, req.reasoning_format == "none")
    message: dict[str, Any] = {"role": "assistant", "content": _text(raw, content)}
    if reasoning is not None:
        message["reasoning_content"] = _text(raw, reasoning)
    if parts.call is not None:
        if call_made(seq):
            message["tool_calls"] = parse_tool_call(_text(raw, parts.call))
            message["content"] = message["content"] or None
        else:  # a call cut off by a limit: its text is the content's end
            message["content"] = _text(raw, (content[0], len(raw)))
    return message


def _text(raw: bytes, span: tuple[int, int]) -> str:
    return raw[span[0]:span[1]].decode("utf-8", errors="replace")


def _finish_reason(seq: Sequence, message: dict[str, Any]) -> str:
    return "tool_calls" if message.get("tool_calls") else seq.finish_reason


def _usage(seq: Sequence) -> dict[str, int]:
    return {"prompt_tokens": len(seq.prompt), "completion_tokens": len(seq.tokens),
            "total_tokens": len(seq.prompt) + len(seq.tokens)}


def _reply(job: Job, seq: Sequence, model_name: str) -> dict[str, Any]:
    req = job.request
    extra = {"localgcd": {"complete": seq.complete, "stop_reason": seq.stop_reason, "seed": seq.sampling.seed}}
    if req.endpoint == CHAT:
        message = _message(job, seq)
        choice = {"index": 0, "message": message, "logprobs": None,
                  "finish_reason": _finish_reason(seq, message)}
        return {"id": _id(req), "object": "chat.completion", "created": int(time.time()), "model": model_name,
                "choices": [choice], "usage": _usage(seq), "system_fingerprint": None, **extra}
    choice = {"index": 0, "text": seq.text, "logprobs": None, "finish_reason": seq.finish_reason}
    return {"id": _id(req), "object": "text_completion", "created": int(time.time()), "model": model_name,
            "choices": [choice], "usage": _usage(seq), **extra}


def _id(req: CompletionRequest) -> str:
    return ("chatcmpl-" if req.endpoint == CHAT else "cmpl-") + secrets.token_hex(12)
