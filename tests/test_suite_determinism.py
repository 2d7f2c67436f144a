"""The suite's property tests draw what the test alone decides: not what the tests run before it in the
same process imported (an xdist worker runs some of the suite, ``-n 0`` all of it in another order), not
whether ``$CI`` is set (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: a derandomized property as test_first_match's draws them, run before and after every localgcd module is
#: imported (as the tests before it may have done), under the suite's conftest
DRAWS = f"""
import json, sys
sys.path.insert(0, {str(TESTS)!r})
import conftest
from hypothesis import given, settings, strategies as st
from source_support import every_localgcd_module

drawn = []

@given(st.integers(3, 4), st.lists(st.text("abAB", min_size=1, max_size=6), min_size=16, max_size=16))
def prop(n, texts):
    drawn.append([n, texts])

prop()
before = list(drawn)
drawn.clear()
for _ in every_localgcd_module():
    pass
prop()
print(json.dumps({{"before": before, "after": drawn, "deadline": repr(settings.default.deadline)}}))
"""


def draws(ci: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": ci} if ci else {})
    done = subprocess.run([sys.executable, "-c", DRAWS], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def test_a_property_draws_the_same_examples_whatever_ran_before_it_and_wherever_it_runs() -> None:
    local, ci = draws(None), draws("true")
    assert local["before"] and local["before"] == local["after"]
    assert ci == local
    assert local["deadline"] == "None"  # no verdict depends on the machine's load
