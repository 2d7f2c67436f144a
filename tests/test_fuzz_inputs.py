"""Mutated real grammars and schemas: every outcome is a compiled grammar or a one-line LocalgcdError.

Issue 34 found tracebacks with a run of 800 mutated inputs; this is that run,
bounded and repeatable: a seeded generator mutates each source (the grammars
shipped in grammars/, llama.cpp's GBNF grammars, a few MaskBench schemas) the
same way every time, and each mutant is compiled in a forked child under an
address-space and a time limit, for a small vocabulary, and asked for its
first mask.  A child that runs out of either is reported as a resource limit
(compile budgets are another module's business), never skipped.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import warnings
from pathlib import Path

import pytest

from localgcd.compiler.compiler import Compiler
from localgcd.errors import LocalgcdError
from localgcd.vocab import Vocabulary
from schema_support import MASKBENCH

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = MASKBENCH
MUTANTS_PER_SOURCE = 14
SECONDS_PER_MUTANT = 300  # a hang guard, far above any bounded compile even on a loaded machine (the verdict must not depend on load)
BYTES_PER_MUTANT = 3 << 30

#: what a user (or a fuzzer) types that the front ends must refuse cleanly
NASTY = ["/", "[", "]", "(", ")", "{5,2}", "{", "}", "?", "*", "+", "|", '"', "'", "\\", "\\U", "\\x", "\n", ":",
         "::=", "->", "%import .nowhere.X\n", "%import common.NOPE\n", "%declare FOO\n", "%ignore ", "~", "..",
         ".-1", "(?#c)", "[z-a]", "\ud800", "\x00", "\t", "start", "root", "_", "!", "#", "$", "-", "0", "1e999999"]
NASTY_VALUES = [float("nan"), float("inf"), 10 ** 400, -(10 ** 400), "\ud800", None, [], {}, True, -1, 0.5, "[",
                "(?<x>", 1e-300, {"$ref": "#/nowhere"}, {"$ref": "#"}, [[[[[[[[]]]]]]]], "a" * 300]


def sources() -> list[Path]:
    found = sorted((ROOT / "grammars").glob("*.lark"))
    found += [p for p in sorted((ROOT / "tests" / "corpus" / "gbnf").glob("*.gbnf")) if p.name != "c.gbnf"]
    found += sorted(SCHEMAS.glob("*.json"))[::80][:5] if SCHEMAS.is_dir() else []
    return found


def mutate_text(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        span = rng.randint(1, 8)
        op = rng.randrange(4)
        if op == 0:
            text = text[:at] + text[at + span:]
        elif op == 1:
            text = text[:at] + text[at:at + span] * rng.randint(2, 4) + text[at + span:]
        elif op == 2:
            text = text[:at] + rng.choice(NASTY) + text[at:]
        else:
            text = text[:at] + rng.choice(NASTY) + text[at + 1:]
    return text


def mutate_schema(schema: object, rng: random.Random) -> object:
    """A value somewhere in ``schema`` replaced by a nasty one (the schema is a fresh copy)."""
    nodes: list[tuple[object, object]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            nodes.append((node, key))
            stack.append(node[key])  # type: ignore[index]
    if nodes:
        parent, key = rng.choice(nodes)
        parent[key] = rng.choice(NASTY_VALUES)  # type: ignore[index]
    return schema


def mutants(path: Path) -> list[tuple[str, str]]:
    """(format, text) of each mutant of ``path``: the same every run (seeded by the file's name)."""
    rng = random.Random(f"issue34:{path.name}")
    text = path.read_text()
    fmt = {".lark": "lark", ".gbnf": "gbnf", ".json": "json_schema"}[path.suffix]
    out = []
    for i in range(MUTANTS_PER_SOURCE):
        if fmt == "json_schema" and i % 2:
            out.append((fmt, json.dumps(mutate_schema(json.loads(text), rng), ensure_ascii=False)))
        else:
            out.append((fmt, mutate_text(text, rng)))
    return out


VOCAB = Vocabulary.from_tokens([bytes([b]) for b in range(32, 127)] + [b"\n", b"\t", b"  ", b"{\"", b"\":", b"",
                                                                          "é".encode(), b"\xe2\x80"],
                               end_ids=[102], name="fuzz")


def _address_space() -> int:
    """Bytes of address space this process has mapped now (what earlier tests in the same worker loaded)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def outcome(fmt: str, text: str, source: str) -> str:
    """Compile in a forked child under the limits: ``ok``, ``error: MESSAGE`` or what went wrong."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report one line, and exit without running the parent's cleanups
        os.close(read)
        try:
            limit = _address_space() + BYTES_PER_MUTANT  # what the worker had mapped before (models, vocabularies) does not count
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.alarm(SECONDS_PER_MUTANT)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = Compiler(use_cache=False).compile(text, VOCAB, fmt, source=source)
                compiled.matcher().allowed_token_mask()
            report = "ok"
        except LocalgcdError as exc:
            report = "error: " + str(exc)
        except MemoryError:
            report = f"resource limit: more than {BYTES_PER_MUTANT >> 30} GiB of address space of its own"
        except BaseException as exc:  # noqa: BLE001 - the finding this test exists for
            report = f"escaped: {type(exc).__name__}: {exc}"
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        signal_name = signal.Signals(os.WTERMSIG(status)).name
        limit = f" (over {SECONDS_PER_MUTANT} s)" if os.WTERMSIG(status) == signal.SIGALRM else ""
        return f"resource limit: killed by {signal_name}{limit}"
    return json.loads(data)


@pytest.mark.parametrize("path", sources(), ids=lambda p: p.name)
def test_every_mutant_compiles_or_is_a_one_line_localgcd_error(path: Path) -> None:
    bad = []
    for i, (fmt, text) in enumerate(mutants(path)):
        got = outcome(fmt, text, str(path))
        if got == "ok" or (got.startswith("error: ") and "\n" not in got and got.isprintable()):
            continue
        bad.append(f"mutant {i} of {path.name}: {got!r} for {text[:300]!r}")
    assert not bad, "\n".join(bad)
