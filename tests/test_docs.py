"""The README and docs/ as a reader meets them: the first screen, links that resolve inside the repository, files
and configs the commands name that exist, and CI running the README's own test command."""

import argparse
import importlib
import importlib.util
import json
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
from transformers import HfArgumentParser

import training.tasks

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
    assert main_job.endswith("python -m training seq2seq training/configs/dates_rnnsearch.json")
    assert "`python -m training --help` lists the tasks" in text.split("```bash")[0]  # said with the main job
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


# Commands of README.md's and docs/*.md's bash blocks that run our code: each names a script, module or task that
# exists, and passes only flags (and .json config keys) its parser accepts; the parser is the one the command builds,
# caught in-process when it parses (a pre-parse of a few flags with parse_known_args runs), so no data is read and
# nothing trains.
SEPARATORS = {"&&", "||", ";", "|", "&"}
SHELL_WORDS = {"do", "then", "else", "time", "exec"}  # may come before a command: `for ...; do python ...; done`
CONSOLE_SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


class ParserFound(Exception):
    """Raised instead of parsing: the parser a command built."""

    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


def shell_commands(block: str) -> list[list[str]]:
    """The simple commands of a bash block, as words (quotes removed, comments and leading keywords dropped)."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        command = []
        for word in [*lexer, ";"]:
            if word not in SEPARATORS:
                command.append(word)
                continue
            while command and (command[0] in SHELL_WORDS or re.fullmatch(r"[A-Z_]+=.*", command[0])):
                command.pop(0)  # keywords and VAR=value assignments
            if command:
                commands.append(command)
            command = []
    return commands


def entry_point(words: list[str]) -> tuple[str, list[str]] | None:
    """(what runs, its arguments) of a command that runs our code: ``python training/x.py`` -> the script's path;
    ``python -m training.x`` -> the module; ``torchrun``/``accelerate launch`` of either; a console script of
    pyproject.toml -> ``module:function``. None for any other command."""
    if words[0] in CONSOLE_SCRIPTS:
        return CONSOLE_SCRIPTS[words[0]], words[1:]
    if words[0] == "torchrun" or words[:2] == ["accelerate", "launch"]:
        start = next((index for index, word in enumerate(words) if word == "-m" or word.endswith(".py")), None)
        words = ["python", *words[start:]] if start is not None else words
    if words[0] not in ("python", "python3") or len(words) < 2:
        return None
    if words[1] == "-m" and words[2].split(".")[0] == "training":
        return words[2], words[3:]
    if words[1].startswith("training/"):
        return words[1], words[2:]
    return None


def documented_commands() -> list:
    """A pytest.param (doc, what runs, its arguments) per command of the docs' bash blocks that runs our code."""
    commands = [(doc, *found) for doc in DOCS for block in bash_blocks(doc.read_text())
                for command in shell_commands(block) if (found := entry_point(command))]
    return [pytest.param(*command, id=f"{command[0].name}-{number}-{command[1]}")
            for number, command in enumerate(commands)]


def documented_tasks(doc: Path) -> dict[str, str]:
    """The task files a doc shows whole (a python block defining ``TASK``, e.g. docs/training.md's toy task): name ->
    code."""
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), re.DOTALL)
    return {match.group(1): block for block in blocks if "\nTASK = " in block
            for match in [re.search(r'^    name = "([\w-]+)"$', block, re.MULTILINE)] if match}


def parser_of(target: str, arguments: list[str]) -> argparse.ArgumentParser | None:
    """The parser that ``target`` (a script's path, a module run as ``python -m``, or ``module:function``) builds for
    ``arguments``, from the ``main(argv)`` the command runs; None if it parses none (``python -m training --help``
    lists the tasks)."""
    if target.endswith(".py"):
        assert (REPO / target).is_file(), f"no script {target}"
        module = target.removesuffix(".py").replace("/", ".")
        # run as a file, a script finds the package `training` only through training/script_path.py (the run_*.py shims)
        assert "import script_path" in (REPO / target).read_text(), f"{target} runs as `python -m {module}`"
        target = module
    module, _, function = target.partition(":")
    assert importlib.util.find_spec(module) is not None, f"no module {module}"
    module = f"{module}.__main__" if module == "training" else module  # python -m training: a package
    main = getattr(importlib.import_module(module), function or "main")
    try:
        main(arguments)
    except ParserFound as found:
        return found.parser
    return None


@pytest.mark.parametrize(("doc", "target", "arguments"), documented_commands())
def test_every_documented_command_names_what_exists_and_passes_flags_its_parser_accepts(doc, target, arguments,
                                                                                       monkeypatch, tmp_path):
    def found(parser, *args, **kwargs):
        raise ParserFound(parser)

    for name in ("parse_args", "parse_intermixed_args"):  # a pre-parse of a few flags (parse_known_args) still runs
        monkeypatch.setattr(argparse.ArgumentParser, name, found)
    monkeypatch.setattr(HfArgumentParser, "parse_args_into_dataclasses", found)
    command = f"{doc.name}: `{target} {' '.join(arguments)}`"
    shown = documented_tasks(doc).get(arguments[0]) if target == "training" and arguments else None
    if shown:  # the doc's own task file, saved where the driver finds tasks
        module = arguments[0].replace("-", "_")
        (tmp_path / f"{module}.py").write_text(shown)
        monkeypatch.setattr(training.tasks, "__path__", [*training.tasks.__path__, str(tmp_path)])
    try:
        parser = parser_of(target, arguments)
    except SystemExit as error:
        pytest.fail(f"{command} exits ({error.code}) before parsing its flags")
    finally:
        if shown:
            sys.modules.pop(f"training.tasks.{module}", None)
    if parser is None:
        assert arguments[:1] in ([], ["--help"], ["-h"]), f"{command} parses nothing"
        return
    first = arguments[1:2] if target == "training" else arguments[:1]  # after the task: python -m training TASK
    config = [f"--{key}" for path in first if path.endswith(".json") for key in json.loads((REPO / path).read_text())]
    flags = [argument.split("=")[0] for argument in arguments if argument.startswith("--") and argument != "--"]
    unknown = [flag for flag in config + flags if flag not in parser._option_string_actions]  # every name it takes
    assert not unknown, f"{command} passes flags {parser.prog} does not take: {unknown}"
