"""api_shared.text: the characters a name may not hold, and the pattern documenting them."""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from api_shared.text import SAFE_TEXT_PATTERN, check_safe_text, first_unsafe_character

REFUSED_CATEGORIES = {"Cc", "Zl", "Zp", "Cf"}
KEPT_FORMAT_CHARACTERS = {"\u200c", "\u200d"}  # zero-width non-joiner and joiner
SURROGATES = range(0xD800, 0xE000)


def every_character() -> list[str]:
    return [chr(code) for code in range(sys.maxunicode + 1) if code not in SURROGATES]


def utf16_view(value: str) -> str:
    """``value`` as ECMA-262 sees a string without the ``u`` flag: UTF-16 code units."""
    return "".join(map(_code_units, value))


def _code_units(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return char
    code -= 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def test_every_control_separator_and_format_character_the_interpreter_knows_is_refused() -> None:
    missed = [
        f"U+{ord(char):04X}"
        for char in every_character()
        if unicodedata.category(char) in REFUSED_CATEGORIES
        and char not in KEPT_FORMAT_CHARACTERS
        and first_unsafe_character(f"a{char}b") is None
    ]

    assert missed == []


@pytest.mark.parametrize(
    "name",
    [
        "Ada Lovelace",
        "Zoë O'Brien-Ñúñez",
        "李小龙",
        "نیکی\u200cنژاد",  # noqa: RUF001 - Persian, a zero-width non-joiner inside the word
        "\U0001f469\u200d\U0001f4bb",  # an emoji ZWJ sequence
        "Ada\u00a0Lovelace",  # a no-break space is a space
        "Ada https://example.com",  # a link is text; what mail may carry is decided elsewhere
    ],
)
def test_names_of_every_script_pass(name: str) -> None:
    assert check_safe_text(name) == name
    assert re.search(SAFE_TEXT_PATTERN, utf16_view(name))


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("Ada\nVisit https://evil.example", "U+000A"),
        ("Ada\r\n", "U+000D"),
        ("Ada\tL", "U+0009"),
        ("Ada\u0085", "U+0085"),
        ("Ada\u2028Line", "U+2028"),
        ("Ada\u2029", "U+2029"),
        ("\u202eadA", "U+202E"),
        ("Ada\u2066x\u2069", "U+2066"),
        ("Ada\u200f", "U+200F"),
        ("Ada\u061c", "U+061C"),
        ("A\u200bda", "U+200B"),
        ("Ada\ufeff", "U+FEFF"),
        ("Ada\U000e0041", "U+E0041"),
    ],
)
def test_controls_separators_and_bidi_characters_are_refused_by_name(name: str, code: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"({code})")):
        check_safe_text(name)
    if ord(max(name)) <= 0xFFFF:  # the documented pattern states the BMP's (its docstring)
        assert not re.search(SAFE_TEXT_PATTERN, utf16_view(name))
        assert not re.search(SAFE_TEXT_PATTERN, name)


def test_the_documented_pattern_refuses_exactly_what_the_validator_refuses_in_the_bmp() -> None:
    pattern = re.compile(SAFE_TEXT_PATTERN)
    disagree = [
        f"U+{ord(char):04X}"
        for char in every_character()
        if ord(char) <= 0xFFFF
        and not char.isspace()
        and bool(pattern.match(f"a{char}b")) != (first_unsafe_character(char) is None)
    ]

    assert disagree == []


@pytest.mark.parametrize("blank", [" ", "\u00a0 \u3000", "\u2003"])
def test_the_documented_pattern_refuses_a_blank_name(blank: str) -> None:
    assert not re.search(SAFE_TEXT_PATTERN, blank)


def test_the_documented_pattern_has_no_lookaround_for_generators_to_misread() -> None:
    assert "(?" not in SAFE_TEXT_PATTERN
