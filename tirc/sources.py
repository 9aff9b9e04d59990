"""Reading what `tirc compile` is given: a benchmark-convention `.py` file, a
`.py` file with an entry function, or a `.tir` dump."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import torch

from ir_text import Module, TircError, parse


@dataclass
class Program:
    """A Python program to compile: the callable, its inputs, where it came from."""

    fn: object
    inputs: list
    name: str
    path: str


def _user_error(path: Path, err: BaseException) -> TircError:
    """An exception raised by the user's code, located at its deepest frame in `path`."""
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    text = str(err).strip().splitlines()
    message = f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
    return TircError(message, str(path), line)


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise TircError("no such file", path) from None
    except IsADirectoryError:
        raise TircError("is a directory, not a file", path) from None
    except UnicodeDecodeError:
        raise TircError("not a text file", path) from None
    except OSError as err:
        raise TircError(err.strerror or str(err), path) from None


def load_dump(path: str) -> Module:
    return parse(read_text(path), path)


def load_python(path: str, entry: str | None = None) -> Program:
    file = Path(path)
    read_text(path)  # a clear error for a missing or unreadable file
    spec = importlib.util.spec_from_file_location(f"tirc_source_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise TircError("cannot be imported as Python", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise TircError(f"syntax error: {err.msg}", path, err.lineno, err.offset) from None
    except Exception as err:
        raise _user_error(file, err) from None
    if not callable(getattr(module, "get_inputs", None)):
        raise TircError("no get_inputs() function (the benchmark convention needs one)", path)
    try:
        if entry is not None:
            fn = getattr(module, entry, None)
            if not callable(fn):
                raise TircError(f"no function '{entry}' (named by --entry)", path)
        else:
            model_class = getattr(module, "Model", None)
            if model_class is None:
                raise TircError("no class Model (or name a function with --entry)", path)
            init = getattr(module, "get_init_inputs", lambda: [])()
            fn = model_class(*init)
            if isinstance(fn, torch.nn.Module):
                fn = fn.eval()
        inputs = list(module.get_inputs())
    except TircError:
        raise
    except Exception as err:
        raise _user_error(file, err) from None
    for k, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TircError(f"get_inputs() item {k} is a {type(x).__name__}, not a tensor", path)
    return Program(fn, inputs, file.name, str(file))
