"""Prompts: the token ids of a prompt, wrapped in the model's chat template or not.

The template is the one stored in the GGUF (``tokenizer.chat_template``),
rendered with llama-cpp-python's ``Jinja2ChatFormatter`` as
``create_chat_completion`` would; the reply is what the grammar constrains.
"""

from __future__ import annotations

from typing import Any

from localgcd.errors import ModelError


def chat_template(llama: Any) -> str | None:
    """The GGUF's chat template (``tokenizer.chat_template``), if any."""
    meta = getattr(llama, "metadata", None) or {}
    return meta.get("tokenizer.chat_template") or None


def prompt_tokens(model: Any, prompt: str, chat: bool | None = None, system: str | None = None) -> list[int]:
    """The prompt's token ids for ``model`` (a :class:`~localgcd.llama.loading.LoadedModel`),
    wrapped in its chat template when ``chat`` (None: the model's default)."""
    llama = model.llama
    use_chat = model.chat if chat is None else chat
    if not use_chat:
        return list(llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=False))
    template = chat_template(llama)
    if template is None:
        raise ModelError(f"model {model.spec.name!r} has no chat template in its GGUF; use --no-chat")
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token_text(tok: int) -> str:
        if tok < 0:
            return ""
        return llama.detokenize([tok], special=True).decode("utf-8", errors="replace")

    messages = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    try:
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama.token_eos()),
            bos_token=token_text(llama.token_bos()),
            add_generation_prompt=True,
        )
        rendered = formatter(messages=messages)
    except Exception as exc:  # jinja2 errors, raise_exception() in templates
        raise ModelError(f"model {model.spec.name!r}: its chat template failed: {exc}; use --no-chat") from None
    # The template writes BOS itself when the model wants one (added_special).
    return list(llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True))
