"""The characters a short text shown to people (a user's name, an API key's name) may not
hold, in one list: docs/api.md#users.

They are those that change how the text around them reads without being seen themselves:

- controls (Unicode category Cc: U+0000-U+001F, U+007F-U+009F), among them line feed,
  carriage return and tab, with which a name wrote lines of its own into a message;
- the line and paragraph separators (Zl, Zp: U+2028, U+2029), for the same reason;
- the format characters (Cf), among them the bidirectional controls (U+061C, U+200E,
  U+200F, U+202A-U+202E, U+2066-U+2069) that reorder what is displayed ("Trojan Source"),
  zero-width and invisible characters (U+200B, U+2060-U+2064, U+FEFF, soft hyphen U+00AD)
  that make two names look alike, and tag characters (U+E0001, U+E0020-U+E007F). Two are
  kept: the zero-width non-joiner and joiner (U+200C, U+200D), which Persian and the Indic
  scripts need to write names correctly, and which emoji sequences are made of.

The list is fixed here (Unicode 15.1's Cf included), not read from the running Python's
Unicode tables: what is refused must not change with the interpreter. A unit test checks
that it covers every Cc, Zl, Zp and Cf character the interpreter knows but those two.
Surrogates (Cs) are not listed: a JSON body cannot carry a lone one (MALFORMED_JSON).
"""

from __future__ import annotations

import re

# Inclusive ranges of code points.
UNSAFE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F),  # C0 controls
    (0x007F, 0x009F),  # DEL, C1 controls
    (0x00AD, 0x00AD),  # soft hyphen
    (0x0600, 0x0605),  # Arabic number signs (prepended marks)
    (0x061C, 0x061C),  # Arabic letter mark (bidi)
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),  # Mongolian vowel separator
    (0x200B, 0x200B),  # zero-width space (U+200C and U+200D are kept)
    (0x200E, 0x200F),  # left-to-right and right-to-left marks (bidi)
    (0x2028, 0x2029),  # line and paragraph separators
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x206F),  # bidi isolates, deprecated format characters
    (0xFEFF, 0xFEFF),  # zero-width no-break space (byte-order mark)
    (0xFFF9, 0xFFFB),  # interlinear annotations
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0001, 0xE0001),  # language tag
    (0xE0020, 0xE007F),  # tag characters
)

UNSAFE_TEXT_MESSAGE = (
    "must not contain control, line-separator, bidirectional or invisible formatting characters"
)

_UNSAFE = re.compile(
    "[" + "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in UNSAFE_RANGES) + "]"
)


def first_unsafe_character(value: str) -> str | None:
    """The first character of ``value`` in ``UNSAFE_RANGES``, or None."""
    found = _UNSAFE.search(value)
    return found[0] if found else None


def check_safe_text(value: str) -> str:
    """``value`` unchanged, or a ValueError naming the first unsafe character (a validator)."""
    unsafe = first_unsafe_character(value)
    if unsafe is not None:
        raise ValueError(f"{UNSAFE_TEXT_MESSAGE} (U+{ord(unsafe):04X})")
    return value


def _ecma(code_unit: int) -> str:
    return f"\\u{code_unit:04X}"


_UNSAFE_BMP = "".join(
    f"{_ecma(first)}-{_ecma(last)}" for first, last in UNSAFE_RANGES if last <= 0xFFFF
)

SAFE_TEXT_PATTERN = f"^[^{_UNSAFE_BMP}]*[^{_UNSAFE_BMP}\\s][^{_UNSAFE_BMP}]*$"
"""For the OpenAPI documents: a string holding none of ``UNSAFE_RANGES``' characters of the
Basic Multilingual Plane, and not only white space. Negated classes, no lookaround: ECMA-262
and Python read it alike, and test generators (schemathesis) follow it. The few unsafe
characters above U+FFFF (tag and musical format characters) are refused by the validator
alone: without the ``u`` flag, ECMA-262 sees them as surrogate pairs, which a class cannot
exclude without excluding every character of their planes."""
