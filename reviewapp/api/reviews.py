"""Input of the review form: the protocol's questions as one input declaration, for every way a review is written.

Each question is a field built from the protocol's own scales (docs/protocol.md#blinded-review-form); a refused value
gets one sentence naming the question and its scale, the sentence the review page shows beside the question.

Refusal order: a review that may not be written at all (someone else's, a closed cohort) is refused for that first,
by the service's own check, before any of its values; a writable review with values out of the scales is refused with
every refused question named, and nothing is written.
"""

from rest_framework import serializers

from reviewapp import protocol
from reviewapp.core.text import control_character_problem
from reviewapp.services.reviews import MAX_TEXT_LENGTH, ReviewInvalid, review_check_writable

_OVERALL_VALUES = [value for value, *_ in protocol.OVERALL_SCALE]
_RECOMMENDATIONS = [key for key, *_ in protocol.RECOMMENDATIONS]
_FLAW_VERDICTS = [key for key, *_ in protocol.FLAW_VERDICTS]


def _with_label(label: str, sentence: str) -> str:
    """'The main flaw holds the control character …': the label, then the sentence of the text check."""
    return f"{label} {sentence[0].lower()}{sentence[1:]}"


class _Answer(serializers.Field):
    """One question's answer: "" (or null) is "not answered yet", which a draft may keep."""

    def __init__(self, **options):
        super().__init__(required=False, allow_null=True, **options)

    def validate_empty_values(self, data):
        if data is None:
            return False, ""  # not answered: to_internal_value decides what "unanswered" is stored as
        return super().validate_empty_values(data)

    def to_representation(self, value):
        return value


class OverallField(_Answer):
    """Overall research value: a whole number of the scale, or None when unanswered."""

    def run_validation(self, data=serializers.empty):
        value = super().run_validation(data)
        return None if value == "" else value

    def to_internal_value(self, data):
        if data == "":
            return ""
        if str(data).strip().isdigit() and int(data) in _OVERALL_VALUES:
            return int(data)
        raise serializers.ValidationError(f"Overall research value must be a whole number from 1 to 5, not {data!r}.")


class ChoiceAnswerField(_Answer):
    """A choice among the protocol's keys, stored as the key ("" when unanswered)."""

    def __init__(self, *, choices: list[str], refusal: str, **options):
        self.keys = choices
        self.refusal = refusal
        super().__init__(**options)

    def to_internal_value(self, data):
        if str(data) in ("", *self.keys):
            return str(data)
        raise serializers.ValidationError(f"{self.refusal}, not {data!r}.")


class ChecklistField(_Answer):
    """The flaw checklist: items of the protocol's list, kept in the protocol's order."""

    def to_internal_value(self, data):
        if not isinstance(data, list | tuple):
            raise serializers.ValidationError("The flaw checklist must be a list of checklist items.")
        if unknown := [item for item in data if item not in protocol.FLAW_CHECKLIST_KEYS]:
            raise serializers.ValidationError(f"The flaw checklist has unknown items: {', '.join(map(str, unknown))}.")
        return [key for key in protocol.FLAW_CHECKLIST_KEYS if key in data]


class ReviewTextField(_Answer):
    """Free text of the review, with the label its refusals name."""

    def __init__(self, *, text_label: str, **options):
        self.text_label = text_label
        super().__init__(**options)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError(f"{self.text_label} must be text.")
        if len(data) > MAX_TEXT_LENGTH:
            raise serializers.ValidationError(f"{self.text_label} is longer than {MAX_TEXT_LENGTH} characters.")
        if problem := control_character_problem(data):
            raise serializers.ValidationError(_with_label(self.text_label, problem))
        return data


def _criterion(label: str) -> ChoiceAnswerField:
    return ChoiceAnswerField(
        choices=protocol.CRITERION_VALUES, refusal=f"{label} must be 1, 2, 3, 4 or {protocol.CANT_JUDGE!r}"
    )


class ReviewAnswersInput(serializers.Serializer):
    """The answers to change (absent questions are kept), checked against the protocol's scales."""

    overall = OverallField()
    recommendation = ChoiceAnswerField(
        choices=_RECOMMENDATIONS, refusal=f"Recommendation must be one of {', '.join(_RECOMMENDATIONS)}"
    )
    flaw_verdict = ChoiceAnswerField(
        choices=_FLAW_VERDICTS, refusal=f"The design-flaw verdict must be one of {', '.join(_FLAW_VERDICTS)}"
    )
    flaw_checklist = ChecklistField()
    main_flaw = ReviewTextField(text_label="The main flaw")
    comments = ReviewTextField(text_label="Comments")

    def get_fields(self):
        fields = super().get_fields()
        # One field per criterion of the protocol, named and labelled as the protocol names them.
        for field, label, *_ in protocol.CRITERIA:
            fields[field] = _criterion(label)
        return fields


class DeferReasonField(serializers.Field):
    """Why the reviewer skips a proposal for now, trimmed; the coordinator reads it."""

    def to_internal_value(self, data):
        reason = data.strip() if isinstance(data, str) else ""
        if not reason:
            raise serializers.ValidationError("Say why you are skipping this proposal; the coordinator reads it.")
        if len(reason) > MAX_TEXT_LENGTH:
            raise serializers.ValidationError(f"The reason is longer than {MAX_TEXT_LENGTH} characters.")
        if problem := control_character_problem(reason):
            raise serializers.ValidationError(_with_label("The reason", problem))
        return reason

    def to_representation(self, value):
        return value


class DeferInput(serializers.Serializer):
    deferred_reason = DeferReasonField(
        error_messages={"required": "Say why you are skipping this proposal; the coordinator reads it."}
    )


def _refusals(declaration, data: dict) -> tuple[dict, dict[str, str]]:
    """(validated values, field → the first sentence refusing it), refusals in the order the fields were sent; a field
    the declaration does not have is refused."""
    serializer = declaration(data=data)
    valid = serializer.is_valid()
    refusals: dict[str, str] = {}
    for name in data:
        if name not in serializer.fields:
            refusals[name] = f"{name!r} is not a question of the review form."
        elif not valid and name in serializer.errors:
            refusals[name] = str(serializer.errors[name][0])
    for name, messages in (serializer.errors if not valid else {}).items():
        refusals.setdefault(name, str(messages[0]))
    return (serializer.validated_data if valid else {}), refusals


def validated_answers(data: dict, *, assignment, reviewer) -> dict:
    """The answers of `data` as the review records them (model field → typed value). Raises the service's refusal of
    this reviewer writing this review first (ReviewForbidden, ReviewLocked), else ReviewInvalid naming each refused
    question."""
    values, refusals = _refusals(ReviewAnswersInput, data)
    if refusals:
        review_check_writable(assignment=assignment, reviewer=reviewer)
        raise ReviewInvalid(refusals)
    return dict(values)


def validated_defer_reason(data: dict, *, assignment, reviewer) -> str:
    """The reason for skipping in `data`, trimmed; refusals in the same order as `validated_answers`."""
    values, refusals = _refusals(DeferInput, data)
    if refusals:
        review_check_writable(assignment=assignment, reviewer=reviewer)
        raise ReviewInvalid(refusals)
    return values["deferred_reason"]
