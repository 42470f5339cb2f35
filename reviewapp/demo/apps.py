from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "reviewapp.demo"
    label = "demo"
    verbose_name = "Demonstration data"

    def ready(self):
        # Connected after the benchmarks room's own receiver (its app is listed first), which records the pooled
        # hypotheses this one needs.
        from reviewapp.demo.work import demo_benchmark_pooled, demo_benchmark_selection_made
        from screening.hooks import run_pooled, run_selection_made

        run_pooled.connect(demo_benchmark_pooled, dispatch_uid="demo-benchmark-pooled")
        run_selection_made.connect(demo_benchmark_selection_made, dispatch_uid="demo-benchmark-selection-made")
