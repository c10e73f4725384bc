"""YAML from files people hand us (rules, training and tournament configs), read with limits.

``yaml.safe_load`` runs no code, but it still expands aliases: a few hundred
bytes of nested ``&a [*a, *a, ...]`` (an "alias bomb", or "billion laughs")
describe a value with billions of elements, and anything that walks or prints
it (validation, ``repr`` in an error message, hashing) runs for minutes while
memory climbs. :func:`load_yaml` refuses such a document before building it:

- the text is at most :data:`MAX_YAML_CHARS` characters;
- the node graph, counted with every alias expanded, has at most
  :data:`MAX_YAML_NODES` nodes (a recursive alias is refused outright);
- nesting deeper than Python's recursion allows is a clear error, not a
  ``RecursionError``;
- a key given twice in one mapping is refused (YAML keeps the last silently).

:func:`short_repr` is the bounded ``repr`` for error messages: a message never
formats a value of unbounded size.
"""

from __future__ import annotations

import reprlib
from typing import Any

import numpy as np
import yaml

#: a rules file or config is a few kB; this leaves a hundred times that
MAX_YAML_CHARS = 256 * 1024
#: nodes of the document with every alias expanded (the shipped files have under 100)
MAX_YAML_NODES = 20_000


class YamlInputError(ValueError):
    """A YAML document is malformed or exceeds the limits; the message names where."""


def _refuse_repeated_keys(node: yaml.MappingNode, where: str) -> None:
    """A key given twice in one mapping: YAML kept the last silently (``total_steps: 100`` then ``5000``)."""
    seen: set[tuple[str, str]] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = (key_node.tag, key_node.value)
        if key in seen:
            raise YamlInputError(
                f"{where}, line {key_node.start_mark.line + 1}: the key {short_repr(key_node.value)} is given twice "
                "in one mapping (YAML would keep the last silently)"
            )
        seen.add(key)


def _expanded_size(root: yaml.Node, where: str) -> int:
    """Nodes of the document with aliases expanded, counted on the shared
    graph (each node once, memoised), stopping as soon as it passes the limit."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if not children_done and isinstance(node, yaml.MappingNode):
            _refuse_repeated_keys(node, where)
        if not children_done:
            if key in on_path:
                raise YamlInputError(f"{where}: a recursive YAML alias (a value that contains itself) is not allowed")
            on_path.add(key)
            stack.append((node, True))
            for child in children:
                if id(child) in on_path:
                    raise YamlInputError(
                        f"{where}: a recursive YAML alias (a value that contains itself) is not allowed"
                    )
                if id(child) not in sizes:
                    stack.append((child, False))
            continue
        on_path.discard(key)
        total = 1 + sum(sizes[id(child)] for child in children)
        if total > MAX_YAML_NODES:
            raise YamlInputError(
                f"{where}: the document expands to more than {MAX_YAML_NODES:,} values "
                "(nested YAML aliases, an 'alias bomb'?); refused"
            )
        sizes[key] = total
    return sizes[id(root)]


def load_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` with the limits above; every failure is a :class:`YamlInputError` naming ``where``."""
    if not isinstance(text, str):
        raise YamlInputError(f"{where}: expected YAML text, got {type(text).__name__}")
    if len(text) > MAX_YAML_CHARS:
        raise YamlInputError(f"{where}: {len(text):,} characters; a YAML file here may have at most {MAX_YAML_CHARS:,}")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, where)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise YamlInputError(f"{where}: not valid YAML: {short_repr(str(exc), 300)}") from exc
    except RecursionError as exc:
        raise YamlInputError(f"{where}: the YAML is nested too deeply") from exc
    finally:
        loader.dispose()


def is_integer(value: Any) -> bool:
    """A whole number as the APIs take it: a Python or numpy integer, not a bool (1.0, "1" and True are not)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def action_id_problem(action: Any, num_actions: int) -> str | None:
    """Why ``action`` is not an action id of a ``Discrete(num_actions)`` space (not an integer,
    out of range), or None; each game's engine raises its own error with this text. A 0-d integer
    array (what a policy's ``np.argmax`` or SB3's ``predict`` give) is its number, as the space's
    ``contains`` says."""
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action[()]
    if not is_integer(action):
        return f"action must be an integer, got {type(action).__name__} {action!r}"
    if not 0 <= action < num_actions:
        return f"action {action} is out of range 0..{num_actions - 1}"
    return None


def not_a_file(path: Any) -> str | None:
    """Why ``path`` cannot be read as a file ("does not exist", "is a folder, not a file"), or None."""
    from pathlib import Path

    path = Path(path)
    if path.is_file():
        return None
    return "is a folder, not a file" if path.is_dir() else "does not exist"


def read_text_file(path: Any, where: str) -> str:
    """A UTF-8 text file, or a :class:`YamlInputError` that names it (missing, unreadable, not UTF-8, too large)."""
    from pathlib import Path

    path = Path(path)
    try:
        size = path.stat().st_size
        if size > 4 * MAX_YAML_CHARS:
            raise YamlInputError(f"{where} {str(path)!r}: {size:,} bytes is far too large for a YAML file here")
        data = path.read_bytes()
    except OSError as exc:
        raise YamlInputError(f"{where} {str(path)!r} cannot be read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlInputError(
            f"{where} {str(path)!r} is not UTF-8 text (byte {exc.start} is {data[exc.start : exc.start + 1]!r})"
        ) from exc


_REPR = reprlib.Repr()
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr`` of at most about ``limit`` characters, whatever the value's size."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value):,} characters)"
    text = _REPR.repr(value)
    return text if len(text) <= limit + 20 else text[:limit] + "..."
