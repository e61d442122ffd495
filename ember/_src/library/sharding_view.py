"""jax.debug.visualize_sharding / visualize_array_sharding: a sharding drawn as a grid of
the devices holding each block of a 1-D or 2-D array, with `rich` (an optional dependency,
as in JAX; colors come from matplotlib's tab20b when it is there and the terminal has
colors, else the grid is boxed)."""
from __future__ import annotations

import importlib.util
from typing import Sequence

import numpy as np

from ember._src import core


def _chunk_index(size: int, slc: slice) -> int:
  """Which block along a dimension `slc` selects (blocks of equal size)."""
  start, stop, _ = slc.indices(size)
  return 0 if (start, stop) == (0, size) else start // (stop - start)


def _colors(color_map, rows: int, cols: int):
  """`rows * cols` colors spread over the map, neighbours apart (JAX's coprime stepping)."""
  count = rows * cols
  values = np.linspace(0, 1, count)
  step = count // 2 + (count % 2 == 0) + (count % 4 == 2)
  idx = 0
  for _ in range(count):
    r, g, b = (int(a * 255) for a in color_map(values[idx])[:3])
    yield f"#{r:02X}{g:02X}{b:02X}"
    idx = (idx + step) % count


def _text_color(color: str) -> str:
  r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
  return "#000000" if r * 0.299 + g * 0.587 + b * 0.114 > 186 else "#ffffff"


def _blocks(shape: tuple, sharding):
  """{(row, col): (device ids, height fraction or None for 1-D, width fraction)}."""
  blocks: dict = {}
  for dev, index in sharding.devices_indices_map(shape).items():
    index = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)
    if len(shape) == 2:
      (r0, r1, _), (c0, c1, _) = index[0].indices(shape[0]), index[1].indices(shape[1])
      key = (_chunk_index(shape[0], index[0]), _chunk_index(shape[1], index[1]))
      frac = ((r1 - r0) / shape[0], (c1 - c0) / shape[1])
    else:
      c0, c1, _ = index[0].indices(shape[0])
      key, frac = (0, _chunk_index(shape[0], index[0])), (None, (c1 - c0) / shape[0])
    ids, _, _ = blocks.get(key, (set(), None, None))
    blocks[key] = (ids | {dev.id}, *frac)
  return blocks


def visualize_sharding(shape: Sequence[int], sharding, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map=None) -> None:
  """Print how `sharding` splits an array of `shape` (1-D or 2-D) over its devices."""
  if not importlib.util.find_spec("rich"):
    raise ValueError("`visualize_sharding` requires `rich` to be installed.")
  # here: rich (and matplotlib) are optional, and slow to import
  import rich.align
  import rich.box
  import rich.console
  import rich.padding
  import rich.style
  import rich.table
  shape = tuple(shape)
  if len(shape) not in (1, 2):
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  console = rich.console.Console(width=max_width)
  use_color = use_color and console.color_system is not None
  if use_color and not color_map:
    try:
      import matplotlib   # (optional: the colors)
      color_map = matplotlib.colormaps["tab20b"]
    except ModuleNotFoundError:
      use_color = False
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  blocks = _blocks(shape, sharding)
  rows = max(r for r, _ in blocks) + 1
  cols = max(c for _, c in blocks) + 1
  kind = next(iter(sharding.devices_indices_map(shape))).platform.upper()
  colors = _colors(color_map, rows, cols) if use_color else None
  table = rich.table.Table(show_header=False, show_lines=not use_color, padding=0,
                           highlight=not use_color, pad_edge=False,
                           box=None if use_color else rich.box.SQUARE)
  for i in range(rows):
    cells = []
    for j in range(cols):
      ids, height, width = blocks[i, j]
      entry = f"{kind} " + ",".join(map(str, sorted(ids)))
      width = min(max(int(width * base_width * 2.5), min_width), max_width)
      height = 1 if height is None else int(height * base_height)
      left, extra = divmod(width - len(entry) - 2, 2)
      top, extra_v = divmod(height - 2, 2)
      pad = [top, left + extra, top + extra_v, left]
      color = text = None
      if use_color:
        color = next(colors)
        text = _text_color(color)
        pad = [p + 1 for p in pad]
      cells.append(rich.padding.Padding(
          rich.align.Align(entry, "center", vertical="middle"), tuple(max(p, 0) for p in pad),
          style=rich.style.Style(bgcolor=color, color=text)))
    table.add_row(*cells)
  console.print(table, end="\n\n")


def visualize_array_sharding(arr, **kwargs) -> None:
  """Print how the array `arr` is split over its devices (see visualize_sharding). Outside
  jit: ember knows a traced value's layout only once jit's compile has partitioned it."""
  if isinstance(arr, core.Tracer):
    raise TypeError("visualize_array_sharding: ember shows the sharding of concrete arrays "
                    "only; call it on the jitted function's result, outside jit")
  visualize_sharding(arr.shape, arr.sharding, **kwargs)
