"""Online literature sources (Europe PMC, NCBI E-utilities): cached, rate-limited across workers, retried."""
