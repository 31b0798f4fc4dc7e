"""The model code: exactly the modules a saved model folder carries for ``trust_remote_code=True`` (transformers
copies a model class's module and every module it imports relatively; tests/test_hub.py checks that the set is this
folder). One flat folder, siblings imported as ``from .module import Name``, nothing imported from outside it but
torch, transformers and huggingface_hub. Read top-down: heads (``modeling_*.py``) → decoder / encoder → attention →
primitives; docs/architecture.md has the map.
"""
