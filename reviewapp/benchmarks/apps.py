from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "reviewapp.benchmarks"
    label = "benchmarks"
    verbose_name = "Benchmark sets"

    def ready(self):
        # Plugs the room into the rooms below it: the judging background job, and the screening pipeline's hook
        # that tells a set its run's hypotheses are pooled (screening.hooks).
        from reviewapp.benchmarks import receivers  # noqa: F401
