from django import forms


class ApproveForm(forms.Form):
    """Posts back exactly the version and fingerprint the reviewer was shown."""

    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    fingerprint = forms.RegexField(regex=r"^[0-9a-f]{64}$", max_length=64,
                                   widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=2000,
                           widget=forms.Textarea(attrs={"rows": 2}))


class RejectForm(forms.Form):
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=2000,
                           widget=forms.Textarea(attrs={"rows": 2}))
