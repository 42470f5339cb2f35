"""Answers typed from frozen dataclasses: a serializer whose fields, and the /api/v1/schema components of every
dataclass it nests, come from the dataclasses' annotations (djangorestframework-dataclasses, read by drf-spectacular).

For answers computed as dataclasses (statistics, analyses): the annotations are the contract, so they must be the
real types: ``float | None`` where a value can be undefined, ``tuple[X, ...]`` for a list, ``dict[str, X]`` for a
genuine map (free keys). tests/test_api_typed_answers.py checks real answers against the schema.
"""

from rest_framework_dataclasses.serializers import DataclassSerializer


class DataclassAnswerSerializer(DataclassSerializer):
    # Every field is in every answer (dataclasses.asdict writes them all), so a field with a default is still a
    # required property of the answer; nested dataclasses are typed the same way.
    @property
    def serializer_dataclass_field(self):
        return DataclassAnswerSerializer

    def build_typed_field(self, field_name, type_info, extra_kwargs):
        field_class, field_kwargs = super().build_typed_field(field_name, type_info, extra_kwargs)
        field_kwargs.pop("required", None)
        return field_class, field_kwargs
