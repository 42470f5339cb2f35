"""The Django admin's accounts: deactivating one there revokes its API tokens, as on the People page."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import User

from reviewapp.services.accounts import tokens_revoke_all


class UserAdmin(DjangoUserAdmin):
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "is_active" in form.changed_data and not obj.is_active:
            tokens_revoke_all(owner=obj)


admin.site.unregister(User)
admin.site.register(User, UserAdmin)
