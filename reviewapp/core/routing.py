"""Routing helpers shared by the API modules."""

from django.views.decorators.csrf import csrf_exempt


def by_method(**views):
    """Serve one URL with one APIView per operation, chosen by the HTTP method."""
    handlers = {method.upper(): view.as_view() for method, view in views.items()}
    fallback = next(iter(handlers.values()))  # answers 405 for any other method

    @csrf_exempt  # as APIView.as_view(): session-authenticated writes are still CSRF-checked by DRF
    def view(request, *args, **kwargs):
        return handlers.get(request.method, fallback)(request, *args, **kwargs)

    return view
