"""Typed ``key=value`` overrides for config dataclasses (as nanoGPT's configurator, minus exec).

``apply_overrides(cfg, ["lr=0.05", "mix.noise.add=0.5"])`` returns a new frozen config:
each value is parsed by the type of the field it replaces, dotted keys reach nested
dataclasses, and an unknown key fails with the list of valid ones.  ``config_to_dict`` and
``config_from_dict`` round-trip configs through ``config.json``.  A config class may name other
spellings of its keys (``KEY_ALIASES``: old name -> dotted key), which ``--set`` accepts too.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

__all__ = ["add_set_argument", "apply_overrides", "check_distinct", "check_types", "config_from_dict", "config_keys",
           "config_to_dict", "parse_value"]

C = TypeVar("C")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def config_keys(cfg: Any, prefix: str = "") -> list[str]:
    """All dotted keys of a (nested) config dataclass instance."""
    keys = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            keys += config_keys(value, f"{prefix}{f.name}.")
        else:
            keys.append(prefix + f.name)
    return keys


def describe_keys(cfg: Any, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) of every dotted key of a config dataclass instance, for
    ``--list-keys``; the help is the field's comment in the class's source (on its line, else the
    comment lines just above it), so the dataclass stays the one place a key is documented."""
    rows = []
    comments = _field_comments(type(cfg))
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            rows += describe_keys(value, f"{prefix}{f.name}.")
        else:
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            rows.append((prefix + f.name, str(kind).replace("typing.", ""), repr(value), comments.get(f.name, "")))
    return rows


def _field_comments(cls: type) -> dict[str, str]:
    """Field -> its comment: the ``Attributes:`` entry of the class docstring, a comment on the
    field's line, or the comment block above a group of fields (applied to each, up to a blank line)."""
    import inspect
    import re

    found = {}
    doc = inspect.getdoc(cls) or ""
    if "Attributes:" in doc:
        for line in doc.split("Attributes:", 1)[1].splitlines():
            entry = re.match(r"\s+(\w+):\s*(.+)", line)
            if entry:
                found[entry.group(1)] = entry.group(2).strip()
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):  # no source (a frozen install)
        return found
    block: list[str] = []
    after_comment = False  # a comment line that follows a field starts a new block, not a longer one
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(("def ", "@")):
            block, after_comment = [], False
        elif stripped.startswith("#"):
            if not after_comment:
                block = []
            block.append(stripped.lstrip("# ").strip())
            after_comment = True
        else:
            after_comment = False
            field_line = re.match(r"\s+(\w+)\s*:[^#]*?(?:#\s*(.*))?$", line)
            if field_line and not stripped.startswith(("class ", '"')):
                text = (field_line.group(2) or " ".join(block)).strip()
                if text:
                    found.setdefault(field_line.group(1), text)
    return found


def parse_value(text: str, annotation: Any, key: str = "value") -> Any:
    """Parse ``text`` as ``annotation`` (bool, int, float, str, Literal, Optional, tuple)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if text.lower() in ("none", "null") and len(options) < len(get_args(annotation)):
            return None
        errors = []
        for option in options:
            try:
                return parse_value(text, option, key)
            except ValueError as error:
                errors.append(str(error))
        raise ValueError(f"{key}: cannot parse {text!r} as {annotation}")
    if origin is Literal:
        choices = get_args(annotation)
        for choice in choices:
            if str(choice) == text:
                return choice
        raise ValueError(f"{key} must be one of {list(choices)}, got {text!r}")
    if origin is tuple:
        items = [t for t in text.split(",") if t != ""]
        args = get_args(annotation)
        item_type = args[0] if args else str
        return tuple(parse_value(t.strip(), item_type, key) for t in items)
    if annotation is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"{key} must be a boolean (true/false), got {text!r}")
    if annotation is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{key} must be an integer, got {text!r}") from None
    if annotation is float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{key} must be a number, got {text!r}") from None
        # nan/inf parse as floats but no setting means them; refused here, naming the key,
        # rather than by the JSON writer of config.json with a message that does not
        if not math.isfinite(value):
            raise ValueError(f"{key} must be a finite number, got {text!r}")
        return value
    if annotation is str or annotation is Any:
        return text
    raise ValueError(f"{key}: overriding fields of type {annotation} is not supported")


def _hints(cls: type) -> dict[str, Any]:
    module = typing.cast(Any, __import__(cls.__module__, fromlist=["_"]))
    return get_type_hints(cls, globalns=vars(module))


def _replace(cfg: C, path: list[str], text: str, full_key: str) -> C:
    names = [f.name for f in dataclasses.fields(cfg)]
    head = path[0]
    if head not in names:
        raise KeyError(full_key)
    current = getattr(cfg, head)
    if len(path) > 1:
        if not dataclasses.is_dataclass(current):
            raise KeyError(full_key)
        return dataclasses.replace(cfg, **{head: _replace(current, path[1:], text, full_key)})
    if dataclasses.is_dataclass(current):
        raise KeyError(full_key)
    value = parse_value(text, _hints(type(cfg))[head], full_key)
    return dataclasses.replace(cfg, **{head: value})


def apply_overrides(cfg: C, overrides: Iterable[str], aliases: Mapping[str, str] | None = None) -> C:
    """Return ``cfg`` with each ``key=value`` applied; unknown keys list the valid ones.

    ``aliases``: other names of keys (an old name -> its dotted key), by default the config class's
    own ``KEY_ALIASES`` (a ``ClassVar``; ``fullscale.training.config.TrainConfig`` accepts the flat
    names of its keys from before it had groups); errors name the key as it was typed."""
    if aliases is None:
        aliases = getattr(type(cfg), "KEY_ALIASES", None) or {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not of the form key=value")
        key, text = item.split("=", 1)
        key = key.strip().removeprefix("--")
        try:
            cfg = _replace(cfg, aliases.get(key, key).split("."), text.strip(), key)
        except KeyError:
            valid = ", ".join(config_keys(cfg))
            also = f" (or an alias: {', '.join(k for k, v in aliases.items() if k != v)})" if aliases else ""
            raise ValueError(f"unknown config key {key!r}; valid keys: {valid}{also}") from None
    return cfg


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """A JSON-ready dict (tuples become lists)."""
    def plain(value: Any) -> Any:
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value
    return plain(dataclasses.asdict(cfg))


def _conforms(value: Any, annotation: Any) -> bool:
    """Whether ``value`` (as read from JSON) is of ``annotation`` (the types ``parse_value`` knows;
    any other annotation is not checked)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, option) for option in get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin is Literal:
        return any(value == choice and type(value) is type(choice) for choice in get_args(annotation))
    if origin is tuple:
        items = [a for a in get_args(annotation) if a is not Ellipsis]
        return isinstance(value, tuple | list) and all(_conforms(v, items[0]) for v in value) if items else True
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if annotation is str:
        return isinstance(value, str)
    return True


def check_types(cfg: Any, where: str = "config", prefix: str = "") -> None:
    """Refuse (one line naming the key) a field of a config rebuilt from a file whose value is not of
    the field's type: ``"optim": 3`` for a group, ``"epochs": "many"``, a NaN (issue 41: such a
    ``config.json`` was read, and the tables showed epochs ``None``)."""
    hints = _hints(type(cfg))
    for item in dataclasses.fields(cfg):
        value, annotation, key = getattr(cfg, item.name), hints[item.name], f"{prefix}{item.name}"
        if dataclasses.is_dataclass(annotation):
            if not isinstance(value, annotation):
                raise ValueError(f"{where}: {key} must be a group of settings (a JSON object), got {value!r:.60}")
            check_types(value, where, f"{key}.")
        elif not _conforms(value, annotation):
            raise ValueError(f"{where}: {key} must be of type {annotation}, got {value!r:.60}")


def config_from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
    """Rebuild a (nested) config dataclass from ``config_to_dict`` output; unknown keys fail."""
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown keys for {cls.__name__}: {sorted(unknown)}")
    kwargs = {}
    for name, value in data.items():
        annotation = hints[name]
        if dataclasses.is_dataclass(annotation) and isinstance(value, Mapping):
            value = config_from_dict(annotation, value)
        elif get_origin(annotation) is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def check_distinct(overrides: Iterable[str], aliases: Mapping[str, str] | None = None) -> None:
    """Refuse (one line) two ``--set`` of one key: the same key twice, or an alias and its full key
    (``lr=0.2`` and ``optim.lr=0.1``); the last one would win without a word (issue 41)."""
    seen: dict[str, str] = {}
    for item in overrides:
        key = item.split("=", 1)[0].strip().removeprefix("--")
        full = (aliases or {}).get(key, key)
        if full in seen:
            if seen[full] == key:
                raise ValueError(f"--set {key} is given twice: give each key once (the last one would win unseen)")
            raise ValueError(f"--set {seen[full]} and --set {key} are the same key ({full}), given twice: give it once")
        seen[full] = key


class _SetAction(argparse.Action):
    """``--set`` appended to ``overrides``; a key given twice is refused as argparse refuses."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        items = [*(getattr(namespace, self.dest, None) or []), values]
        try:
            check_distinct(items, self.const)
        except ValueError as error:
            parser.error(str(error))
        setattr(namespace, self.dest, items)


def add_set_argument(parser: Any, example: str, what: str = "the config",
                     aliases: Mapping[str, str] | None = None) -> None:
    """The one ``--set key=value`` option (repeatable; dotted keys reach nested fields), stored in
    ``args.overrides`` for ``apply_overrides``: every command that takes overrides adds it here.
    ``aliases`` (old name -> dotted key): a key given twice, under either name, is refused."""
    parser.add_argument("--set", dest="overrides", action=_SetAction, const=dict(aliases or {}), default=[],
                        metavar="KEY=VALUE",
                        help=f"override a field of {what} (repeatable; dotted keys for nested fields), e.g. {example}")

