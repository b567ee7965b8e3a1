"""`manybench bundle` builds manybench's wheel portable by default (issue 17, item 8; setup.py's
default since issue 33): a wheel built for the bundling machine's processor could die of an
illegal instruction on an older node. The bundle sets MANYBENCH_MARCH=native only when asked
for native code (and drops one inherited from the environment), and says which it did."""
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
    assert "MANYBENCH_MARCH" not in own
    seen.clear()
    B.bundle(str(tmp_path / "b"), str(ROOT), native=True)
    (own,) = [env for args, env in seen if args[:2] == ("wheel", "--no-deps")]
    assert own.get("MANYBENCH_MARCH") == "native"
    assert "portable" in B.build_note(False) and "-march=native" in B.build_note(True)


def test_an_inherited_march_does_not_reach_the_portable_wheel(monkeypatch):
    seen: list[dict] = []
    monkeypatch.setattr(B.subprocess, "run", lambda cmd, env, **kw: seen.append(env) or
                        B.subprocess.CompletedProcess(cmd, 0, "", ""))
    monkeypatch.setenv("MANYBENCH_MARCH", "native")
    B._pip("wheel", "--no-deps")
    assert "MANYBENCH_MARCH" not in seen[0]
