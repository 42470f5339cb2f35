"""The public Open Hypothesis API (docs/protocol.md#public-api): start a run, screen the client's own hypotheses,
read a run.

No key and no sign-in: these views authenticate nobody (so no session, and no CSRF check) and are rate-limited by the
run limits instead. Only the recorded calls of a run need a coordinator or analyst.
"""

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from rest_framework import serializers, status
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from reviewapp.core.errors import InputInvalid, NotFound, ServiceError, validated, validated_query
from reviewapp.core.paging import PageFilter, page_data
from reviewapp.core.requests import BoundedJSONParser, client_address
from reviewapp.core.roles import CanReadAll
from reviewapp.core.throttling import AnonymousPollThrottle
from screening import selectors
from screening.measured import MEASURED_SELECTION
from screening.models import PROTOCOL, Run, Translation
from screening.services.runs import ClientHypothesis, run_body_store, run_create

QUESTION_MIN, QUESTION_MAX, BACKGROUND_MAX = 10, 2000, 8000
HYPOTHESES_MAX = 100
HYPOTHESIS_FIELD_MAX = 4000


class StrictCharField(serializers.CharField):
    """Text only: DRF's CharField would turn a number or a boolean into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ClientHypothesisSerializer(serializers.Serializer):
    statement = StrictCharField(max_length=HYPOTHESIS_FIELD_MAX)
    mechanism = StrictCharField(max_length=HYPOTHESIS_FIELD_MAX)
    prediction = StrictCharField(max_length=HYPOTHESIS_FIELD_MAX)


def _read_body(request) -> dict:
    try:
        data = request.data
    except (ParseError, UnsupportedMediaType):
        raise ServiceError("The body must be a JSON object.", code="invalid_body") from None
    if not isinstance(data, dict):
        raise ServiceError("The body must be a JSON object.", code="invalid_body")
    return data


# The public API's codes for a length outside the limits (docs/protocol.md#public-api); any other problem of the body
# is invalid_body.
_LENGTH_CODES = {
    ("question", "blank"): "question_too_short",
    ("question", "min_length"): "question_too_short",
    ("question", "max_length"): "question_too_long",
    ("background", "max_length"): "background_too_long",
}


def _public_values(declaration, data: dict) -> dict:
    """The body checked against the view's input declaration, refused with the public API's documented codes."""
    try:
        return validated(declaration, data)
    except InputInvalid as error:
        invalid = error
        problems = error.fields
    codes = {
        name: [_LENGTH_CODES.get((name, getattr(problem, "code", None))) for problem in found]
        if isinstance(found, list)
        else [None]
        for name, found in problems.items()
    }
    wrong = sorted(name for name, found in codes.items() if None in found)
    if wrong:
        raise ServiceError(
            f"These fields are not valid: {', '.join(wrong)}.",
            code="invalid_body",
            problems=[found for found in invalid.problems if found.get("field", "").split(".")[0] in wrong],
        )
    name = next(name for name in ("question", "background") if name in codes)
    raise ServiceError(str(problems[name][0]), code=codes[name][0])


def _start(request, values: dict, hypotheses=None) -> Response:
    run = run_create(
        question=values["question"],
        background=values.get("background") or "",
        language=values.get("language") or Run.Language.EN,
        client_address=client_address(request.META),
        hypotheses=hypotheses,
    )

    poll = request.build_absolute_uri(reverse("open-hypothesis-api-run", args=[run.public_id]))
    body = {
        "id": str(run.public_id),
        "status": run.status,
        "protocol": run.protocol,
        "url": request.build_absolute_uri(reverse("open-hypothesis-run", args=[run.public_id])),
        "poll": poll,
        "poll_interval_seconds": settings.OPEN_HYPOTHESIS_POLL_SECONDS,
    }
    if run.simulated:
        body["simulated"] = True
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": poll})


class RunStartedSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.CharField()
    protocol = serializers.CharField()
    url = serializers.CharField(help_text="the run's page for people")
    poll = serializers.CharField(help_text="the run's address in this API (also the Location header)")
    poll_interval_seconds = serializers.IntegerField()
    simulated = serializers.BooleanField(required=False, help_text="present (true) when simulated models answer")


class RunCreateApi(APIView):
    """POST /api/v1/open-hypothesis/runs"""

    OutputSerializer = RunStartedSerializer
    success_status = 202
    error_codes = {
        400: ("question_too_short", "question_too_long", "background_too_long"),
        429: ("client_limit", "daily_cap"),
        503: ("queue_full", "not_configured", "queue_unavailable"),
    }

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [BoundedJSONParser]

    class InputSerializer(serializers.Serializer):
        """Also the run page's declaration (screening.views.run_start). Surrounding whitespace does not count."""

        question = StrictCharField(
            min_length=QUESTION_MIN,
            max_length=QUESTION_MAX,
            error_messages={
                "blank": f"The question needs at least {QUESTION_MIN} characters.",
                "min_length": f"The question needs at least {QUESTION_MIN} characters.",
                "max_length": f"The question may have at most {QUESTION_MAX} characters.",
            },
        )
        background = StrictCharField(
            required=False,
            allow_blank=True,
            allow_null=True,
            max_length=BACKGROUND_MAX,
            error_messages={"max_length": f"The background may have at most {BACKGROUND_MAX} characters."},
        )
        language = serializers.ChoiceField(choices=Run.Language.choices, required=False)

    def post(self, request):
        values = _public_values(self.InputSerializer, _read_body(request))
        return _start(request, values, self.client_hypotheses(values))

    def client_hypotheses(self, values: dict) -> list[ClientHypothesis] | None:
        """The client's own hypotheses to screen; None: the roster's generators write them."""
        return None


class ScreeningCreateApi(RunCreateApi):
    """POST /api/v1/open-hypothesis/screenings: the protocol applied to the client's own hypotheses."""

    class InputSerializer(RunCreateApi.InputSerializer):
        hypotheses = serializers.ListField(child=ClientHypothesisSerializer(), min_length=1, max_length=HYPOTHESES_MAX)

    def client_hypotheses(self, values: dict) -> list[ClientHypothesis] | None:
        return [ClientHypothesis(**item) for item in values["hypotheses"]]


# A step's states (screening.selectors.run_step_states).
STEP_STATES = ("pending", "running", "completed", "failed", "skipped")


class RunDocument(serializers.Serializer):
    """The fields of a run as RunOutputSerializer writes them (the API's schema reads this)."""

    class Hypothesis(serializers.Serializer):
        class Literature(serializers.Serializer):
            verdict = serializers.CharField(allow_null=True)
            evidence = serializers.CharField()

            class Reference(serializers.Serializer):
                source = serializers.CharField()
                id = serializers.CharField()
                title = serializers.CharField()
                year = serializers.IntegerField(allow_null=True)
                link = serializers.CharField()

            reference = Reference(allow_null=True, help_text="the reference that reports the hypothesis, if any")

        label = serializers.CharField(allow_null=True, help_text="H1…Hn once pooled")
        author_name = serializers.CharField()
        statement = serializers.CharField()
        mechanism = serializers.CharField()
        prediction = serializers.CharField()
        forecasts = serializers.DictField(
            child=serializers.BooleanField(allow_null=True),
            help_text="forecasting model → its answer: true, false or null (no vote)",
        )
        stage1 = serializers.CharField(allow_null=True)
        selected = serializers.BooleanField(allow_null=True)
        delivered = serializers.BooleanField(allow_null=True)
        literature = Literature()
        simulated = serializers.BooleanField(required=False)

    class TranslationState(serializers.Serializer):
        language = serializers.CharField()
        state = serializers.CharField()

    id = serializers.CharField()
    status = serializers.CharField()
    protocol = serializers.CharField()
    question = serializers.CharField()
    background = serializers.CharField()
    language = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    class Steps(serializers.Serializer):
        generate = serializers.ChoiceField(choices=STEP_STATES)
        stage1 = serializers.ChoiceField(choices=STEP_STATES)
        stage2 = serializers.ChoiceField(choices=STEP_STATES)
        novelty = serializers.ChoiceField(choices=STEP_STATES)

    class Counts(serializers.Serializer):
        generated = serializers.IntegerField()
        discarded = serializers.IntegerField()
        kept = serializers.IntegerField()
        selected = serializers.IntegerField()
        delivered = serializers.IntegerField()

    steps = Steps(help_text="each step's state")
    counts = Counts(help_text="hypotheses at each step")
    hypotheses = Hypothesis(many=True)
    simulated = serializers.BooleanField(required=False)
    translation = TranslationState(required=False)


class RunOutputSerializer(serializers.Serializer):
    """A run with the fields docs/protocol.md#reading-a-run names. Built from a run, its hypotheses (with prefetched
    forecasts) and, for ?lang=ru, its translation."""

    def to_representation(self, instance):
        run, hypotheses, translation = instance["run"], instance["hypotheses"], instance.get("translation")
        rendered = translation.hypotheses if translation is not None and translation.state == "ready" else {}
        body = {
            "id": str(run.public_id),
            "status": run.status,
            "protocol": run.protocol,
            "question": run.question,
            "background": run.background,
            "language": run.language,
            "created_at": run.created_at.isoformat(timespec="seconds"),
            "updated_at": run.updated_at.isoformat(timespec="seconds"),
            "steps": selectors.run_step_states(run),
            "counts": selectors.run_counts(hypotheses),
            "hypotheses": [_hypothesis(h, rendered.get(h.label)) for h in hypotheses],
        }
        if run.simulated:
            body["simulated"] = True
        if "translation_state" in instance:
            body["translation"] = {"language": instance["language"], "state": instance["translation_state"]}
        return body


def _hypothesis(hypothesis, rendered: dict | None) -> dict:
    text = rendered or {
        "statement": hypothesis.statement,
        "mechanism": hypothesis.mechanism,
        "prediction": hypothesis.prediction,
    }
    body = {
        "label": hypothesis.label or None,
        "author_name": hypothesis.author_name,
        "statement": text["statement"],
        "mechanism": text["mechanism"],
        "prediction": text["prediction"],
        "forecasts": selectors.hypothesis_forecasts(hypothesis),
        "stage1": hypothesis.stage1 or None,
        "selected": hypothesis.selected,
        "delivered": hypothesis.delivered,
        "literature": {
            "verdict": hypothesis.literature_verdict or None,
            "evidence": hypothesis.literature_evidence,
            "reference": hypothesis.literature_reference,
        },
    }
    if hypothesis.author_simulated:
        body["simulated"] = True
    return body


def run_representation(run: Run, language: str | None = None) -> dict:
    """The API's body for a run; language "ru" renders the translation when it is ready."""
    instance = {"run": run, "hypotheses": selectors.run_hypotheses(run)}
    if language and language != Run.Language.EN:
        instance["language"] = language
        instance["translation"] = selectors.run_translation(run, language)
        instance["translation_state"] = selectors.run_translation_state(run, language)
    return RunOutputSerializer(instance).data


def _get_run(run_id, user) -> Run:
    run = selectors.run_get(run_id, user)
    if run is None:
        raise NotFound("There is no run with this id.")
    return run


class _FinishedBodies:
    """The bodies of finished runs this process has served, each with the run's updated_at it belongs to. It is
    consulted only after the run's current updated_at has been read from the database, so a body is served only
    while it is the run's current one, whichever process changed the run."""

    LIMIT = 256

    def __init__(self):
        self.bodies: dict[tuple, tuple] = {}

    def get(self, key: tuple, updated_at) -> bytes | None:
        found = self.bodies.get(key)
        return found[1] if found is not None and found[0] == updated_at else None

    def put(self, key: tuple, updated_at, body: bytes) -> None:
        if len(self.bodies) >= self.LIMIT:
            self.bodies.clear()
        self.bodies[key] = (updated_at, body)


_finished_bodies = _FinishedBodies()


class RunDetailApi(APIView):
    """GET /api/v1/open-hypothesis/runs/<id>[?lang=ru]

    A finished run hardly ever changes, and clients poll it: its rendered body is stored in the database the first
    time it is asked for (see RunBody) and remembered by each process for the run's updated_at; every request reads
    the run's updated_at first, so a change made by any worker is served at once everywhere.

    A public run is anyone's; any other run (a benchmark set's) only a coordinator's or an analyst's (signed in or by
    token): to anyone else it is unknown (404). Anonymous polls are throttled per client address (429 with
    Retry-After, reviewapp.core.throttling)."""

    permission_classes = [AllowAny]
    throttle_classes = [AnonymousPollThrottle]
    error_codes = {429: ("throttled",)}

    class FilterSerializer(serializers.Serializer):
        lang = serializers.ChoiceField(choices=Run.Language.values, required=False)

    OutputSerializer = RunDocument

    def get(self, request, run_id):
        language = Run.Language.EN
        if request.query_params:  # most polls carry none: the check is skipped for them
            language = validated_query(self.FilterSerializer, request.query_params).get("lang") or language
        version = selectors.run_version(run_id)
        if version is None or not selectors.run_readable(public=version[2], user=request.user):
            raise NotFound("There is no run with this id.")
        public_id, updated_at, _ = version
        body = _finished_bodies.get((public_id, language), updated_at)
        if body is None:
            body = self._body(run_id, language)
        return HttpResponse(body, content_type="application/json")

    @staticmethod
    def _body(run_id, language: str) -> bytes:
        run = selectors.run_with_stored_body(run_id, language)
        if run is None:
            raise NotFound("There is no run with this id.")
        if run.stored_body is not None:
            body = bytes(run.stored_body)
        else:
            representation = run_representation(run, None if language == Run.Language.EN else language)
            body = JSONRenderer().render(representation)
            translation_state = representation.get("translation", {}).get("state")
            if not run.is_finished or translation_state == Translation.State.PENDING:
                return body
            run_body_store(run=run, language=language, body=body)
        _finished_bodies.put((run.public_id, language), run.updated_at, body)
        return body


class RunCallsApi(APIView):
    """GET /api/v1/open-hypothesis/runs/<id>/calls: the recorded model calls in the order made, a page at a time
    (coordinators and analysts). Each call holds the provider's request and reply whole: a run's calls together run to
    hundreds of kilobytes."""

    permission_classes = [IsAuthenticated, CanReadAll]
    FilterSerializer = PageFilter
    paged = True

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        purpose = serializers.CharField()
        endpoint = serializers.CharField(source="endpoint.display_name")
        model_id = serializers.CharField()
        url = serializers.CharField()
        protocol_attempt = serializers.IntegerField()
        transport_attempt = serializers.IntegerField()
        request_body = serializers.JSONField()
        request_sha256 = serializers.CharField()
        response_body = serializers.CharField()
        http_status = serializers.IntegerField(allow_null=True)
        finish_reason = serializers.CharField()
        usable = serializers.BooleanField()
        latency_ms = serializers.IntegerField(allow_null=True)
        input_tokens = serializers.IntegerField(allow_null=True)
        output_tokens = serializers.IntegerField(allow_null=True)
        tools_disabled = serializers.BooleanField()
        error = serializers.CharField()
        simulated = serializers.BooleanField()
        created_at = serializers.DateTimeField()

    def get(self, request, run_id):
        run = _get_run(run_id, request.user)
        return Response(page_data(self.OutputSerializer, selectors.run_calls(run), request.query_params))


class ProtocolApi(APIView):
    """GET /api/v1/open-hypothesis/protocol: what the protocol does and what its selection has been worth where it was
    measured, with the caveat (docs/protocol.md#two-stages)."""

    authentication_classes = []
    permission_classes = [AllowAny]

    class OutputSerializer(serializers.Serializer):
        class MeasuredSerializer(serializers.Serializer):
            class PrecisionSerializer(serializers.Serializer):
                generator = serializers.CharField()
                matches = serializers.IntegerField(help_text="selected hypotheses that matched the article's finding")
                selected = serializers.IntegerField()
                percent = serializers.IntegerField()

            class RangeSerializer(serializers.Serializer):
                low = serializers.IntegerField()
                high = serializers.IntegerField()

            class RosterSerializer(serializers.Serializer):
                stage1 = serializers.ListField(child=serializers.CharField())
                stage2 = serializers.ListField(child=serializers.CharField())

            benchmark = serializers.CharField(help_text="where the rule was measured")
            selection = PrecisionSerializer(many=True)
            random_percent = RangeSerializer(help_text="matches among randomly chosen hypotheses, in percent")
            roster = RosterSerializer(help_text="the forecasting models it was measured with")
            summary = serializers.CharField()
            caveat = serializers.CharField()

        protocol = serializers.CharField()
        description = serializers.CharField()
        measured = MeasuredSerializer()
        roster_is_measured = serializers.BooleanField(help_text="whether this service forecasts with that roster")

    def get(self, request):
        measured = MEASURED_SELECTION
        default = selectors.default_roster_forecasters()
        return Response(
            self.OutputSerializer(
                {
                    "protocol": PROTOCOL,
                    "description": PROTOCOL_DESCRIPTION,
                    "measured": {
                        "benchmark": measured.benchmark,
                        "selection": [
                            {
                                "generator": p.generator,
                                "matches": p.matches,
                                "selected": p.selected,
                                "percent": p.percent,
                            }
                            for p in measured.precision
                        ],
                        "random_percent": {"low": measured.random_percent[0], "high": measured.random_percent[1]},
                        "roster": {"stage1": list(measured.stage1), "stage2": list(measured.stage2)},
                        "summary": measured.sentence,
                        "caveat": measured.caveat,
                    },
                    "roster_is_measured": measured.holds_for(default),
                }
            ).data
        )


PROTOCOL_DESCRIPTION = (
    "Four models propose ten hypotheses each. The hypotheses are pooled, shuffled and numbered H1, H2, ..., so no "
    "forecasting model sees who wrote which. The stage-1 model answers for every hypothesis whether an experiment "
    "will confirm it; every hypothesis it answers no is discarded. The stage-2 models answer the same question about "
    "the kept hypotheses; a hypothesis is selected when all of them answer yes. Each selected hypothesis is then "
    "compared with the published literature, and delivered unless an article already reports it or its opposite."
)
