"""``localgcd serve``: an OpenAI-compatible local server that never fails open.

``requests`` (JSON bodies → typed requests, or a 400 naming the field),
``tools`` (the tool-call envelope), ``engine`` (the decode thread: continuous
batching over :class:`~localgcd.llama.decoding.BatchDecoder`), ``app`` (the
Starlette app), ``server`` (load, start, run uvicorn).  The HTTP modules need
the ``serve`` extra (starlette, uvicorn); see docs/serve.md.
"""
