"""A password rule Django lacks: eight spaces pass its length, common and numeric checks."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class NotBlankValidator:
    def validate(self, password: str, user=None) -> None:
        if not password.strip():
            raise ValidationError("The password cannot be only spaces or other blank characters.",
                                  code="password_blank")

    def get_help_text(self) -> str:
        return "Your password cannot be only spaces."
