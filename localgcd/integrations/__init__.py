"""localgcd inside other engines: vocabularies from Hugging Face tokenizers, and grammar backends.

- :mod:`localgcd.integrations.hf_vocabulary`: ``vocabulary_from_hf(tokenizer)``,
  a :class:`~localgcd.vocab.Vocabulary` from a ``tokenizers``/``transformers``
  tokenizer (no import of either at module level).
- :mod:`localgcd.integrations.sglang`: the ``localgcd`` grammar backend of SGLang
  (extra ``localgcd[sglang]``).
- :mod:`localgcd.integrations.vllm`: a vLLM logits processor enforcing a localgcd
  constraint per request (extra ``localgcd[vllm]``).

The core never imports this package (tests/test_architecture.py); the engine
modules import their engine at module level, so only a user of that engine
imports them.  This ``__init__`` imports nothing.
"""
