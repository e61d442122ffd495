"""A small Wadler/Lindig-style pretty printer ("Strictly Pretty"), the layout JAX uses.

A document is text, breaks, nesting and groups. A group prints flat (each break as its
text, usually a space) when the whole group fits in the remaining width; otherwise its
breaks become newlines indented by the enclosing nesting.
"""
from __future__ import annotations


class Doc:
  __slots__ = ()

  def __add__(self, other: "Doc") -> "Doc":
    return concat([self, other])

  def format(self, width: int = 80) -> str:
    return _format(self, width)

  def __str__(self):
    return self.format()


class _Text(Doc):
  __slots__ = ("text",)
  def __init__(self, text): self.text = text

class _Concat(Doc):
  __slots__ = ("children",)
  def __init__(self, children): self.children = children

class _Break(Doc):
  __slots__ = ("text",)
  def __init__(self, text): self.text = text

class _Group(Doc):
  __slots__ = ("child",)
  def __init__(self, child): self.child = child

class _Nest(Doc):
  __slots__ = ("n", "child")
  def __init__(self, n, child): self.n, self.child = n, child


def text(s: str) -> Doc: return _Text(s)
def nil() -> Doc: return _Concat([])
def concat(children) -> Doc: return _Concat(list(children))
def brk(s: str = " ") -> Doc: return _Break(s)
def group(doc: Doc) -> Doc: return _Group(doc)
def nest(n: int, doc: Doc) -> Doc: return _Nest(n, doc)


def join(sep: Doc, docs) -> Doc:
  docs = list(docs)
  out = docs[:1]
  for d in docs[1:]:
    out += [sep, d]
  return concat(out)


def _fits(doc: Doc, width: int) -> bool:
  """Does `doc`, printed flat, fit in `width` columns?"""
  agenda = [doc]
  while width >= 0 and agenda:
    d = agenda.pop()
    if isinstance(d, (_Text, _Break)):
      width -= len(d.text)
    elif isinstance(d, _Concat):
      agenda.extend(reversed(d.children))
    else:
      agenda.append(d.child)
  return width >= 0


_FLAT, _BREAK = 0, 1


def _format(doc: Doc, width: int) -> str:
  out: list[str] = []
  col = 0
  agenda = [(0, _BREAK, doc)]
  while agenda:
    indent, mode, d = agenda.pop()
    if isinstance(d, _Text):
      out.append(d.text)
      col += len(d.text)
    elif isinstance(d, _Concat):
      agenda.extend((indent, mode, c) for c in reversed(d.children))
    elif isinstance(d, _Nest):
      agenda.append((indent + d.n, mode, d.child))
    elif isinstance(d, _Break):
      if mode == _BREAK:
        out.append("\n" + " " * indent)
        col = indent
      else:
        out.append(d.text)
        col += len(d.text)
    else:  # group
      flat = mode == _FLAT or _fits(d.child, width - col)
      agenda.append((indent, _FLAT if flat else _BREAK, d.child))
  return "".join(out)
