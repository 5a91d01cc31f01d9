"""A password rule Django lacks: eight spaces, or eight zero-width spaces, pass its length, common and
numeric checks."""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError

# Separators (Z*: spaces of every width) and the other categories (C*: controls, format characters
# such as U+200B ZERO WIDTH SPACE, U+2060 WORD JOINER, U+FEFF, U+00AD SOFT HYPHEN) draw nothing.
INVISIBLE_CATEGORIES = ("Z", "C")


def is_invisible(character: str) -> bool:
    """A character that shows nothing where it is typed."""
    return character.isspace() or unicodedata.category(character).startswith(INVISIBLE_CATEGORIES)


class NotBlankValidator:
    def validate(self, password: str, user=None) -> None:
        if all(is_invisible(character) for character in password):
            raise ValidationError("The password cannot be only spaces or other blank or invisible characters.",
                                  code="password_blank")

    def get_help_text(self) -> str:
        return "Your password cannot be only spaces or invisible characters."
