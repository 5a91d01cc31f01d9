"""The user's static profile (the LPM user profile): a name, optionally gender and birth year."""

from __future__ import annotations

from django import forms
from django.utils import timezone


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
