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

from reviewapp.core.errors import NotFound, ServiceError
from reviewapp.core.requests import BoundedJSONParser, client_address
from reviewapp.core.roles import CanReadAll
from screening import selectors
from screening.models import Run, Translation
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


def _validated(serializer_class, data: dict) -> dict:
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        names = ", ".join(sorted(serializer.errors))
        raise ServiceError(f"These fields are missing or of the wrong type: {names}.", code="invalid_body")
    return serializer.validated_data


def _check_lengths(values: dict) -> None:
    question, background = values["question"], values.get("background") or ""
    if len(question) < QUESTION_MIN:
        raise ServiceError(f"The question needs at least {QUESTION_MIN} characters.", code="question_too_short")
    if len(question) > QUESTION_MAX:
        raise ServiceError(f"The question may have at most {QUESTION_MAX} characters.", code="question_too_long")
    if len(background) > BACKGROUND_MAX:
        raise ServiceError(f"The background may have at most {BACKGROUND_MAX} characters.", code="background_too_long")


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


class RunCreateApi(APIView):
    """POST /api/v1/open-hypothesis/runs"""

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [BoundedJSONParser]

    class InputSerializer(serializers.Serializer):
        question = StrictCharField(allow_blank=True)
        background = StrictCharField(required=False, allow_blank=True, allow_null=True)
        language = serializers.ChoiceField(choices=Run.Language.values, required=False)

    def post(self, request):
        values = _validated(self.InputSerializer, _read_body(request))
        _check_lengths(values)
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
            "created_at": run.created_at.isoformat(),
            "updated_at": run.updated_at.isoformat(),
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


def _get_run(run_id) -> Run:
    run = selectors.run_get(run_id)
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
    the run's updated_at first, so a change made by any worker is served at once everywhere."""

    authentication_classes = []
    permission_classes = [AllowAny]

    def get(self, request, run_id):
        language = request.query_params.get("lang") or Run.Language.EN
        if language not in Run.Language.values:
            raise ServiceError("lang must be en or ru.", code="invalid_body")
        version = selectors.run_version(run_id)
        if version is None:
            raise NotFound("There is no run with this id.")
        public_id, updated_at = version
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
    """GET /api/v1/open-hypothesis/runs/<id>/calls: every recorded model call (coordinators and analysts)."""

    permission_classes = [IsAuthenticated, CanReadAll]

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
        run = _get_run(run_id)
        calls = self.OutputSerializer(selectors.run_calls(run), many=True).data
        return Response({"id": str(run.public_id), "calls": calls})
