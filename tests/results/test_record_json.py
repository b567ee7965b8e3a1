"""A phase's JSON columns are encoded by orjson for speed (results/record_rows._dumps_each): what is
stored must read back as json.dumps' text would, value for value."""
from __future__ import annotations

import json
import math
from pathlib import Path

from manybench.results.record_rows import _dumps_each, dumps as _dumps


def _back(values: list) -> list:
    return [json.loads(t) for t in _dumps_each(values)]


def test_plain_values_read_back_the_same():
    values = [{"cpus_allowed": "3", "ops": 1, "rate": 1.5e-05, "big": 2**62, "neg": -7,
               "none": None, "list": [1, "a", None], "text": "/dev/null", "uni": "é\u2603"},
              {}, {"nested": {"a": {"b": [True, False]}}}]
    assert _back(values) == [json.loads(_dumps(v)) for v in values]


def test_what_orjson_would_change_goes_to_json():
    nan = float("nan")
    got = _back([{"x": nan}, {"x": math.inf, "y": -math.inf}, {"huge": 2**70},
                 {1: "int key", 2.5: "float key"}, {"path": Path("/tmp/x")}])
    assert math.isnan(got[0]["x"])                        # not None: json writes NaN
    assert got[1] == {"x": math.inf, "y": -math.inf}
    assert got[2] == {"huge": 2**70}                      # past 64 bits
    assert got[3] == json.loads(_dumps({1: "int key", 2.5: "float key"}))
    assert got[4] == {"path": "/tmp/x"}                   # default=str, as _dumps


def test_one_bad_value_does_not_change_the_others():
    got = _back([{"a": 1}, {"huge": 2**70}, {"b": float("nan")}, {"c": "ok"}])
    assert got[0] == {"a": 1} and got[1] == {"huge": 2**70} and got[3] == {"c": "ok"}
    assert math.isnan(got[2]["b"])
