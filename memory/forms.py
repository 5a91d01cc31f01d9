"""Forms of the browser chat: sign-up and a new assistant persona (sona)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from memory.models import Sona


class SignUpForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        fields = ("username",)


class SonaForm(forms.Form):
    name = forms.CharField(max_length=40, strip=True,
                           widget=forms.TextInput(attrs={"placeholder": "e.g. coach", "autocomplete": "off"}))
    profile = forms.CharField(
        max_length=600, required=False, strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Who is this assistant? e.g. A patient "
                                                                "running coach who plans training weeks."}))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Sona.objects.filter(user=self.user, name__iexact=name).exists():
            raise forms.ValidationError("You already have a persona with this name.")
        return name
