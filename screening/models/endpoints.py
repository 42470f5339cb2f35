"""Model endpoints, rosters and recorded model calls."""
