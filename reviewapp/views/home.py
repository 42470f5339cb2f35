from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import path

from reviewapp.core import roles


def home(request):
    """Send each role to where its work is; a visitor without an account sees where to go."""
    if not request.user.is_authenticated:
        return render(request, "home.html")
    if roles.can_read_all(request.user):
        return redirect("cohort-list")
    if roles.can_review(request.user):
        return redirect("review-queue")
    return redirect("password_change")


def favicon(request):
    """Pages link their icon; this answers browsers asking for the icon of a page without a link (the admin's)."""
    return redirect(static("favicon-32.png"), permanent=True)


urlpatterns = [path("", home, name="home"), path("favicon.ico", favicon, name="favicon")]
