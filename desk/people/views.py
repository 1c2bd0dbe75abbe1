"""/me/: a desk user's own name and signature as a form (DESIGN §19)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render

from config.roles import is_staff_member
from desk.people.api import NAME_MAX, SIGNATURE_MAX, MeSerializer
from tickets import people


@login_required
def me_page(request):
    """The same as a form; what was typed stays on the page when it is refused."""
    if not is_staff_member(request.user):
        raise PermissionDenied("Only desk staff have a name and signature on replies.")
    incoming = None
    if request.method == "POST":
        incoming = MeSerializer(
            data={
                "display_name": request.POST.get("display_name", ""),
                "signature": request.POST.get("signature", ""),
            }
        )
        if incoming.is_valid():
            people.profile_update(user=request.user, **incoming.validated_data)
            messages.success(request, "Saved: your next replies are signed this way.")
            return redirect("me")
    profile = people.profile_of(request.user)
    typed = incoming.initial_data if incoming is not None else {}
    return render(
        request,
        "tickets/me.html",
        {
            "display_name": typed.get("display_name", profile.display_name),
            "signature": typed.get("signature", profile.signature),
            "errors": incoming.errors if incoming is not None else {},
            "fallback_name": request.user.get_full_name().strip() or request.user.get_username(),
            "team_signature": people.team_signature(),
            "sign_off": people.sign_off(request.user),
            "name_max": NAME_MAX,
            "signature_max": SIGNATURE_MAX,
        },
    )
