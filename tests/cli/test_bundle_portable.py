"""`manybench bundle` builds manybench's wheel portable by default (issue 17, item 8): the C
kernels are compiled -march=native for the machine that builds them, so a wheel built on the
bundling machine could die of an illegal instruction on an older node. The bundle sets
MANYBENCH_PORTABLE=1 for that build unless asked for native code, and says which it did."""
from __future__ import annotations


from suite_paths import ROOT

from manybench import bundle as B



def _calls(monkeypatch, **kw) -> list[tuple[tuple, dict]]:
    seen: list[tuple[tuple, dict]] = []
    monkeypatch.setattr(B, "_pip", lambda *args, env=None: seen.append((args, env or {})))
    monkeypatch.setattr(B, "_requirements", lambda out, extras: [])
    return seen


def test_the_wheel_is_built_portable_unless_native_is_asked(monkeypatch, tmp_path):
    seen = _calls(monkeypatch)
    B.bundle(str(tmp_path / "a"), str(ROOT))
    (own,) = [env for args, env in seen if args[:2] == ("wheel", "--no-deps")]
    assert own.get("MANYBENCH_PORTABLE") == "1"
    seen.clear()
    B.bundle(str(tmp_path / "b"), str(ROOT), native=True)
    (own,) = [env for args, env in seen if args[:2] == ("wheel", "--no-deps")]
    assert "MANYBENCH_PORTABLE" not in own
    assert "portable" in B.build_note(False) and "-march=native" in B.build_note(True)
