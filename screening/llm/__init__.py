"""The model-calling layer: model endpoints and rosters, one `complete()` over the providers' wire protocols with
every HTTP attempt recorded, and the defensive reading of replies. The screening pipeline, the literature check, the
benchmark judges and any other room call models through this interface only; nothing here knows who calls.

- `complete(endpoint=, system=, user=, purpose=, ...)` → Completion (never raises for a provider's problem);
  `request_seed(endpoint)`: the sampling seed its requests carry (None: none)
- `ask_twice(parse, ...)`: a request with the protocol's one "ask once more" when the reply is not read as complete
- `simulated_server_configuration(base_url)`: what a simulated model server reports about itself (None: not one)
- `extract_json`, `normalize_label`, `ReplyParseError`: reading a reply
- `roster_endpoint(role)`: the default roster's first enabled endpoint for a role
- the records: screening.llm.models (ModelEndpoint, Roster, RosterMember, ModelCall, EndpointSlot)
"""

from screening.llm.asking import ask_twice
from screening.llm.providers import Completion, complete, request_seed, simulated_server_configuration
from screening.llm.replies import ReplyParseError, extract_json, normalize_label
from screening.llm.selectors import roster_endpoint

__all__ = [
    "Completion",
    "ReplyParseError",
    "ask_twice",
    "complete",
    "extract_json",
    "normalize_label",
    "request_seed",
    "roster_endpoint",
    "simulated_server_configuration",
]
