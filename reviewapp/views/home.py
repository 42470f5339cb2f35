from django.shortcuts import redirect, render
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


urlpatterns = [path("", home, name="home")]
