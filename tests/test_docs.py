"""The README and docs/ as a reader meets them: the first screen, links that resolve inside the repository, files
and configs the commands name that exist, and CI running the README's own test command."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")  # [text](target) and ![alt](target)
WRITTEN_BY_COMMANDS = {  # what a documented command writes
    "benchmarks/results.json",
    *(f"training/data/{corpus}/{split}.jsonl" for corpus in ("g2p", "g2p-no-stress", "de-en", "bible-es-en")
      for split in ("train", "validation", "test")),
}
REPO_PATH = re.compile(r"(?<![\w/.-])((?:training|benchmarks|docs|tests|model_cards|hf_bahdanau)/[\w./{}-]+\.(?:py|jsonl|json|md|png|sh))(?!\w)")


def bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL)]


def test_readme_fits_the_first_screen_rule():
    text = README.read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert len(text.splitlines()) <= 250
    assert headings[:2] == ["## Quick start", "## Presets"]
    main_job, tests = bash_blocks(text)[:2]
    assert "training/run_seq2seq.py training/configs/dates_rnnsearch.json" in main_job
    assert tests.endswith("python -m pytest -n 2 --dist worksteal")


def test_ci_runs_the_readme_test_command():
    tests_command = bash_blocks(README.read_text())[1].removeprefix("python3 -m venv .venv && ")
    assert tests_command in (REPO / ".ci" / "run").read_text()


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_links_and_named_files_exist_in_the_repository(doc):
    text = doc.read_text()
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        assert (doc.parent / target).resolve().is_relative_to(REPO), f"{doc.name} links outside the repo: {target}"
        assert (doc.parent / target).exists(), f"{doc.name} links to a missing file: {target}"
    for path in REPO_PATH.findall(text):
        if "{" not in path and path not in WRITTEN_BY_COMMANDS:  # alignment_{0..3}.png: files of a run
            assert (REPO / path).exists(), f"{doc.name} names a missing file: {path}"
    assert "../shared" not in text and "seed 000" not in text


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_no_placeholders_are_left(doc):
    assert not re.search(r"\b[A-Z_]*_(?:TABLE|PENDING|OUTPUT|TIME|PARAMETERS)\b", doc.read_text())
