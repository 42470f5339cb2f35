"""Request rates that hold across every worker on every machine.

Each limit is one database row holding when the next request may start. A worker locks the row, books the next
free turn (no earlier than now, spaced 1/rate after the previous booking), commits and sleeps until its turn: a
token bucket holding one token, so no burst ever exceeds the published rate. Time is read from the database
server's clock, the one clock all workers share. Call it outside any transaction, or the row stays locked.
"""

import time

from django.db import IntegrityError, connection, transaction

from literature.models import SourceRateLimit


def wait_for_turn(name: str, per_second: float) -> float:
    """Book the next request of the limit `name`, sleep until it is due, and return the seconds waited."""
    interval = 1.0 / per_second
    with transaction.atomic():
        row = SourceRateLimit.objects.select_for_update().filter(name=name).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = SourceRateLimit.objects.create(name=name)
            except IntegrityError:  # another worker created it first
                row = SourceRateLimit.objects.select_for_update().get(name=name)
        now = database_clock()
        turn = max(now, row.next_request_at)
        SourceRateLimit.objects.filter(pk=row.pk).update(next_request_at=turn + interval)
    wait = turn - now
    if wait > 0:
        time.sleep(wait)
    return max(0.0, wait)


def database_clock() -> float:
    """Seconds since the epoch by the database server (clock_timestamp, not the transaction's frozen now())."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())")
            return float(cursor.fetchone()[0])
    return time.time()  # SQLite lives on this machine: its clock is ours
