"""Forms of the browser chat: sign-up, a new sona (the assistant's voice), the user's profile."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils import timezone

from memory.recall.base import default_policy_name, get_policy, policy_names
from memory.selectors.sonas import sona_name_taken
from memory.services.users import SONA_NAME_MAX_CHARS, SONA_PROFILE_MAX_CHARS


class SignUpForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        fields = ("username",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A refused sign-up keeps what was typed: retyping two passwords to fix a username is a chore.
        for name in ("password1", "password2"):
            self.fields[name].widget.render_value = True

    def _post_clean(self) -> None:
        """Django files what is wrong with the password under its confirmation; it belongs under the
        password (only "the two do not match" stays with the confirmation)."""
        super()._post_clean()
        if "password2" not in self._errors:
            return
        errors = self._errors["password2"].as_data()
        about_password = [e for e in errors if e.code != "password_mismatch"]
        if about_password:
            self._errors.setdefault("password1", self.error_class()).extend(about_password)
            kept = [e for e in errors if e.code == "password_mismatch"]
            if kept:
                self._errors["password2"] = self.error_class(kept)
            else:
                del self._errors["password2"]


class SonaForm(forms.Form):
    name = forms.CharField(max_length=SONA_NAME_MAX_CHARS, strip=True,
                           widget=forms.TextInput(attrs={"placeholder": "e.g. coach", "autocomplete": "off"}))
    profile = forms.CharField(
        max_length=SONA_PROFILE_MAX_CHARS, required=False, strip=True,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Who is this assistant? e.g. A patient "
                                                                "running coach who plans training weeks."}))

    recall_policy = forms.ChoiceField(required=False, label="How it recalls")

    def __init__(self, *args, user, **kwargs):
        kwargs.setdefault("auto_id", "sona_%s")  # the chat page also holds the profile card's "name"
        super().__init__(*args, **kwargs)
        self.user = user
        self.fields["recall_policy"].choices = [("", f"default ({default_policy_name()})")] + [
            (name, f"{name}: {get_policy(name).title}") for name in policy_names()]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if sona_name_taken(user=self.user, name=name):
            raise forms.ValidationError("You already have a sona with this name.")
        return name


class ProfileForm(forms.Form):
    name = forms.CharField(max_length=120, strip=True, label="What should I call you?",
                           widget=forms.TextInput(attrs={"autocomplete": "given-name",
                                                         "placeholder": "Your name"}))
    gender = forms.CharField(max_length=40, required=False, strip=True, label="Gender (optional)",
                             widget=forms.TextInput(attrs={"list": "gender-options", "autocomplete": "off"}))
    birth_year = forms.IntegerField(required=False, label="Birth year (optional)",
                                    widget=forms.NumberInput(attrs={"placeholder": "e.g. 1990", "min": 1900}))

    def clean_birth_year(self) -> int | None:
        year = self.cleaned_data["birth_year"]
        this_year = timezone.now().year
        if year is not None and not 1900 <= year <= this_year:
            raise forms.ValidationError(f"Enter a year between 1900 and {this_year}.")
        return year
