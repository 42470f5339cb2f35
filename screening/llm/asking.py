"""The protocol's one "ask once more" (docs/protocol.md#reading-replies), for every room that asks a model a question
whose reply it reads: the screening pipeline, the benchmark judges, the AI panel and the inspiration audit."""

from collections.abc import Callable

from screening.llm.providers import complete


def ask_twice(parse: Callable, *, after_reply: Callable[[], None] | None = None, **request):
    """One model request (complete()'s arguments) with the protocol's one "ask once more": a reply that parse(text)
    does not read as complete is asked again.

    Returns what parse read, or None when no usable reply was read at all (parse gives an object with `parsed` and
    `complete`), and the last call. after_reply runs after each reply arrives (a heartbeat)."""
    result, call = None, None
    for attempt in (1, 2):
        completion = complete(**request, protocol_attempt=attempt)
        if after_reply is not None:
            after_reply()
        result, call = (parse(completion.text) if completion.usable else None), completion.call
        if result is not None and result.complete:
            break
    return (result if result is not None and result.parsed else None), call
