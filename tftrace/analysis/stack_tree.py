"""Python call stacks as one tree of numpy arrays: each node a stack (its parent's plus one frame),
so sums over stacks are numpy passes a depth at a time, not a Python loop per stack."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tftrace.analysis.sums import exact_sums


@dataclass(frozen=True, eq=False)
class StackTree:
    """Node i is a stack: `frame[i]` called from the stack `parent[i]` (-1: outermost frame)."""

    parent: np.ndarray
    frame: np.ndarray
    depth: np.ndarray  # 0 for an outermost frame

    def __len__(self) -> int:
        return len(self.frame)

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Nodes by depth, outermost first (within a level in node order)."""
        return by_depth(self.depth)

    @cached_property
    def preorder(self) -> tuple[np.ndarray, np.ndarray]:
        """Each node's subtree as the interval [start, end) of pre-order numbers (children in
        node order)."""
        return _number(self)

    def path(self, node: int) -> tuple[int, ...]:
        """The stack's frames, outermost first."""
        out = []
        while node >= 0:
            out.append(int(self.frame[node]))
            node = int(self.parent[node])
        return tuple(reversed(out))


def by_depth(depth: np.ndarray) -> list[np.ndarray]:
    """Indexes grouped by depth (from 0), shallowest first, each group in index order. The
    stable sort is by radix where depths fit 16 bits: one pass instead of a merge sort's log n."""
    keys = depth.astype(np.int16) if len(depth) and int(depth.max()) < 2 ** 15 else depth
    order = np.argsort(keys, kind="stable")
    return np.split(order, np.searchsorted(depth[order], np.arange(1, int(depth.max(initial=0)) + 1)))


def from_paths(paths: list[tuple[int, ...]]) -> tuple[StackTree, np.ndarray]:
    """The tree of these stacks (frame ids, outermost first) and each path's node (-1 for an
    empty one); equal paths and shared prefixes become one node."""
    index: dict[tuple[int, int], int] = {}
    parent: list[int] = []
    frame: list[int] = []
    depth: list[int] = []
    nodes = np.full(len(paths), -1, np.int64)
    for k, path in enumerate(paths):
        node = -1
        for d, f in enumerate(path):
            key = (node, f)
            found = index.get(key)
            if found is None:
                found = index[key] = len(frame)
                parent.append(node)
                frame.append(f)
                depth.append(d)
            node = found
        nodes[k] = node
    return StackTree(np.asarray(parent, np.int64), np.asarray(frame, np.int64), np.asarray(depth, np.int64)), nodes


def subtree_sums(tree: StackTree, node: np.ndarray, column: np.ndarray, ps: np.ndarray, columns: int) -> np.ndarray:
    """Per node and column, the ps of every (node, column, ps) entry at the node or below it: a
    subtree is one run of pre-order numbers, so its sum is a difference of prefix sums."""
    n = len(tree)
    own = exact_sums(node * columns + column, ps, n * columns).reshape(n, columns)
    start, end = tree.preorder
    prefix = np.zeros((n + 1, columns), np.int64)
    prefix[start + 1] = own
    np.cumsum(prefix, axis=0, out=prefix)
    return prefix[end] - prefix[start]


def outermost_of_frame(tree: StackTree) -> np.ndarray:
    """Per node: its frame is on no stack above it (a recursive call's inner nodes are False), so
    a frame's time is counted once however deep it recurses. In pre-order numbering a node's
    subtree is one interval and a frame's nodes' intervals nest or are apart: among the nodes of
    one frame in pre-order, a node lies under another iff an earlier one's interval reaches it."""
    n = len(tree)
    if n == 0:
        return np.ones(0, bool)
    start, end = tree.preorder
    order = np.argsort(tree.frame * n + start)
    frame_base = tree.frame[order] * n  # keys of one frame stay within [frame * n, frame * n + n]
    reach = np.maximum.accumulate(frame_base + end[order])
    under = np.zeros(n, bool)
    under[order[1:]] = reach[:-1] > frame_base[1:] + start[order[1:]]
    return ~under


def _number(tree: StackTree) -> tuple[np.ndarray, np.ndarray]:
    n = len(tree)
    size = np.ones(n, np.int64)
    levels = tree.levels
    for level in reversed(levels[1:]):  # deepest first: each level hands its sizes to its parents
        np.add.at(size, tree.parent[level], size[level])
    # Where a node starts among its siblings: the sizes of the siblings before it.
    by_parent = np.argsort(tree.parent, kind="stable")
    before = np.cumsum(size[by_parent]) - size[by_parent]
    group = np.r_[0, np.flatnonzero(np.diff(tree.parent[by_parent])) + 1]
    before -= np.repeat(before[group], np.diff(np.r_[group, n]))
    offset = np.empty(n, np.int64)
    offset[by_parent] = before
    start = np.empty(n, np.int64)
    if levels and len(levels[0]):
        start[levels[0]] = offset[levels[0]]
    for level in levels[1:]:
        start[level] = start[tree.parent[level]] + 1 + offset[level]
    return start, start + size


def innermost_marked(tree: StackTree, decides: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per node, `value` of the innermost frame on its stack whose frame `decides` (-1 if none)."""
    out = np.full(len(tree), -1, np.int64)
    for level in tree.levels:
        up = tree.parent[level]
        inherited = np.where(up >= 0, out[np.maximum(up, 0)], -1)
        mine = decides[tree.frame[level]]
        out[level] = np.where(mine, value[tree.frame[level]], inherited)
    return out
