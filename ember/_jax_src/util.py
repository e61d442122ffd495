"""jax._src.util's list helpers, which code written against JAX's internals imports (safe_map,
safe_zip, unzip2, ...): length-checked map and zip, and splitting and merging lists."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence


def _check_lengths(fname: str, args: Sequence[Sequence]) -> None:
  lengths = [len(a) for a in args]
  for i, n in enumerate(lengths[1:], 1):
    if n != lengths[0]:
      raise ValueError(f"{fname}() argument {i} has length {n} but argument 0 has length "
                       f"{lengths[0]}. All lengths: {tuple(lengths)}")


def safe_map(f: Callable, *args: Sequence) -> list:
  """`list(map(f, *args))`, the arguments of equal lengths (ValueError otherwise)."""
  args = [a if isinstance(a, (list, tuple)) else list(a) for a in args]
  _check_lengths("safe_map", args)
  return list(map(f, *args))


def safe_zip(*args: Sequence) -> list:
  """`list(zip(*args))`, the arguments of equal lengths (ValueError otherwise)."""
  args = [a if isinstance(a, (list, tuple)) else list(a) for a in args]
  _check_lengths("safe_zip", args)
  return list(zip(*args))


def unzip2(pairs: Iterable[tuple[Any, Any]]) -> tuple[tuple, tuple]:
  """`[(a, b), ...]` -> `((a, ...), (b, ...))`; `((), ())` for no pairs."""
  firsts, seconds = [], []
  for a, b in pairs:
    firsts.append(a)
    seconds.append(b)
  return tuple(firsts), tuple(seconds)


def unzip3(triples: Iterable[tuple[Any, Any, Any]]) -> tuple[tuple, tuple, tuple]:
  """`[(a, b, c), ...]` -> `((a, ...), (b, ...), (c, ...))`."""
  out: tuple[list, list, list] = ([], [], [])
  for a, b, c in triples:
    out[0].append(a)
    out[1].append(b)
    out[2].append(c)
  return tuple(out[0]), tuple(out[1]), tuple(out[2])


def split_list(xs: Sequence, sizes: Sequence[int]) -> list[list]:
  """`xs` cut into pieces of `sizes`, then the rest: `len(sizes) + 1` lists."""
  xs, out, start = list(xs), [], 0
  for n in sizes:
    out.append(xs[start:start + n])
    start += n
  out.append(xs[start:])
  return out


def partition_list(which: Sequence[bool], xs: Sequence) -> tuple[list, list]:
  """(the `xs` where `which` is False, those where it is True)."""
  if len(which) != len(xs):
    raise ValueError(f"partition_list: {len(which)} flags for {len(xs)} items")
  falses, trues = [], []
  for w, x in zip(which, xs):
    (trues if w else falses).append(x)
  return falses, trues


def merge_lists(which: Sequence[bool], falses: Sequence, trues: Sequence) -> list:
  """partition_list's inverse: items taken from `trues` where `which` is True, else from
  `falses`, in order."""
  if sum(map(bool, which)) != len(trues) or len(which) - len(trues) != len(falses):
    raise ValueError(f"merge_lists: {len(which)} flags ({sum(map(bool, which))} True) for "
                     f"{len(falses)} + {len(trues)} items")
  f, t = iter(falses), iter(trues)
  return [next(t) if w else next(f) for w in which]
