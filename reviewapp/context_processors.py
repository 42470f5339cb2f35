from reviewapp.core import roles as role_checks


def roles(request):
    user = request.user
    return {
        "user_can_review": role_checks.can_review(user),
        "user_can_coordinate": role_checks.can_coordinate(user),
        "user_can_read_all": role_checks.can_read_all(user),
    }
