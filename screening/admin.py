"""Endpoints and rosters are edited in the Django admin; calls are read-only. Keys never appear: only the name of
the environment variable that holds each one."""

import json

from django.contrib import admin
from django.utils.html import format_html

from screening.llm.models import ModelCall, ModelEndpoint, Roster, RosterMember


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = [
        "display_name",
        "company",
        "protocol",
        "model_id",
        "api_key_env",
        "concurrency_limit",
        "is_simulated",
        "enabled",
    ]
    list_filter = ["protocol", "is_simulated", "enabled"]
    search_fields = ["display_name", "company", "model_id"]
    fieldsets = [
        (None, {"fields": ["display_name", "company", "enabled", "is_simulated"]}),
        ("Wire protocol", {"fields": ["protocol", "base_url", "model_id", "api_key_env", "timeout_seconds"]}),
        (
            "Request",
            {
                "fields": [
                    "max_tokens",
                    "max_tokens_field",
                    "system_role",
                    "supports_json_mode",
                    "accepts_temperature",
                    "temperature",
                    "is_grok",
                ]
            },
        ),
        ("Concurrency across all workers", {"fields": ["concurrency_limit"]}),
    ]


class RosterMemberInline(admin.TabularInline):
    model = RosterMember
    extra = 1
    autocomplete_fields = ["endpoint"]


@admin.register(Roster)
class RosterAdmin(admin.ModelAdmin):
    list_display = ["name", "is_default", "created_at"]
    inlines = [RosterMemberInline]


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "endpoint",
        "purpose",
        "run",
        "protocol_attempt",
        "transport_attempt",
        "http_status",
        "usable",
        "latency_ms",
        "simulated",
    ]
    list_filter = ["purpose", "usable", "simulated", "http_status", "endpoint"]
    list_select_related = ["endpoint", "run"]
    search_fields = ["request_sha256", "error"]
    readonly_fields = ["request_body_pretty"]
    exclude = ["request_body"]

    @admin.display(description="request body")
    def request_body_pretty(self, call):
        return format_html("<pre>{}</pre>", json.dumps(call.request_body, ensure_ascii=False, indent=2))

    # Records of what was sent and answered are evidence: nobody edits or adds them by hand.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
