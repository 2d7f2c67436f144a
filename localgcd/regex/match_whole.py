r"""A syntactic proof that ``re.match`` returns every word of a pattern's language whole.

``re.match`` tries a pattern's choices (an alternation's options left to right, a greedy loop's
``once more`` before ``stop``) depth first and returns the first path that reaches the pattern's
end.  A word ``w`` of the language is returned whole on the text ``w`` unless a path of higher
priority ends on a shorter prefix.  Such a path leaves ``w``'s own path at some choice, where, with
``c`` the character ``w``'s path reads next, it either reads ``c`` too or ends there.  So where at
every choice no branch that ranks higher than another can read a first character the other can
(over what may follow the choice: FIRST with FOLLOW, by character classes), nor end while a
lower one reads on, every word is returned whole: the pattern "reads no word short".  The branches
are compared along their leading characters (an option's, what follows the choice included: a
loop's body against what comes after the loop), a greedy run of one class (``\*+``, ``[0-9_]*``) as one step:
where every choice is proven, such a run always stops where the text's run does (its next
character is not of its class), in the higher branch as in the lower one; so does a greedy loop of
one item (``(?:_?[0-9])*``), whose every iteration and whose end the next character decides.  (A
loop is a step only where that holds in the lead at hand: nothing after it may begin as its item;
else a ``+`` is read one round, then as a ``*``.)  A choice whose branches overlap is proven too
where every path through it meets again: a class ``S`` after it (``[pP]`` in a hex float) of which
nothing before has a character, so each path reads ``S`` at the text's first one and goes on along
the same nodes: the branch taken does not move where the pattern ends.  And a greedy run of one
class ``C`` that ends a round of a loop nothing follows but the pattern's end (a comment's
``[^\n]*`` in Python's ``_NEWLINE``) may read on into the next rounds where each round, from its
first character outside ``C``, is a round itself: what the run leaves is read by the loop, whole.

A sufficient condition, cheap (a walk over the parse with a few set operations), where deciding it
exactly (:func:`localgcd.lexer.first_match.reads_short`) determinizes automata: it proves Java's,
Go's and Python's operators, identifiers, numbers, strings and comments, leaving the exact check
to the patterns whose options overlap otherwise.  False where it cannot tell (a
look-around, an anchor, a lazy or nullable loop, a choice whose branches overlap).
"""

from __future__ import annotations

from localgcd.regex.charset import CharSet
from localgcd.regex.syntax import Alt, Chars, Concat, Node, Repeat, nodes_of

__all__ = ["first_characters", "takes_words_whole"]

_DEPTH = 200  # deeper parses are left to the exact check (no recursion past this)
_NOTHING = CharSet()


class _Unproven(Exception):
    """A choice whose branches may overlap, or a construct this proof does not read."""


def takes_words_whole(node: Node) -> bool:
    """Whether, provably by the choices' leading characters, ``re.match`` on each word of ``node``'s
    language returns that whole word (see the module docstring); False where it cannot tell."""
    try:
        _Proof().check(node, (), _NOTHING, True, 0)
    except _Unproven:
        return False
    return True


def first_characters(node: Node) -> CharSet | None:
    """The characters a non-empty word of ``node`` may begin with; None where a look-around or an
    anchor is in the way."""
    try:
        return _Proof().first(node, 0)[0]
    except _Unproven:
        return None


def _disjoint(one: CharSet, other: CharSet) -> bool:
    """Whether the two sets share no character (one pass over their sorted intervals)."""
    a, b = one.intervals, other.intervals
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return False
    return True


Token = tuple[int, CharSet, object]  # a step: ONE character of the class, or a greedy unbounded loop (PLUS,
# STAR) of an item (the last: the class, or the loop's item), the class then the item's first characters
Lead = tuple[tuple[Token, ...], CharSet, bool]  # steps, the characters next, whether it may end there
ONE, PLUS, STAR = range(3)


def _parts_ways(higher: Lead, lower: Lead) -> bool:
    """Whether a path along ``higher`` cannot read along a word along ``lower`` and end on a shorter
    prefix: at some step the two read disjoint classes before ``higher`` may end (runs in step
    where both are one run of one class)."""
    tokens_high, tokens_low = higher[0], lower[0]
    for step in range(min(len(tokens_high), len(tokens_low))):
        (kind_high, high, item_high), (kind_low, low, item_low) = tokens_high[step], tokens_low[step]
        if (kind_high == ONE) != (kind_low == ONE) or (kind_high != ONE and item_high != item_low):
            break  # (loops of one item end together, where the text's run of it ends: a + of none fails there)
        if _disjoint(high, low):
            return True
    else:
        step = min(len(tokens_high), len(tokens_low))
    high, high_ends = _next_from(higher, step)
    return not high_ends and _disjoint(high, _next_from(lower, step)[0])


def _next_from(lead: Lead, step: int) -> tuple[CharSet, bool]:
    """The characters a path along ``lead`` may read next from its ``step``-th step on, and whether
    it may end there."""
    tokens, chars = lead[0], _NOTHING
    for kind, token_chars, _item in tokens[step:]:
        chars = chars | token_chars
        if kind != STAR:
            return chars, False
    return chars | lead[1], lead[2]


class _Proof:
    """One pattern's proof: the first characters of its nodes, memoized by node while it runs."""

    _LEADS = 32  # a branch is read along some this many leads at most ...
    _TOKENS = 8  # ... of at most this many steps each

    def __init__(self) -> None:
        self.firsts: dict[int, tuple[CharSet, bool]] = {}
        self.unrolled: dict[int, Repeat] = {}
        self.read: dict[int, CharSet | None] = {}
        self.rounds: list[Repeat | None] = []  # the loops whose rounds are being read, inside out (None: not
        # one nothing but the pattern's end follows)

    def first(self, node: Node, depth: int) -> tuple[CharSet, bool]:
        """The characters a word of ``node`` may begin with, and whether it matches the empty word."""
        found = self.firsts.get(id(node))
        if found is None:
            found = self.firsts[id(node)] = self._first(node, depth)
        return found

    def _first(self, node: Node, depth: int) -> tuple[CharSet, bool]:
        if depth > _DEPTH:
            raise _Unproven
        if isinstance(node, Chars):
            return node.chars, False
        if isinstance(node, Concat):
            return self.first_of(node.items, _NOTHING, True, depth + 1)
        if isinstance(node, Alt):
            first, any_nullable = _NOTHING, False
            for option in node.options:
                chars, nullable = self.first(option, depth + 1)
                first, any_nullable = first | chars, any_nullable or nullable
            return first, any_nullable
        if isinstance(node, Repeat):
            if node.hi == 0:
                return _NOTHING, True
            chars, nullable = self.first(node.item, depth + 1)
            return chars, nullable or node.lo == 0
        raise _Unproven  # a look-around or an anchor

    def first_of(self, items: tuple[Node, ...], follow: CharSet, ends: bool, depth: int) -> tuple[CharSet, bool]:
        """The characters that may come first reading ``items`` and then ``follow``, and whether the
        pattern may end there (``ends``, all of ``items`` empty)."""
        first = _NOTHING
        for item in items:
            chars, nullable = self.first(item, depth)
            first = first | chars
            if not nullable:
                return first, False
        return first | follow, ends

    def leads(self, items: tuple[Node, ...], follow: CharSet, ends: bool, depth: int) -> list[Lead]:
        """Every way of reading on along ``items`` (then ``follow``): its leading characters and
        greedy runs of one class (an alternation's options and an optional part each read both
        ways), up to a node read otherwise, where the characters next stand for the rest."""
        out: list[Lead] = []
        work: list[tuple[tuple[Token, ...], tuple[Node, ...]]] = [((), items)]
        while work:
            tokens, pending = work.pop()
            while True:
                head = pending[0] if pending and len(tokens) < self._TOKENS \
                    and len(out) + len(work) < self._LEADS else None  # (past either: the rest as its first characters)
                if isinstance(head, Chars):
                    tokens, pending = tokens + ((ONE, head.chars, head.chars),), pending[1:]
                elif isinstance(head, Concat):
                    pending = head.items + pending[1:]
                elif isinstance(head, Repeat) and head.greedy and head.hi is None and self.reads_on_to_its_end(
                        head, self.first_of(pending[1:], follow, ends, depth)[0], depth):
                    item = head.item.chars if isinstance(head.item, Chars) else head.item
                    tokens, pending = tokens + ((PLUS if head.lo else STAR, self.first(head.item, depth)[0], item),), \
                        pending[1:]
                elif isinstance(head, Repeat) and head.greedy and head.lo >= 1 and head.hi is None:
                    pending = (head.item, self.fewer(head)) + pending[1:]  # its first round, then the loop
                elif isinstance(head, Repeat) and head.greedy and head.lo == 0 and head.hi == 1:
                    work.append((tokens, (head.item,) + pending[1:]))
                    pending = pending[1:]
                elif isinstance(head, Alt):
                    work.extend((tokens, (option,) + pending[1:]) for option in head.options)
                    break
                else:
                    out.append((tokens, *self.first_of(pending, follow, ends, depth)))
                    break
        return out

    def fewer(self, loop: Repeat) -> Repeat:
        """``loop`` one round short (``X+`` → ``X*``): ``re`` reads ``X+`` as ``X`` then ``X*``, rounds
        tried before stopping alike.  Kept while the proof runs (its nodes are memoized by id)."""
        found = self.unrolled.get(id(loop))
        if found is None:
            found = self.unrolled[id(loop)] = Repeat(loop.item, loop.lo - 1, loop.hi, loop.greedy)
        return found

    def reads_on_to_its_end(self, loop: Repeat, after: CharSet, depth: int) -> bool:
        """Whether every path that goes on past ``loop`` (``after``: the characters that may follow it)
        reads it the one way the text decides: its item is never empty, not what may follow it, and
        decided by the next character at each of its choices."""
        chars, nullable = self.first(loop.item, depth)
        return not nullable and _disjoint(chars, after) and self.decided(loop.item, chars | after, depth)

    def decided(self, node: Node, follow: CharSet, depth: int) -> bool:
        """Whether each choice inside ``node`` (followed by ``follow``) is decided by the next
        character: its branches' first characters (with ``follow`` where one may be empty) are
        disjoint, and at most one may be empty."""
        if depth > _DEPTH:
            raise _Unproven
        if isinstance(node, Chars):
            return True
        if isinstance(node, Concat):
            for k, item in enumerate(node.items):
                if not self.decided(item, self.first_of(node.items[k + 1:], follow, True, depth + 1)[0], depth + 1):
                    return False
            return True
        if isinstance(node, Alt):
            firsts = [self.first(option, depth + 1) for option in node.options]
            if sum(nullable for _chars, nullable in firsts) > 1:
                return False
            seen = _NOTHING
            for chars, nullable in firsts:
                chars = chars | follow if nullable else chars
                if not _disjoint(seen, chars):
                    return False
                seen = seen | chars
            return all(self.decided(option, follow, depth + 1) for option in node.options)
        if isinstance(node, Repeat):
            if node.hi == 0:
                return True
            chars, nullable = self.first(node.item, depth + 1)
            if nullable or (node.hi != node.lo and not _disjoint(chars, follow)):
                return False
            return self.decided(node.item, chars | follow, depth + 1)
        return False

    def branches_part(self, higher: list[Lead], lower: list[Lead]) -> None:
        if not all(_parts_ways(high, low) for high in higher for low in lower):
            raise _Unproven

    def meet_again(self, branches: tuple[Node, ...], rest: tuple[Node, ...]) -> bool:
        """Whether every path through any of ``branches`` and then ``rest`` reads one character
        ``S`` of ``rest`` at the same place: ``rest`` has a class ``S`` none of the branches and
        nothing in ``rest`` before it has a character of, so each path reads ``S`` at the text's first
        character of it, and goes on from there along the same nodes.  Then which branch is taken
        does not move where the pattern ends (a choice after ``S`` decides it, checked in its turn)."""
        before = _NOTHING
        for node in branches:
            chars = self.characters(node)
            if chars is None:
                return False
            before = before | chars
        for item in rest:
            if isinstance(item, Chars):
                if _disjoint(item.chars, before):
                    return True
            chars = self.characters(item)
            if chars is None:
                return False
            before = before | chars
        return False

    def ends_a_round(self, run: Repeat, rest: tuple[Node, ...]) -> bool:
        """Whether ``run``, a greedy run of one class ``C`` (``[^\\n]*``), ends a round of the loop whose
        round is being read, a loop nothing follows but the pattern's end (Python's ``_NEWLINE``), and
        each round of that loop is, from its first character outside ``C``, a round itself (those before
        it may be left out: ``\\r?\\n``), or has none.  Then reading the run on to the text's first
        character outside ``C`` (or its end) leaves a text the loop's rounds read (the rounds the run
        took are of ``C`` but for that one's start), which, being shorter, the loop reads whole."""
        loop = self.rounds[-1] if self.rounds else None
        if loop is None or rest or run.hi is not None or not isinstance(run.item, Chars):
            return False
        inside = run.item.chars
        for option in loop.item.options if isinstance(loop.item, Alt) else (loop.item,):
            items = option.items if isinstance(option, Concat) else (option,)
            for k, item in enumerate(items):
                if isinstance(item, Chars) and _disjoint(item.chars, inside):
                    if not all(self.first(before, 0)[1] for before in items[:k]):
                        return False
                    break
                chars = self.characters(item)
                if chars is None or (chars - inside).intervals:
                    return False
        return True

    def characters(self, node: Node) -> CharSet | None:
        """Every character ``node`` may read; None where a look-around or an anchor is in it."""
        found = self.read.get(id(node), False)
        if found is False:
            found = _NOTHING
            for part in nodes_of(node):
                if isinstance(part, Chars):
                    found = found | part.chars
                elif not isinstance(part, (Concat, Alt, Repeat)):
                    found = None
                    break
            self.read[id(node)] = found
        return found  # type: ignore[return-value]

    def check(self, node: Node, rest: tuple[Node, ...], follow: CharSet, ends: bool, depth: int) -> None:
        """Raise :class:`_Unproven` unless every choice inside ``node`` is proven; ``rest``: the nodes
        read right after ``node``, then ``follow`` (the characters that may come next) and
        ``ends`` (whether the pattern may end there)."""
        if depth > _DEPTH:
            raise _Unproven
        if isinstance(node, Chars):
            return
        if isinstance(node, Concat):
            for k, item in enumerate(node.items):
                self.check(item, node.items[k + 1:] + rest, follow, ends, depth + 1)
            return
        if isinstance(node, Alt):
            branches = [self.leads((option,) + rest, follow, ends, depth + 1) for option in node.options]
            try:
                for k, higher in enumerate(branches):
                    for lower in branches[k + 1:]:
                        self.branches_part(higher, lower)
            except _Unproven:
                if not self.meet_again(node.options, rest):
                    raise
            for option in node.options:
                self.check(option, rest, follow, ends, depth + 1)
            return
        if isinstance(node, Repeat):
            if node.hi == 0:
                return
            chars, nullable = self.first(node.item, depth + 1)
            if not node.greedy or nullable:
                raise _Unproven
            after, after_ends = self.first_of(rest, follow, ends, depth + 1)
            again = node.hi is None or node.hi > 1
            if node.hi != node.lo and not _disjoint(chars, after):  # once more (first) against stop
                try:
                    self.branches_part(self.leads((node.item,), chars | after if again else after, after_ends,
                                                  depth + 1), self.leads(rest, follow, ends, depth + 1))
                except _Unproven:
                    if not self.meet_again((node.item,), rest) and not self.ends_a_round(node, rest):
                        raise
            tail = node.hi is None and node.lo <= 1 and not after.intervals and after_ends
            self.rounds.append(node if tail else None)
            try:
                self.check(node.item, (), chars | after if again else after, after_ends, depth + 1)
            finally:
                self.rounds.pop()
            return
        raise _Unproven
