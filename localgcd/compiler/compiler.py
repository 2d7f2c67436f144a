"""The Compiler: grammar text + vocabulary → a :class:`CompiledGrammar`, cached on disk.

The pipeline flows one way: grammar front end → lexer automaton → lexing
transducer → token spanner (over the vocabulary trie) → parser tables → the
Alg. 5 status table for small grammars.  A :class:`Compiler` owns the
configuration (cache directory or none, limits, memory budgets) and the
per-vocabulary trie memo; :func:`compile_grammar` is the one-line
convenience over a default compiler.
"""

from __future__ import annotations

from dataclasses import replace

import contextlib
import functools
import gc
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from localgcd.compiler.compiled import TABLE_FORMAT_VERSION, CompiledGrammar
from localgcd.compiler.store import TRIE_PREFIX, TableStore
from localgcd.budget import CompileBudget
from localgcd.compiler.writeback import LazyEntry
from localgcd.compile_warnings import grammar_warning, kept_warnings, say
from localgcd.errors import CompileBudgetError, GrammarError
from localgcd.grammar.formats import EARLEY_LEXERS, LEXERS, check_format, declared_lexer, to_grammar
from localgcd.grammar.indenter import IndenterOptions
from localgcd.compiler.terminal_follows import layout_terminals, parser_moves, terminal_follows
from localgcd.lexer.automaton import build_lexer
from localgcd.lexer.scan_order import read_in_lark_order
from localgcd.lexer.adjacency import LAYOUT_BLANKS
from localgcd.lexer.pending import window_bytes
from localgcd.parser.lalr import build_parse_tables
from localgcd.regex.priority import backs_up
from localgcd.paths import cache_dir as default_cache_dir
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.token_spanner import build_token_spanner
from localgcd.spanner.trie import VocabTrie
from localgcd.tuning import Tuning
from localgcd.vocab import Vocabulary

TRIE_FORMAT_VERSION = 2  # 2: the trie's flat nodes (what the compiled walks read) kept with it


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a grammar compiles (and back on after, if it was
    on).  A big schema's compile makes about a million tuples, lists and dicts, which live as long
    as the grammar or die by reference count; the collector's passes over them free nothing, and
    cost 5 to 10% of a Kubernetes schema's compile."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Compiler:
    """Compiles grammars for vocabularies; owns the cache and the configuration.

    ``cache_dir``: the cache root (``None``: ``$LOCALGCD_CACHE`` or the user
    cache dir); ``use_cache=False`` keeps everything in memory.

    Lazy is the default, with the cache on or off: a compile builds the
    grammar, the lexer and the parse tables, and a lexer state's spanner row
    and the Alg. 5 statuses of its outcomes are built on the state's first
    visit, so the first mask waits for one row instead of all (with an
    Indenter too: an outcome's layout facts are made with its row).  With the cache on, what was built is
    merged into the grammar's cache entry when it and its matchers are
    released, at exit, or on :meth:`CompiledGrammar.flush` (:mod:`localgcd.compiler.writeback`),
    never while a mask waits; a grammar seen before starts with the rows it
    built before.  ``eager=True`` builds every row (and runs Alg. 5 when
    parser states × outcomes is at most ``eager_status_limit``) before it
    returns and writes that entry at once: for fixed grammars wanted ready
    ahead (``localgcd compile --full``).  Even then a lexer with more than
    ``eager_lexer_limit`` states (a JSON Schema's patterns tracked through
    long strings: tens of thousands) is spanned lazily: its whole spanner
    would take minutes.  ``token_mask_budget``: bytes of memoized token masks
    per compiled grammar.  ``budget``: the bounds on one compile (automaton
    states, table memory, time; :class:`~localgcd.budget.CompileBudget`) — a
    grammar that outgrows them is a :class:`~localgcd.errors.CompileBudgetError`
    naming the construct.  ``tuning``: the pipeline's thresholds and switches
    (:class:`~localgcd.tuning.Tuning`), passed to every stage; its switches
    (:meth:`Tuning.table_key`) are part of the cache key, its speed thresholds
    are not (they build the same tables).
    """

    def __init__(self, cache_dir: str | Path | None = None, *, use_cache: bool = True, eager: bool = False,
                 eager_status_limit: int = 2_000_000, token_mask_budget: int = 64 << 20,
                 eager_lexer_limit: int = 8192, budget: CompileBudget = CompileBudget(),
                 tuning: Tuning = Tuning()) -> None:
        self.budget = budget
        self.tuning = tuning
        self.cache_root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.use_cache = use_cache
        self.eager = eager
        self.eager_status_limit = eager_status_limit
        self.eager_lexer_limit = eager_lexer_limit
        self.token_mask_budget = token_mask_budget
        self.store = TableStore(self.cache_root / "tables")
        self._tries: dict[str, VocabTrie] = {}

    def __repr__(self) -> str:
        where = str(self.cache_root) if self.use_cache else "memory only"
        return f"Compiler(cache={where!r})"

    def compile(self, text: str, vocab: Vocabulary, fmt: str = "lark", source: str = "<grammar>",
                strict: bool = False, indenter: IndenterOptions | None = None,
                base_dir: str | Path | None = None, parser: str = "lalr", lexer: str | None = None, *,
                lenient: bool = False, document: Any = None, **options: Any) -> CompiledGrammar:
        """Compile grammar ``text`` for ``vocab``, from the cache when it holds it.

        ``strict=True`` makes every LALR conflict an error instead of resolving
        it as lark does.  ``lexer`` (Lark grammars): ``"contextual"`` (lexed as
        ``Lark(g, parser="lalr")``'s default contextual lexer does, where that is exact:
        :mod:`localgcd.compiler.contextual`; the default with ``parser="lalr"``), ``"basic"`` (one
        longest-match lexer over every terminal, where a keyword is never a name), ``"dynamic"``
        (lark's default with ``parser="earley"``: a terminal is ``re.match``ed wherever the parse
        expects it, translated as GBNF is where that is exact: :mod:`localgcd.grammar.lark_dynamic`)
        or ``"dynamic_complete"`` (with ``parser="earley"`` too: every prefix of that lexeme as well,
        :mod:`localgcd.grammar.lark_dynamic_complete`);
        ``None``: the grammar's own declaration (``// localgcd: lexer=basic``, as the shipped
        grammars say), else lark's default for ``parser``.  ``base_dir``: the folder a Lark text's relative
        ``%import .x`` reads from (a grammar whose ``source`` is a file uses
        that file's folder; text without ``base_dir`` may import lark's library
        only).  ``parser`` (Lark grammars): ``"lalr"`` — lark's LALR parser's language, conflicts
        resolved as lark resolves them —, or ``"earley"`` — the whole context-free language (every
        conflict kept, every parse followed: :mod:`localgcd.parser.glr`), with lark's ``dynamic``
        lexer by default or its ``basic`` one (``lexer="basic"``).  GBNF grammars always mean the
        whole language (deterministic tables when they are LALR(1)).  ``document``: the JSON Schema
        ``text`` spells, when the caller holds it parsed (the front end reads it instead of the text;
        the text stays the cache key).  Raises :class:`GrammarError` for invalid or unsupported grammars.
        ``lenient`` (a Lark grammar or a JSON Schema): what localgcd cannot enforce exactly there is a
        :class:`GrammarWarning` naming it instead of that error — a JSON Schema keyword it drops, a Lark
        grammar's terminal that lark's lexer backs up to where localgcd's does not (the compiled grammar
        then refuses texts lark accepts: README, "Lexing semantics"); a lenient compile has its own cache
        entry.  The warnings a build says (those, a resolved conflict's) are kept with what it compiled
        (:attr:`CompiledGrammar.warnings`, and in its cache entry): loaded from the cache, it says them again.
        """
        check_format(fmt, source)
        check_parser(parser, fmt, source)
        lexer = default_lexer(parser, fmt, text, source) if lexer is None else lexer
        check_lexer(lexer, source)
        if lenient and fmt not in ("lark", "json_schema"):
            raise GrammarError(f"lenient=True applies to a Lark grammar or a JSON Schema, not to {fmt} (whose "
                               "constraints are all enforced exactly)", source)
        if lexer != "basic" and fmt != "lark":
            raise GrammarError(f"lexer={lexer!r} applies to a Lark grammar only, not to {fmt}", source)
        wanted = "earley" if lexer in EARLEY_LEXERS else "lalr"
        if lexer != "basic" and parser != wanted:
            raise GrammarError(f"lexer={lexer!r} is lark's lexer for parser={wanted!r}, not for parser={parser!r}",
                               source)
        where = () if base_dir is None else (f"base_dir={Path(base_dir).resolve()}",)
        tuned = (self.tuning.table_key(),) if self.tuning.table_key() else ()  # (defaults: the key it always had)
        general = (f"parser={parser}",) if parser != "lalr" else ()  # (lalr: the key it always had)
        lexed = (f"lexer={lexer}",) if lexer != "basic" else ()  # (basic: the key it always had)
        # what GBNF's token elements (<|im_start|>) name: the special tokens' own text (no text token's)
        named = (f"specials={vocab.special_digest}",) if fmt == "gbnf" and vocab.special_digest else ()
        lenient_key = ("lenient=True",) if lenient else ()  # (strict, the default: the key it always had)
        key = _cache_key(fmt, text, vocab.fingerprint, f"strict={strict}", repr(indenter), repr(sorted(options.items())),
                         *where, *tuned, *general, *lexed, *named, *lenient_key)
        if self.use_cache:
            started = time.perf_counter()
            with _collector_paused():  # (as a build is: a load makes only objects that live with the grammar)
                entry = self.store.read(key, key, TABLE_FORMAT_VERSION, CompiledGrammar.DEFERRED_ARRAYS)
                loaded = entry is not None and (not self.eager or CompiledGrammar.is_built_ahead(entry[0]))
                if loaded:
                    trie = self.vocabulary_trie(vocab) if CompiledGrammar.spans_lazily(entry[0]) else None
                    compiled = CompiledGrammar.from_arrays(*entry, vocab.token_bytes, _end_ids(vocab), source, trie,
                                                           self.tuning)
            if loaded:
                compiled.token_mask_budget = self.token_mask_budget
                compiled.timings["cache_load"] = time.perf_counter() - started
                say(compiled.warnings, source)  # (what its build said, in the same words)
                if isinstance(compiled.spanner, LazyTokenSpanner):
                    LazyEntry(self.store, key, TABLE_FORMAT_VERSION, compiled, loaded=True)
                return compiled
            unusable = entry is None and self.store.path(key).is_file()  # (corrupt: said so; rewritten now)
        compiled = self.build(text, vocab, source, strict, indenter, fmt, lazy=not self.eager,
                              base_dir=base_dir, parser=parser, lexer=lexer, lenient=lenient, document=document,
                              **options)
        if self.use_cache:
            written = compiled.built_ahead or unusable or not isinstance(compiled.spanner, LazyTokenSpanner)
            if written:
                self.store.write(key, key, TABLE_FORMAT_VERSION, *compiled.to_arrays())
            if isinstance(compiled.spanner, LazyTokenSpanner):  # written back as it is used
                LazyEntry(self.store, key, TABLE_FORMAT_VERSION, compiled, loaded=written)
        return compiled

    def build(self, text: str, vocab: Vocabulary, source: str = "<grammar>", strict: bool = False,
              indenter: IndenterOptions | None = None, fmt: str = "lark", *, lazy: bool = False,
              base_dir: str | Path | None = None, parser: str = "lalr", lexer: str | None = None,
              lenient: bool = False, document: Any = None, **options: Any) -> CompiledGrammar:
        """Run the whole pipeline (the vocabulary trie may come from the cache).

        ``lazy``: spanner rows and Alg. 5 statuses are left to the first
        visits; else every row is built
        now (but for a lexer above ``eager_lexer_limit``).  ``lenient``: as :meth:`compile` takes it.
        """
        lexer = default_lexer(parser, fmt, text, source) if lexer is None else lexer
        with _collector_paused(), kept_warnings() as said:
            try:
                compiled = self._build(text, vocab, source, strict, indenter, fmt, lazy, base_dir, parser, lexer,
                                       document, lenient, **options)
            except CompileBudgetError as exc:
                if exc.source is not None:
                    raise
                raise CompileBudgetError(exc.message, source) from None  # a stage that knows no place
            finally:  # (said at the user's call, before an error that ends the build too)
                say(said, source)
        compiled.warnings = tuple(said)  # (part of what it compiled: its cache entry says them again)
        return compiled

    def _build(self, text: str, vocab: Vocabulary, source: str, strict: bool, indenter: IndenterOptions | None,
               fmt: str, lazy: bool, base_dir: str | Path | None = None, parser: str = "lalr",
               lexer_kind: str = "basic", document: Any = None, lenient: bool = False,
               **options: Any) -> CompiledGrammar:
        t0 = time.perf_counter()
        meter = self.budget.meter()
        if fmt == "json_schema":  # (the front end drops a keyword with a warning)
            options = {**options, "lenient": lenient}
        grammar = to_grammar(text, fmt, source, meter, self.tuning, indenter, base_dir, document, **options)
        for warning in grammar.warnings:
            grammar_warning(warning, source)
        if lexer_kind in EARLEY_LEXERS:
            from localgcd.grammar.lark_dynamic import dynamic_lexing  # (over GBNF's translation: imported when used)

            grammar = dynamic_lexing(grammar, meter, complete=lexer_kind == "dynamic_complete")
        general = grammar.general or parser == "earley"
        # lark's contextual lexer lexes by the rows of lark's own LALR states: no terminal classes there
        tuning = replace(self.tuning, class_grammar=False) if lexer_kind == "contextual" else self.tuning
        tables, conflicts = build_parse_tables(grammar, strict=strict, meter=meter, tuning=tuning, general=general)
        described = tuple(dict.fromkeys(c.describe() for c in conflicts))  # (cells alike in words: said once)
        for conflict in described if not tables.is_general else ():  # (kept conflicts: the compile's mode says them)
            grammar_warning(conflict, source)
        if lexer_kind == "contextual":
            from localgcd.compiler.contextual import contextual_lexing  # (opt-in: imported when used)

            grammar, tables = contextual_lexing(grammar, tables, meter)
        t1 = time.perf_counter()
        hint = ("lexer='basic' reads terminals with lark's basic lexer; lark's dynamic lexer, its Earley "
                "default, does not make them compete (drop lexer='basic')") if parser == "earley" else ""
        # (a Lark grammar: where lark's lexer backs up to another terminal, the parser's adjacency)
        follows = terminal_follows(grammar) if fmt == "lark" and read_in_lark_order(grammar.terminals) else None
        if follows is not None:  # (which terminal the parser takes wherever it takes another: lark's back-ups)
            follows = replace(follows, moves=parser_moves(grammar, tables), layout=layout_terminals(grammar))
        lexer = build_lexer(list(grammar.terminals), source, grammar.text or text, meter, self.tuning,
                            unproduced_hint=hint, follows=follows, lenient=lenient)
        forked = [t for i, t in enumerate(grammar.terminals) if t.fork is not None and lexer.alias_of is not None
                  and i in lexer.alias_of]
        if forked:
            how = backs_up(forked[0].regex)
            raise GrammarError(f"lexer='contextual': after {forked[0].describe()} the parser's state picks the lexer "
                               f"mode (the stack decides which terminals compete next), and {how or 're.match backs up'}"
                               ": the bytes read past its end are lexed before that mode is known (backing up past a "
                               "fork terminal is not supported); use lexer='basic'",
                               source, forked[0].line, forked[0].column)
        if grammar.indenter is not None and window_bytes(lexer)[list(LAYOUT_BLANKS)].any():
            raise GrammarError("a newline terminal that backs up past blanks: the Indenter would measure "
                               "its indentation at the wrong byte", source)
        t2 = time.perf_counter()
        trie = self.vocabulary_trie(vocab)
        t3 = time.perf_counter()
        lazy_requested = lazy
        lazy = lazy or lexer.n_states > self.eager_lexer_limit
        spanner = LazyTokenSpanner(lexer, trie, len(vocab), tuning=self.tuning) if lazy else \
            build_token_spanner(lexer, trie, len(vocab), meter=meter, tuning=self.tuning)
        t4 = time.perf_counter()
        moves = None
        if grammar.token_elements:  # (GBNF's <[id]>, <text>, !<...>: imported when a grammar has one)
            from localgcd.compiler.token_elements import token_moves

            moves = token_moves(grammar, tables, lexer, vocab)
        compiled = CompiledGrammar(
            terminals=grammar.terminals, lexer=lexer, spanner=spanner, tables=tables, token_moves=moves,
            token_bytes=vocab.token_bytes, end_ids=_end_ids(vocab), source=source, indenter=grammar.indenter,
            conflicts=described, token_mask_budget=self.token_mask_budget,
            built_ahead=not lazy_requested, tuning=self.tuning, lexer_kind=lexer_kind,
        )
        if tables.is_general:
            compiled.general_engine  # noqa: B018 (made here: its tables are part of the compile)
        elif not lazy and tables.n_states * len(spanner.head) <= self.eager_status_limit:
            compiled.statuses = compiled.engine.classify_all().copy()
        t5 = time.perf_counter()
        compiled.timings.update(grammar=t1 - t0, lexer=t2 - t1, trie=t3 - t2, spanner=t4 - t3, statuses=t5 - t4)
        return compiled

    def vocabulary_trie(self, vocab: Vocabulary) -> VocabTrie:
        """The byte trie of a vocabulary's text tokens, with the flat nodes the compiled walks read:
        memoized, and cached on disk.

        It depends on the vocabulary alone, so every grammar compiled for it shares one (and no
        grammar's first mask makes its flat nodes).
        """
        trie = self._tries.get(vocab.fingerprint)
        if trie is not None:
            return trie
        name = TRIE_PREFIX + vocab.fingerprint
        entry = self.store.read(name, vocab.fingerprint, TRIE_FORMAT_VERSION) if self.use_cache else None
        if entry is not None:
            trie = VocabTrie.from_arrays(entry[1])
        else:
            lengths = np.fromiter(map(len, vocab.token_bytes), dtype=np.int64, count=len(vocab))
            trie = VocabTrie.build(vocab.token_bytes, np.flatnonzero((lengths > 0) & ~vocab.is_special))
            trie.flat_nodes  # noqa: B018 (made with the trie: they depend on the vocabulary alone, as it does)
            if self.use_cache:
                self.store.write(name, vocab.fingerprint, TRIE_FORMAT_VERSION, {}, trie.to_arrays())
        self._tries[vocab.fingerprint] = trie
        return trie


PARSERS: tuple[str, ...] = ("lalr", "earley")


def default_lexer(parser: str, fmt: str, text: str = "", source: str = "<grammar>") -> str:
    """The lexer a grammar gets when none is named: a Lark grammar's own declaration
    (:func:`~localgcd.grammar.formats.declared_lexer`: the shipped ones say ``basic``), else lark's
    default for its parser — ``contextual`` with ``parser="lalr"`` (:mod:`localgcd.compiler.contextual`),
    ``dynamic`` with ``parser="earley"`` (:mod:`localgcd.grammar.lark_dynamic`); ``basic`` (one
    longest-match lexer over every terminal) for the other formats."""
    if fmt != "lark":
        return "basic"
    return declared_lexer(text, source) or ("dynamic" if parser == "earley" else "contextual")


def check_lexer(lexer: str, source: str) -> None:
    """``lexer`` names a lexer localgcd has."""
    if lexer not in LEXERS:
        raise GrammarError(f"unknown lexer {lexer!r}: use one of {', '.join(LEXERS)}", source)


def check_parser(parser: str, fmt: str, source: str) -> None:
    """``parser`` names a mode localgcd has for ``fmt``."""
    if parser not in PARSERS:
        raise GrammarError(f"unknown parser {parser!r}: 'lalr' or 'earley' (the whole context-free language, "
                           "with lark's dynamic lexer by default)", source)
    if parser != "lalr" and fmt != "lark":
        raise GrammarError(f"parser={parser!r} is for Lark grammars ({fmt} has one meaning: GBNF's whole language, "
                           "the others deterministic)", source)


@functools.lru_cache(maxsize=8)
def default_compiler(cache_dir: str, use_cache: bool = True, budget: CompileBudget = CompileBudget(),
                     tuning: Tuning = Tuning()) -> Compiler:
    """One shared compiler per cache setting, budget and tuning (so vocabulary tries are built once per process)."""
    return Compiler(cache_dir, use_cache=use_cache, budget=budget, tuning=tuning)


def compile_grammar(grammar: str, vocab: Vocabulary, fmt: str = "lark", source: str = "<grammar>",
                    cache_dir: str | Path | None = None, use_cache: bool = True, strict: bool = False,
                    indenter: IndenterOptions | None = None, lark_regex: bool = False,
                    base_dir: str | Path | None = None, budget: CompileBudget = CompileBudget(),
                    tuning: Tuning = Tuning(), parser: str = "lalr", lexer: str | None = None,
                    lenient: bool = False) -> CompiledGrammar:
    """Compile ``grammar`` (text) for ``vocab``: the one-line convenience over :class:`Compiler`.

    ``parser``: ``"lalr"`` or ``"earley"``; ``lexer``: ``"contextual"``, ``"basic"``, ``"dynamic"`` or
    ``"dynamic_complete"`` (Lark grammars; None: the grammar's own ``// localgcd: lexer=...`` line, else
    lark's default — ``contextual`` with LALR, ``dynamic`` with Earley; see :meth:`Compiler.compile`).

    ``cache_dir=None`` uses ``$LOCALGCD_CACHE`` or the user cache dir;
    ``use_cache=False`` compiles in memory only.  ``lark_regex=True`` (Lark grammars) reads the
    terminals as lark's ``regex=True`` does: ``\\p{…}`` Unicode properties, the ``regex`` module's
    Unicode data.  ``base_dir``: where the text's relative ``%import .x`` are read (see
    :meth:`Compiler.compile`).  ``budget``: the bounds on the compile
    (:class:`~localgcd.budget.CompileBudget`; beyond them, a :class:`~localgcd.errors.CompileBudgetError`).
    ``tuning``: the pipeline's thresholds and switches (:class:`~localgcd.tuning.Tuning`).
    ``parser``: ``"lalr"`` or ``"earley"`` (Lark grammars; see :meth:`Compiler.compile`).
    ``lenient=True`` (a Lark grammar): where lark's lexer backs up to another terminal and localgcd's
    cannot, a :class:`GrammarWarning` naming it rather than a :class:`GrammarError` (the compiled
    grammar then refuses texts lark accepts there; see :meth:`Compiler.compile`).
    """
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    compiler = default_compiler(str(root), use_cache, budget, tuning)
    options = {"lark_regex": True} if lark_regex else {}  # the default keeps the cache key it always had
    return compiler.compile(grammar, vocab, fmt, source, strict=strict, indenter=indenter, base_dir=base_dir,
                            parser=parser, lexer=lexer, lenient=lenient, **options)


def compile_json_schema(schema: Any, vocab: Vocabulary, *, lenient: bool = False, whitespace: str = "default",
                        property_order: str = "schema", additional_properties: str = "closed",
                        source: str = "<schema>", cache_dir: str | Path | None = None,
                        use_cache: bool = True, budget: CompileBudget = CompileBudget(),
                        tuning: Tuning = Tuning()) -> CompiledGrammar:
    """Compile a JSON Schema (a dict, JSON text, a Pydantic model class, or OpenAI's ``response_format``).

    A keyword that changes validity and is not enforced exactly is a :class:`GrammarError`
    naming it and its JSON pointer; ``lenient=True`` makes those warnings.  ``whitespace``:
    ``"default"`` (compact or ``json.dumps``' separators) or ``"compact"``; ``property_order``:
    ``"schema"`` (as listed) or ``"any"``; ``additional_properties``: ``"closed"`` (an object
    schema listing its properties, without ``additionalProperties``, admits no other keys, as
    generation tools read schemas) or ``"schema"`` (JSON Schema's reading: open).  ``budget``,
    ``tuning``: as for :func:`compile_grammar`.
    """
    text = schema if isinstance(schema, str) else _schema_text(schema, source)
    document = None if isinstance(schema, (str, type)) else schema  # read as it is, not parsed back from text
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return default_compiler(str(root), use_cache, budget, tuning).compile(
        text, vocab, "json_schema", source, document=document, lenient=lenient, whitespace=whitespace,
        property_order=property_order, additional_properties=additional_properties)


def _schema_text(schema: Any, source: str) -> str:
    """A schema object as JSON text (the cache key); Pydantic models via ``model_json_schema()``."""
    from localgcd.grammar.json_schema.json_text import check_schema_values  # (the front end: imported when used)
    from localgcd.grammar.json_schema.load import model_schema

    if isinstance(schema, type):
        schema = model_schema(schema, source)  # (a class that is no model: an error naming it)
    check_schema_values(schema, source)  # NaN, a 5,000-digit integer, deep nesting: named by pointer
    return json.dumps(schema, sort_keys=False, ensure_ascii=False)


def _cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in (f"localgcd-tables-v{TABLE_FORMAT_VERSION}", *parts):
        data = part.encode("utf-8", "surrogatepass")  # a lone surrogate is the front end's error to report
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def _end_ids(vocab: Vocabulary) -> np.ndarray:
    return np.asarray(vocab.end_ids, dtype=np.int64)
