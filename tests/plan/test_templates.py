import pytest

from manybench.templates import fields, render


def test_fields_in_order_once():
    assert fields("of={scratch}/{name}.{rank}.{name}") == ["scratch", "name", "rank"]
    assert fields("plain") == []
    assert fields("") == []


def test_double_braces_are_literal():
    assert fields("{{not}} {real}") == ["real"]
    assert render("{{x}}={x}", {"x": 1}) == "{x}=1"
    assert render("}}{{", {}) == "}{"


def test_render_uses_str_of_values():
    assert render("bs={block} count={n}", {"block": "1M", "n": 64}) == "bs=1M count=64"
    assert render("{a}{a}", {"a": 2.5}) == "2.52.5"


def test_render_missing_name_is_value_error_naming_it():
    with pytest.raises(ValueError, match="'missing'"):
        render("x={missing}", {"other": 1})


@pytest.mark.parametrize("bad", ["{open", "a}b", "{a}}", "x{"])
def test_unbalanced_brace(bad):
    with pytest.raises(ValueError, match="unbalanced"):
        fields(bad)


@pytest.mark.parametrize("bad", ["{a.b}", "{0}", "{x:>4}", "{}", "{a b}", "{x!r}", "{a[0]}"])
def test_placeholder_must_be_identifier(bad):
    with pytest.raises(ValueError, match="not a plain parameter name"):
        fields(bad)
    with pytest.raises(ValueError):
        render(bad, {"a": 1, "x": 1})


def test_non_string_template_is_value_error():
    with pytest.raises(ValueError):
        fields(3)  # type: ignore[arg-type]
