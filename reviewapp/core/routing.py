"""Routing helpers shared by the API modules."""

from django.views.decorators.csrf import csrf_exempt


def by_method(**views):
    """Serve one URL with one APIView per operation, chosen by the HTTP method."""
    handlers = {method.upper(): view.as_view() for method, view in views.items()}
    fallback = next(iter(handlers.values()))  # answers 405 for any other method

    @csrf_exempt  # as APIView.as_view(): session-authenticated writes are still CSRF-checked by DRF
    def view(request, *args, **kwargs):
        return handlers.get(request.method, fallback)(request, *args, **kwargs)

    # The API's schema documents each method with its own view (reviewapp.core.schema).
    view.views_by_method = {method.upper(): cls for method, cls in views.items()}  # type: ignore[attr-defined]
    return view
