"""The rooms of docs/architecture.md hold: the import-linter contracts pass, and they catch a forbidden import; no
import hides inside a function to get around a circle; every reference to a section of the docs resolves."""

import ast
import re
import shutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path
from typing import get_type_hints

import pytest

from reviewapp.core.errors import ServiceError

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reviewapp", "screening", "literature")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def tree_copy(tmp_path):
    """The three packages and the contracts, copied, so a test can add an import the rooms forbid."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def add_import(tree: Path, module: str, statement: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{statement}  # noqa\n")


def test_the_rooms_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "statement", "contract"),
    [
        ("reviewapp.core.errors", "from screening.models import Run", "The shared core imports no room"),
        ("screening.services.progress", "from reviewapp.benchmarks import models", "Rooms depend one way"),
        ("screening.llm.providers.transport", "from screening.models import Run", "Rooms depend one way"),
        ("reviewapp.models", "from reviewapp.services import jobs", "Review room"),
        ("reviewapp.services.accounts", "from reviewapp import admin", "Review room"),
        ("reviewapp.admin", "from screening.models import Run", "Rooms depend one way"),
        ("reviewapp.inspiration.services", "from screening.llm import simulator", "simulated model server"),
        ("reviewapp.panel.services.common", "from screening.services import work", "through the model calls"),
        ("reviewapp.benchmarks.views", "from reviewapp.views import analysis", "page helpers of the core"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(tree_copy, module, statement, contract):
    add_import(tree_copy, module, statement)
    result = lint_imports(tree_copy)
    assert result.returncode == 1
    broken_section = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken_section, result.stdout


# Imports a function may make: an app's ready() (registering its receivers and tasks once the registry is ready) and
# optional or slow libraries that most requests never need.
DEFERRED_IMPORTS_ALLOWED = ("matplotlib", "sentence_transformers")


def function_level_imports(path: Path) -> list[str]:
    found = []
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or function.name == "ready":
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                if module.split(".")[0] not in DEFERRED_IMPORTS_ALLOWED:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {module}")
    return found


def test_no_import_hides_inside_a_function():
    found = [
        line
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for line in function_level_imports(path)
    ]
    assert found == []


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def doc_anchors(path: Path) -> set[str]:
    return {github_anchor(line.lstrip("#")) for line in path.read_text().splitlines() if re.match(r"#+ ", line)}


def test_every_reference_to_a_docs_section_resolves():
    anchors = {path.name: doc_anchors(path) for path in (ROOT / "docs").glob("*.md")}
    sources = [ROOT / "README.md", *(ROOT / "benchmarks").rglob("*.md"), *(ROOT / "docs").glob("*.md")]
    for folder in (*PACKAGES, "templates", "benchmarks", "tests", "static/js"):
        sources += [path for path in (ROOT / folder).rglob("*") if path.suffix in {".py", ".html", ".js", ".md"}]
    references = []
    for path in sources:
        text = path.read_text()
        references += [(path, name, anchor) for name, anchor in re.findall(r"docs/(\w+\.md)#([\w-]+)", text)]
        if path.parent.name == "docs":  # links between the docs are relative
            references += [(path, name, anchor) for name, anchor in re.findall(r"\((\w+\.md)#([\w-]+)\)", text)]
    assert len(references) > 50
    unresolved = [
        f"{path.relative_to(ROOT)}: {name}#{anchor}"
        for path, name, anchor in references
        if anchor not in anchors.get(name, set())
    ]
    assert unresolved == []


def services_modules() -> list[Path]:
    """Every services module: `services.py` or a module of a `services` package, in each room."""
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and (path.name == "services.py" or path.parent.name == "services")
    )


def test_services_raise_only_service_errors():
    """docs/architecture.md, "Inside a room": a refusal is a ServiceError (pages and the API answer it in one shape),
    never Django's PermissionDenied or a ValueError. Each exception a services module raises by name is one (or a
    function's that returns one)."""
    raised = []
    for path in services_modules():
        module = import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = ast.unparse(node.exc.func)
                error = eval(name, vars(module))  # a name or attribute the module itself resolves
                if not isinstance(error, type):  # a function that makes the error: by its declared return type
                    error = get_type_hints(error).get("return")
                if not (isinstance(error, type) and issubclass(error, ServiceError)):
                    raised.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert len(services_modules()) > 10
    assert raised == []


# What only a model's manager, a queryset or the shortcuts over them answer. A page or an API view that calls one reads
# or writes the database itself instead of through a selector or a service. (`get`, `values`, `count`, `first` are
# also dict, list or file methods, so they are left out: the names below have no other meaning in these modules.)
QUERYSET_METHODS = {
    "objects",
    "select_related",
    "prefetch_related",
    "annotate",
    "aggregate",
    "order_by",
    "values_list",
    "filter",
    "exclude",
    "only",
    "defer",
    "distinct",
    "get_or_create",
    "update_or_create",
    "bulk_create",
    "bulk_update",
    "in_bulk",
    "raw",
}
QUERY_SHORTCUTS = {"get_object_or_404", "get_list_or_404"}


def view_modules() -> list[Path]:
    """Every page and API module: `views.py`, `api.py` (and `views_*`, `api_*`) or a module of a `views` or `api`
    package, in each room."""
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
        and (path.stem.split("_")[0] in ("views", "api") or path.parent.name in ("views", "api"))
    )


def direct_queries(source: str) -> list[str]:
    """Where a module's code queries the database itself, line by line: a manager (`X.objects`), a queryset method,
    a shortcut, or a count or existence test asked without arguments (a list's or a string's count takes one)."""
    found: dict[int, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in QUERYSET_METHODS:
            found.setdefault(node.lineno, set()).add(f".{node.attr}")
        elif isinstance(node, ast.Name) and node.id in QUERY_SHORTCUTS:
            found.setdefault(node.lineno, set()).add(node.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("count", "exists")
            and not node.args
            and not node.keywords
        ):
            found.setdefault(node.lineno, set()).add(f".{node.func.attr}()")
    return [f"{line} {' '.join(sorted(names))}" for line, names in sorted(found.items())]


def test_the_scan_finds_a_direct_query():
    source = (
        "from django.shortcuts import get_object_or_404\n"
        "def page(request, pk):\n"
        "    cohort = get_object_or_404(Cohort, pk=pk)\n"
        "    return list(cohort.assignments.filter(reviewer=request.user)), Cohort.objects.all()\n"
    )
    assert direct_queries(source) == ["3 get_object_or_404", "4 .filter .objects"]
    assert direct_queries("rows.count('x')\nnames = dict(a=1).get('a')\nkept = filter(None, rows)\n") == []
    assert direct_queries("n = cohort.proposals.count()\n") == ["1 .count()"]


def test_pages_and_the_api_read_through_selectors():
    """docs/architecture.md, "Inside a room": pages and the API validate and call services or selectors; no view
    queries the database itself."""
    found = [
        f"{path.relative_to(ROOT)}:{where}" for path in view_modules() for where in direct_queries(path.read_text())
    ]
    assert len(view_modules()) > 15
    assert found == []
