"""Loading a config imports no model code, as BART's: a saved folder's config, loaded with ``trust_remote_code=True``
where the package is not installed, imports only the config module and the torch-free modules it reads (the axes'
names and descriptions in axes.py), never a module that imports torch."""

import re
from pathlib import Path

from child_process import run_child
from hf_bahdanau import BahdanauConfig

MODELING = Path(__file__).resolve().parents[1] / "hf_bahdanau" / "modeling"

LOAD_CONFIG = """
import json
import sys

from transformers import AutoConfig

torch_by_transformers = "torch" in sys.modules  # transformers 5.20 to 5.24 import torch themselves
config = AutoConfig.from_pretrained(sys.argv[1], trust_remote_code=True)
package = type(config).__module__.rpartition(".")[0]
print(json.dumps(dict(
    siblings=sorted(name.rpartition(".")[2] for name in sys.modules if name.startswith(package + ".")),
    torch_by_transformers=torch_by_transformers, torch="torch" in sys.modules,
    hf_bahdanau=[name for name in sys.modules if name.startswith("hf_bahdanau")],
    attention_type=config.attention_type,
)))
"""


def imports_torch(module: str) -> bool:
    return re.search(r"^(import|from) torch\b", (MODELING / f"{module}.py").read_text(), flags=re.MULTILINE) is not None


def test_a_saved_config_loads_with_remote_code_importing_no_model_code(tmp_path):
    config = BahdanauConfig(attention_type="general")
    config.register_for_auto_class()
    config.save_pretrained(tmp_path / "folder")  # with the code of every head in auto_map, as a model's folder
    assert {"attention", "decoder", "modeling_bahdanau"} <= {path.stem for path in (tmp_path / "folder").glob("*.py")}
    child = run_child(LOAD_CONFIG, tmp_path, str(tmp_path / "folder"), isolated=True, hide_package=True)
    assert child["attention_type"] == "general" and child["hf_bahdanau"] == []
    assert child["siblings"] == ["axes", "configuration_bahdanau", "registry", "remote_code"]
    assert [module for module in child["siblings"] if imports_torch(module)] == []
    assert imports_torch("attention") and imports_torch("decoder")  # the check above can see a torch import
    if not child["torch_by_transformers"]:
        assert not child["torch"]
