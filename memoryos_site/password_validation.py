"""A password rule Django lacks: eight spaces, or eight zero-width spaces, pass its length, common and
numeric checks. A password must hold at least one character that draws something on its own."""

from __future__ import annotations

import unicodedata

import regex
from django.core.exceptions import ValidationError

# Separators (Z*: spaces of every width) and the other categories (C*: controls, format characters
# such as U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+FEFF, U+00AD SOFT HYPHEN) draw nothing;
# nor do combining marks with nothing to sit on (Mn, Me: U+034F, U+FE0F).
INVISIBLE_CATEGORIES = ("Z", "C", "Mn", "Me")
# Unicode's Default_Ignorable_Code_Point: what renderers show as nothing although its category is
# a letter's (U+3164 HANGUL FILLER, U+FFA0, U+115F) or a vowel's (U+17B4 KHMER VOWEL INHERENT AQ).
IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
# Symbols whose glyph is empty by definition, though they are neither spaces nor ignorable.
BLANK_GLYPHS = frozenset({"\u2800", "\u303f"})  # BRAILLE PATTERN BLANK, IDEOGRAPHIC HALF FILL SPACE


def is_invisible(character: str) -> bool:
    """A character that shows nothing where it is typed."""
    return (character.isspace() or unicodedata.category(character).startswith(INVISIBLE_CATEGORIES)
            or character in BLANK_GLYPHS or IGNORABLE.match(character) is not None)


class NotBlankValidator:
    def validate(self, password: str, user=None) -> None:
        if all(is_invisible(character) for character in password):
            raise ValidationError("The password cannot be only spaces or other blank or invisible characters.",
                                  code="password_blank")

    def get_help_text(self) -> str:
        return "Your password cannot be only spaces or invisible characters."
