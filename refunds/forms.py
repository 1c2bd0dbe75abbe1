from django import forms


class ApproveForm(forms.Form):
    """Posts back exactly the version and fingerprint the reviewer was shown."""

    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    fingerprint = forms.RegexField(regex=r"^[0-9a-f]{64}$", max_length=64, widget=forms.HiddenInput)
    note = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )


class RejectForm(forms.Form):
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    note = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )


class AdminDecisionForm(forms.Form):
    """What the admin confirmation page posts back: one note, and for each refund it listed the
    version (and, to approve, the fingerprint) it showed. A refund with nothing pending has no
    version on the page, so an empty one is valid here and refused per refund by the caller.

    Versions are ASCII digits only: str.isdigit() also passes "²", which int() refuses, and
    int() reads Arabic-Indic "٣" and the fullwidth digit three as 3. Each error reads on after
    "Nothing was approved: ".
    """

    note = forms.CharField(
        required=False,
        max_length=2000,
        error_messages={
            "null_characters_not_allowed": "the note may not contain NUL characters.",
            "max_length": "the note is longer than %(limit_value)d characters.",
        },
    )

    def __init__(self, data, *, refunds, with_fingerprint: bool):
        super().__init__(data)
        for refund in refunds:
            not_shown = (
                f"the version of refund {refund.request_id} was not the one shown. "
                "Reload and try again."
            )
            self.fields[f"version_{refund.pk}"] = forms.RegexField(
                regex=r"^[0-9]{1,9}$",
                required=False,
                error_messages={"invalid": not_shown, "null_characters_not_allowed": not_shown},
            )
            if with_fingerprint:
                other = (
                    f"the fingerprint of refund {refund.request_id} was not the one "
                    "shown. Reload and try again."
                )
                self.fields[f"fingerprint_{refund.pk}"] = forms.RegexField(
                    regex=r"^[0-9a-f]{64}$",
                    required=False,
                    error_messages={"invalid": other, "null_characters_not_allowed": other},
                )

    def version_of(self, refund) -> int | None:
        value = self.cleaned_data[f"version_{refund.pk}"]
        return int(value) if value else None

    def fingerprint_of(self, refund) -> str:
        return self.cleaned_data.get(f"fingerprint_{refund.pk}", "")
