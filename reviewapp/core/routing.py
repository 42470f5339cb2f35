"""Routing helpers shared by the API modules."""

from django.views.decorators.csrf import csrf_exempt


def by_method(**views):
    """Serve one URL with one APIView per operation, chosen by the HTTP method."""
    handlers = {method.upper(): view.as_view() for method, view in views.items()}
    if "GET" in handlers:
        handlers.setdefault("HEAD", handlers["GET"])
    # Any other method (OPTIONS included) is answered by one of the views, with the methods of the whole URL.
    fallback = next(iter(handlers.values()))
    allowed = ", ".join([*handlers, "OPTIONS"])

    @csrf_exempt  # as APIView.as_view(): session-authenticated writes are still CSRF-checked by DRF
    def view(request, *args, **kwargs):
        handler = handlers.get(request.method)
        if handler is not None:
            return handler(request, *args, **kwargs)
        response = fallback(request, *args, **kwargs)
        response["Allow"] = allowed
        return response

    # The API's schema documents each method with its own view (reviewapp.core.schema).
    view.views_by_method = {method.upper(): cls for method, cls in views.items()}  # type: ignore[attr-defined]
    return view
