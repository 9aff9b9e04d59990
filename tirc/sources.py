"""Reading what `tirc compile` is given: a benchmark-convention `.py` file, a
`.py` file with an entry function, a `.pt2` file saved by torch.export.save,
or a `.tir` dump (with the inputs `--save-inputs` saved beside it)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import logging
import os
import pickle
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import torch

from ir_text import Input, Module, TircError, first_line, parse, to_torch

from .files import read_text


@dataclass
class Program:
    """A program to compile: what capture traces, its flat example inputs,
    where it came from."""

    fn: object  # a function, an nn.Module, or a torch.export ExportedProgram
    inputs: list
    name: str
    path: str
    loss: object = None  # the file's loss(outputs, inputs), for --train

    def to(self, device: str) -> None:
        """Move the program's state and inputs to `device`."""
        self.inputs = [x.to(device) for x in self.inputs]
        if isinstance(self.fn, torch.nn.Module):
            self.fn = self.fn.to(device)
        elif isinstance(self.fn, torch.export.ExportedProgram):
            state = list(self.fn.state_dict.values()) + list(self.fn.constants.values())
            if any(isinstance(t, torch.Tensor) and t.device.type != device for t in state):
                from torch.export.passes import move_to_device_pass

                self.fn = move_to_device_pass(self.fn, device)

    def eager(self, inputs: list):
        """Run the program in eager PyTorch on flat inputs (the reference of `--check`)."""
        if isinstance(self.fn, torch.export.ExportedProgram):
            args, kwargs = torch.utils._pytree.tree_unflatten(inputs, self.fn.call_spec.in_spec)
            return self.fn.module()(*args, **kwargs)
        return self.fn(*inputs)


def _user_error(path: Path, err: BaseException) -> TircError:
    """An exception raised by the user's code, located at its deepest frame in `path`."""
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    text = str(err).strip().splitlines()
    message = f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
    return TircError(message, str(path), line)


def load_dump(path: str) -> Module:
    return parse(read_text(path), path)


def load_python(path: str, entry: str | None = None, train: bool = False) -> Program:
    """The program of a benchmark-convention file: its Model (in eval mode,
    or training mode for `train`) or its `entry` function, and get_inputs()."""
    file = Path(path)
    read_text(path)  # a clear error for a missing or unreadable file
    # Programs draw parameters and inputs from torch's generator: a fixed seed
    # makes two compiles of one file see the same values (and `--save-inputs`
    # write the same files).
    torch.manual_seed(0)
    spec = importlib.util.spec_from_file_location(f"tirc_source_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise TircError("cannot be imported as Python", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    # As `python model.py` does: the file's own directory comes first on the
    # path, so that it imports the modules beside it.
    directory = str(file.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise TircError(f"syntax error: {err.msg}", path, err.lineno, err.offset) from None
    except SystemExit as err:
        raise TircError(f"the program called sys.exit({err.code!r}) while it was loaded", path) from None
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
            if not callable(model_class):
                raise TircError(f"Model is a {type(model_class).__name__}, not a class", path)
            init = getattr(module, "get_init_inputs", lambda: [])()
            fn = model_class(*init)
            if isinstance(fn, torch.nn.Module):
                fn = fn.train(train)
        returned = module.get_inputs()
        if isinstance(returned, torch.Tensor) or not isinstance(returned, (list, tuple)):
            raise TircError(
                f"get_inputs() returned a {type(returned).__name__}; it must return a list of tensors", path
            )
        inputs = list(returned)
    except TircError:
        raise
    except Exception as err:
        raise _user_error(file, err) from None
    for k, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TircError(f"get_inputs() item {k} is a {type(x).__name__}, not a tensor", path)
        if x.device.type == "meta":
            raise TircError(f"get_inputs() item {k} is on the meta device (it has no values)", path)
    loss = getattr(module, "loss", None) if train else None
    if loss is not None and not callable(loss):
        raise TircError(
            f"loss is a {type(loss).__name__}; --train takes a function loss(outputs, inputs)", path
        )
    return Program(fn, inputs, file.name, str(file), loss)


# torch.export.load unpickles a .pt2's pickled weights and constants with
# weights_only=False, and plain pickle.loads for opaque objects: an
# unpickler runs whatever the file names. A .pt2 file is untrusted input.
_WEIGHTS_ONLY = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"


@contextlib.contextmanager
def data_only_unpickling():
    """torch.load reads tensors and plain data only (torch's weights-only
    unpickler, forced over a caller's weights_only=False), and pickle's own
    load/loads refuse, while the block runs."""

    def refuse(*args, **kwargs):
        raise pickle.UnpicklingError(
            "tirc reads no pickled objects from a file (only tensors and plain data)"
        )

    saved = os.environ.get(_WEIGHTS_ONLY)
    os.environ[_WEIGHTS_ONLY] = "1"
    try:
        with mock.patch.object(pickle, "loads", refuse), mock.patch.object(pickle, "load", refuse):
            yield
    finally:
        if saved is None:
            del os.environ[_WEIGHTS_ONLY]
        else:
            os.environ[_WEIGHTS_ONLY] = saved


@contextlib.contextmanager
def _quiet_export_log():
    """torch.export.load logs a traceback when a file does not deserialize,
    then raises; the one-line error that tirc makes of it says it all."""
    logger = logging.getLogger("torch.export")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def load_exported(path: str) -> Program:
    """A `.pt2` file saved by torch.export.save, with the example inputs it keeps."""
    file = Path(path)
    if not file.is_file():
        raise TircError("no such file" if not file.exists() else "is a directory, not a file", path)
    try:
        with warnings.catch_warnings():
            # Notices torch gives about its own loading code (deprecations,
            # read-only buffers), which the user can do nothing about.
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", UserWarning)
            with data_only_unpickling(), _quiet_export_log():
                ep = torch.export.load(str(file))
    except Exception as err:
        # The warnings torch points to are the log _quiet_export_log silenced.
        text = first_line(err).replace(" Please check the warnings above for possible errors.", "")
        raise TircError(
            f"cannot load it with torch.export.load: {type(err).__name__}: {text}", path
        ) from None
    example = getattr(ep, "example_inputs", None)
    if example is None:
        raise TircError(
            "the exported program holds no example inputs (save it with a torch that keeps them)", path
        )
    args, kwargs = example
    # Flatten in the order of the program's input spec: keyword arguments in
    # the order of its dict (read off a skeleton, with APIs every torch has).
    in_spec = ep.call_spec.in_spec
    _, order = torch.utils._pytree.tree_unflatten(list(range(in_spec.num_leaves)), in_spec)
    if set(order) == set(kwargs):
        kwargs = {name: kwargs[name] for name in order}
    flat, spec = torch.utils._pytree.tree_flatten((tuple(args), kwargs))
    if spec != in_spec:
        raise TircError("the example inputs do not have the structure the exported program takes", path)
    for k, x in enumerate(flat):
        if not isinstance(x, torch.Tensor):
            raise TircError(f"example input {k} is a {type(x).__name__}; tirc takes tensor inputs", path)
    return Program(ep, list(flat), file.name, str(file))


# ---- inputs saved by `--save-inputs`: DIR/inputs/<sha256>.pt beside the dumps


def saved_input_file(dump_path: str | Path, sha256: str) -> Path:
    return Path(dump_path).parent / "inputs" / f"{sha256}.pt"


def read_saved_input(dump_path: str, inp: Input) -> bytes:
    """The bytes of an input's saved file, checked against the sha256 the dump records."""
    file = saved_input_file(dump_path, inp.sha256)
    where = f"input %{inp.value.hint}"
    line, col = inp.pos or (None, None)
    rel = f"inputs/{inp.sha256}.pt"
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise TircError(f"{where}: the saved input {rel} is missing", dump_path, line, col) from None
    except OSError as err:
        raise TircError(f"{where}: cannot read {rel}: {err.strerror or err}", dump_path, line, col) from None
    if hashlib.sha256(data).hexdigest() != inp.sha256:
        raise TircError(
            f"{where}: {rel} does not match its sha256 (the file was changed)", dump_path, line, col
        )
    return data


def load_saved_input(dump_path: str, inp: Input) -> torch.Tensor:
    """An input saved by `--save-inputs`: checked, laid out as the header says, on its device."""
    data = read_saved_input(dump_path, inp)
    line, col = inp.pos or (None, None)
    t = inp.value.type
    try:
        tensor = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as err:
        raise TircError(
            f"input %{inp.value.hint}: cannot load inputs/{inp.sha256}.pt: {type(err).__name__}",
            dump_path,
            line,
            col,
        ) from None
    if isinstance(tensor, torch.Tensor) and tensor.device.type == "meta":
        raise TircError(
            f"input %{inp.value.hint}: inputs/{inp.sha256}.pt holds a meta tensor, which has no values",
            dump_path,
            line,
            col,
        )
    want = (to_torch(t.dtype), tuple(t.shape), tuple(t.strides))
    # Only a plain strided tensor has strides to compare (a sparse CSR or
    # nested tensor raises when asked for them).
    plain = type(tensor) is torch.Tensor and tensor.layout == torch.strided and not tensor.is_nested
    got = (tensor.dtype, tuple(tensor.shape), tuple(tensor.stride())) if plain else None
    if got != want:
        raise TircError(
            f"input %{inp.value.hint}: inputs/{inp.sha256}.pt does not hold a tensor of the input's"
            " dtype, shape and strides",
            dump_path,
            line,
            col,
        )
    device = "cuda" if inp.device.startswith("cuda") else inp.device
    # As codegen's random_input: the flat storage moved, then viewed with the strides.
    flat = tensor.as_strided((t.storage_size,), (1,))
    return flat.to(device).as_strided(t.shape, t.strides)
