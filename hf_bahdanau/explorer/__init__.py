"""The alignment explorer (``hf-bahdanau-explore``): one self-contained HTML page of a model's translations and their
attention matrices (``page``; its style and script are ``explore.css`` and ``explore.js``)."""
