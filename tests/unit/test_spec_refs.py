"""References into docs/spec.md resolve, and nothing cites the rationale anywhere else
(docs/spec.md#spec-citations).

The spec is the one place a maintainer opens to learn why the code does what it does, so every
reference into it must name an anchor it defines (``<a id="...">``), and the old citations — of a
specification section by number, of an issue, of a planning document — must not come back: none
of those documents is in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "docs" / "spec.md").is_file())

# What is scanned: everything a maintainer reads, tests and their fixtures included.
SCANNED = [
    "evals",
    "docs",
    "tests",
    "benchmarks",
    "examples",
    ".github",
    ".ci",
    "README.md",
    "CONTRIBUTING.md",
    "action.yml",
    "pyproject.toml",
]
SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
MAX_BYTES = 5_000_000  # larger files are recorded data, never prose

ANCHOR = re.compile(r'<a id="([A-Za-z0-9_-]+)"></a>')
REFERENCE = re.compile(r"spec\.md#([A-Za-z0-9_-]*)")
# Written so that this file does not match itself: a section sign right after the word, an issue
# number, a seed document's number.
OLD_CITATIONS = {
    "a section of the old specification": re.compile(r"\bSPEC\s*(?:#\s*)?\u00a7|\bSPEC's\b"),
    "an issue number": re.compile(r"\bissue \d", re.IGNORECASE),
    "a seed document": re.compile(r"\bseed 0{2}\d", re.IGNORECASE),
}


def text_files(root: Path):
    for name in SCANNED:
        top = root / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in candidates:
            if not path.is_file() or SKIP_DIRS & set(path.relative_to(root).parts):
                continue
            if path.stat().st_size > MAX_BYTES:
                continue
            try:
                yield path, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # binary fixtures (zips, gzip)


def spec_anchors(root: Path) -> set[str]:
    return set(ANCHOR.findall((root / "docs" / "spec.md").read_text(encoding="utf-8")))


def problems(root: Path) -> list[str]:
    """Every dangling reference and every old-style citation under root, as `file:line: what`."""
    anchors = spec_anchors(root)
    found = []
    for path, text in text_files(root):
        rel = path.relative_to(root)
        for match in REFERENCE.finditer(text):
            if match.group(1) not in anchors:
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{rel}:{line}: no anchor {match.group(1)!r} in docs/spec.md")
        for what, pattern in OLD_CITATIONS.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{rel}:{line}: cites {what} ({match.group(0)!r}): cite an anchor of docs/spec.md instead")
    return found


def test_every_spec_reference_resolves_and_no_old_citation_is_left():
    assert problems(ROOT) == []


def test_the_repository_does_cite_the_spec():
    # Guards the scan itself: a pattern or a path list gone wrong would find nothing and pass.
    cited = {m for _, text in text_files(ROOT) for m in REFERENCE.findall(text)}
    assert {"exit-codes", "decision-rule", "results-format", "more-evidence"} <= cited
    assert len(cited) > 40


def test_every_heading_of_the_spec_has_its_own_anchor():
    spec = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    headings = [line for line in spec.splitlines() if line.startswith("#")]
    assert headings and all(ANCHOR.search(line) for line in headings), [
        line for line in headings if not ANCHOR.search(line)
    ]
    ids = ANCHOR.findall(spec)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    # Anchors name topics, not numbers, so that a section can move without breaking a reference.
    assert not [i for i in ids if re.fullmatch(r"[\d-]+|s?\d.*", i)]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "spec.md").write_text('# Spec <a id="spec"></a>\n## Exit codes <a id="exit-codes"></a>\n')
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_reference_to_a_missing_anchor_or_an_old_citation_is_found(tmp_path):
    section = "SPEC \N{SECTION SIGN}9"
    root = _tree(
        tmp_path,
        {
            "evals/cli/run.py": f'"""Exit codes (docs/spec.md#exit-codes); the rest ({section})."""\n',
            "docs/running.md": "The runner ([spec](spec.md" + "#runer)) retries.\n",
            "tests/unit/test_x.py": "# the shapes of " + "iss" + "ue 20\n",
            "benchmarks/sim.py": "# (" + "seed" + " 003)\n",
            "README.md": "[contract](docs/spec.md#exit-codes)\n",
        },
    )

    found = problems(root)

    assert len(found) == 4, found
    assert any(p.startswith("docs/running.md:1: no anchor 'runer' in docs/spec.md") for p in found)
    assert any(p.startswith("evals/cli/run.py:1: cites a section of the old specification") for p in found)
    assert any(p.startswith("tests/unit/test_x.py:1: cites an issue number") for p in found)
    assert any(p.startswith("benchmarks/sim.py:1: cites a seed document") for p in found)


@pytest.mark.parametrize("good", ["docs/spec.md#exit-codes", "[spec](spec.md#spec)", "../../docs/spec.md#exit-codes"])
def test_a_reference_to_an_existing_anchor_passes(tmp_path, good):
    assert problems(_tree(tmp_path, {"evals/x.py": f"# {good}\n"})) == []
