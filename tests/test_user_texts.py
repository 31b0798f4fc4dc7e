"""Texts users read name what they point at: the papers behind a model (in the model card's words), and test files
that exist (in the package's and the scripts' docstrings)."""

import re
from pathlib import Path

from hf_bahdanau.modeling.configuration_bahdanau import AXES
from hf_bahdanau.modeling.token_attention import describe_token_attention, token_attention_types

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(REPO / "hf_bahdanau").rglob("*.py"), *(REPO / "training").rglob("*.py"),
                  REPO / "README.md"])
NAMED_TEST_FILE = re.compile(r"\btests/[\w/]+\.(?:py|md)\b")


def test_every_test_file_the_code_and_readme_name_exists():
    named = {(source.relative_to(REPO).as_posix(), name) for source in SOURCES
             for name in NAMED_TEST_FILE.findall(source.read_text())}
    assert len(named) >= 5  # the scan finds what it looks for
    assert sorted((source, name) for source, name in named if not (REPO / name).exists()) == []


def test_model_card_descriptions_name_papers_not_internal_source_numbers():
    descriptions = [describe_token_attention(name) for name in token_attention_types()]
    descriptions += [registry.describe(value) for registry in AXES for value in registry.allowed]
    assert [text for text in descriptions if re.search(r"\bseeds?\b", text, flags=re.IGNORECASE)] == []
    assert "Yang et al. 2016" in describe_token_attention("context_vector")
