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


def prompt_tokens(model: Any, prompt: str, chat: bool | None = None, system: str | None = None,
                  template: str | None = None) -> list[int]:
    """The prompt's token ids for ``model`` (a :class:`~localgcd.llama.loading.LoadedModel`),
    wrapped in its chat template when ``chat`` (None: the model's default; yes when ``template``,
    a Jinja chat template that replaces the GGUF's, is given)."""
    llama = model.llama
    use_chat = (model.chat or template is not None) if chat is None else chat
    if not use_chat:
        if system is not None:  # it would silently vanish: a system message exists only in a chat
            why = ("--no-chat" if chat is False else "its GGUF has no chat template" if model.spec.chat is None
                   else "its models.toml entry says chat = false")
            raise ModelError(f"a system message needs the chat template, and model {model.spec.name!r} is used "
                             f"without one ({why})")
        if template is not None:
            raise ModelError("a chat template was given together with --no-chat")
        return list(llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=False))
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return chat_tokens(model, messages, template=template)


def chat_tokens(model: Any, messages: list[dict[str, Any]], template: str | None = None,
                tools: list[dict[str, Any]] | None = None) -> list[int]:
    """The token ids of ``messages`` (OpenAI's chat messages) rendered by ``model``'s chat template
    (or ``template``, a Jinja chat template that replaces the GGUF's) with the generation prompt
    after them; ``tools`` (OpenAI's tool definitions) are handed to the template as ``tools``."""
    llama = model.llama
    shown = "the given chat template" if template is not None else "its chat template"
    template = template if template is not None else chat_template(llama)
    if template is None:
        raise ModelError(f"model {model.spec.name!r} has no chat template in its GGUF; use --no-chat "
                         "or --chat-template FILE")
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token_text(tok: int) -> str:
        if tok < 0:
            return ""
        return llama.detokenize([tok], special=True).decode("utf-8", errors="replace")

    try:
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama.token_eos()),
            bos_token=token_text(llama.token_bos()),
            add_generation_prompt=True,
        )
        rendered = formatter(messages=messages, tools=tools)
    except Exception as exc:  # jinja2 errors, raise_exception() in templates
        reason = " ".join(str(exc).split())
        raise ModelError(f"model {model.spec.name!r}: {shown} failed: {reason}; use --no-chat") from None
    # The template writes BOS itself when the model wants one (added_special).
    return list(llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True))
