"""Fuse sibling linears (q/k/v, gate/up) of an unlifted exported module into one matmul each.

    module = program.module()            # a torch.fx GraphModule, weights as get_attr nodes
    groups = fuse_linears(module)        # edits module in place; [FusedGroup]
    torch._inductor.aot_compile(module, ...)

Note [Sibling linears fused]
A decode step reads every weight once and each linear at batch 1 is a matrix-vector product:
its time is a launch and a tail plus bytes over bandwidth, so three small launches (q, k, v)
cost more than one over the same bytes (on an H100 the 1B LLaMA shape's 1 MB k_proj takes ~6 us
against ~5 us for the 8 MB q_proj). Linears that read the same input are siblings; their weights
are concatenated along N (the output dimension) into one tensor and the one matmul's output is
split back along its last dim. Served ops, one rule each (`KINDS`):
- aten.linear(x, w[, b]): w [N, K] and b [N] concatenated on dim 0;
- aten._weight_int8pack_mm(x2, w int8 [N, K], scales [N]): both on dim 0;
- aten._weight_int4pack_mm_for_cpu(x2, w uint8 [N, K/2], group, sz [K/group, N, 2]): w on dim 0,
  sz on dim 1. ATen packs w in blocks of BLOCK_N rows (64 with AVX512, 32 with AVX2 or none;
  `weight_to_int4pack_kernel` in aten/src/ATen/native/cpu/int4mm_kernel.cpp), interleaving the
  rows of a block and packing a short last block apart, so the rows of the concatenation are
  the packing of the concatenated weight only where every member but the last fills whole
  blocks: its N must be a multiple of 64 (CPU_INT4_BLOCK_N), else the run is cut after it;
- aten._weight_int4pack_mm(x2, w int32 [N/8, K/(16*inner), 32, inner/2], group, sz): tinygemm's
  packing keeps each tile of 8 output rows in its own slice of dim 0 (a tile's 32 lanes hold
  only its 8 rows), so concatenating on dim 0 is the packing of the concatenated weight when
  every N is a multiple of 8, which the layout already requires; sz on dim 1.
The weight-only ops read `x.reshape(-1, K)`, and dynamo gives every module its own reshape node,
so siblings are those whose input is the same node or a view/reshape of the same node to the
same shape. A group's members share the op, the dtypes, K (and for int4 the group size and the
packing's inner tiles), and bias or no bias. Left alone: weights that are not get_attr tensors
(module inputs), tensors read by anything else (another op, another get_attr, a tied alias of the
same storage: a KV cache the graph writes is one of those), ops with keyword arguments.
The fused tensor is registered on the deepest module owning every member, named from the members
(`fused_q_proj_k_proj_v_proj_weight` on `...layers.0.self_attn`), so graphs traced apart (prefill
and decode) name it alike; it is a parameter if the members were, else a buffer. The members are
deleted from the module, so a package carries the fused copy only, and each group is fused and
its members dropped before the next is concatenated (the pass holds one extra copy of a group;
the caller's model still holds the originals).
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import fx, nn

aten = torch.ops.aten

_VIEWS = (aten.reshape.default, aten.view.default, aten._unsafe_view.default)


@dataclass
class FusedGroup:
    """One fused group: the fused weight's name, its members' names and each member's N."""

    name: str
    members: list[str]
    sizes: list[int]
    op: str
    # Every fused tensor of the group (weight, bias, scales): name, members, concatenation dim.
    tensors: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "members": self.members, "sizes": self.sizes, "op": self.op,
                "tensors": self.tensors}


@dataclass(frozen=True)
class Kind:
    """How one op's siblings are recognised and fused."""

    op: str
    # (argument index, dim along N) of each tensor argument that is concatenated.
    tensors: tuple[tuple[int, int], ...]
    n_of: Callable[[list[torch.Tensor]], int]  # the member's N from its tensors
    k_of: Callable[[list[torch.Tensor]], int]  # the member's K from its tensors
    # Arguments that must be equal across members besides the tensors (int4: group size).
    same_args: tuple[int, ...] = ()
    # Extra grouping key from the member's tensors (int4: the packing's inner tiles).
    layout_of: Callable[[list[torch.Tensor]], Any] = lambda ts: None
    # Every member but the last of a fused run has N a multiple of this (packing blocks).
    n_align: int = 1


def concat_int4pack_cuda(weights: list[torch.Tensor], scales_and_zeros: list[torch.Tensor]
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """The tinygemm-packed weights ([N/8, K/(16*inner), 32, inner/2] int32) and their scales and
    zeros ([K/group, N, 2]) of linears fused along N (Note [Sibling linears fused]): every member's
    n-tiles in turn on dim 0, its scales and zeros on dim 1."""
    first = weights[0]
    for w, sz in zip(weights, scales_and_zeros):
        if w.dim() != 4 or w.dtype != torch.int32 or w.shape[1:] != first.shape[1:]:
            raise ValueError(f"int4 packed weights differ in K or inner tiles: {[tuple(x.shape) for x in weights]}")
        if sz.dim() != 3 or sz.shape[1] != 8 * w.shape[0] or sz.shape[0] != scales_and_zeros[0].shape[0]:
            raise ValueError(f"scales_and_zeros {tuple(sz.shape)} do not match packed weight {tuple(w.shape)}")
    return torch.cat(weights, dim=0), torch.cat(scales_and_zeros, dim=1)


def _int4_cuda_k(ts: list[torch.Tensor]) -> int:
    return ts[0].shape[1] * 16 * ts[0].shape[3] * 2


# The largest BLOCK_N of ATen's CPU int4 packing (AVX512; AVX2 and scalar use 32, a divisor).
CPU_INT4_BLOCK_N = 64

KINDS: dict[Any, Kind] = {
    aten.linear.default: Kind("linear", ((1, 0), (2, 0)), lambda ts: ts[0].shape[0], lambda ts: ts[0].shape[1]),
    aten._weight_int8pack_mm.default: Kind("int8pack_mm", ((1, 0), (2, 0)), lambda ts: ts[0].shape[0],
                                           lambda ts: ts[0].shape[1]),
    aten._weight_int4pack_mm_for_cpu.default: Kind("int4pack_mm_for_cpu", ((1, 0), (3, 1)),
                                                   lambda ts: ts[0].shape[0], lambda ts: 2 * ts[0].shape[1],
                                                   same_args=(2,), n_align=CPU_INT4_BLOCK_N),
    aten._weight_int4pack_mm.default: Kind("int4pack_mm", ((1, 0), (3, 1)), lambda ts: 8 * ts[0].shape[0],
                                           _int4_cuda_k, same_args=(2,), layout_of=lambda ts: ts[0].shape[3]),
}


def concat_members(kind: Kind, members: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """Each concatenated tensor of `kind` from the members' tensors (member -> tensors in
    `kind.tensors` order)."""
    if kind.op == "int4pack_mm":
        return list(concat_int4pack_cuda([m[0] for m in members], [m[1] for m in members]))
    return [torch.cat([m[i] for m in members], dim=dim) for i, (_, dim) in enumerate(kind.tensors[:len(members[0])])]


def _input_key(x: Any) -> Any:
    """Siblings' inputs compare equal: the node, or (source, shape) for a view of it."""
    if isinstance(x, fx.Node) and x.op == "call_function" and x.target in _VIEWS and not x.kwargs:
        shape = x.args[1]
        return ("view", x.args[0], tuple(shape) if isinstance(shape, (list, tuple)) else shape)
    return x


def _readers(gm: fx.GraphModule) -> tuple[dict[str, int], dict[int, set[str]]]:
    """get_attr target -> its get_attr nodes' users; storage -> every attribute name over it."""
    users: dict[str, int] = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            users[n.target] = users.get(n.target, 0) + len(n.users)
    storages: dict[int, set[str]] = {}
    tensors = list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False))
    for name, t in tensors:
        storages.setdefault(t.untyped_storage().data_ptr(), set()).add(name)
    return users, storages


# Past this many characters a fused name is the first member's, the count and a digest of all.
MAX_NAME = 96


def _owner_and_name(targets: list[str]) -> tuple[str, str]:
    """The deepest module path owning every target and the fused attribute's name there."""
    parts = [t.split(".") for t in targets]
    modules = [p[:-1] for p in parts]
    owner: list[str] = []
    for level in zip(*modules):
        if len(set(level)) != 1:
            break
        owner.append(level[0])
    rels = [p[len(owner):] for p in parts]
    attrs = {r[-1] for r in rels}
    if len(attrs) == 1 and all(len(r) > 1 for r in rels):
        name = "fused_" + "_".join("_".join(r[:-1]) for r in rels) + "_" + attrs.pop()
    else:
        name = "fused_" + "_".join("_".join(r) for r in rels)
    if len(name) > MAX_NAME:  # e.g. Whisper's cross-attention k_proj of every layer
        digest = hashlib.sha1("\n".join(targets).encode()).hexdigest()[:10]
        name = f"fused_{'_'.join(rels[0])}_and_{len(rels) - 1}_more_{digest}"
    return ".".join(owner), name


def _fake(node: fx.Node) -> Any:
    return node.meta.get("val") if isinstance(node, fx.Node) else node


def fuse_linears(gm: fx.GraphModule) -> list[FusedGroup]:
    """Fuses sibling linears of `gm` in place (Note [Sibling linears fused]); returns the groups fused."""
    users, storages = _readers(gm)

    def member_tensors(node: fx.Node, kind: Kind) -> list[torch.Tensor] | None:
        ts = []
        for index, _ in kind.tensors:
            if index >= len(node.args) or node.args[index] is None:
                continue  # linear without bias
            a = node.args[index]
            if not (isinstance(a, fx.Node) and a.op == "get_attr" and len(a.users) == 1 and users[a.target] == 1):
                return None
            t = _attr(gm, a.target)
            if not isinstance(t, torch.Tensor) or len(storages.get(t.untyped_storage().data_ptr(), ())) != 1:
                return None
            ts.append(t)
        if not ts or ts[0].dim() < 2:
            return None
        n = kind.n_of(ts)  # every tensor's N agrees (a scale per output, sz [K/group, N, 2])
        return ts if all(t.shape[dim] == n or (kind.op == "int4pack_mm" and i == 0)
                         for i, (t, (_, dim)) in enumerate(zip(ts, kind.tensors))) else None

    groups: dict[Any, list[tuple[fx.Node, list[torch.Tensor]]]] = {}
    for node in gm.graph.nodes:
        kind = KINDS.get(node.target) if node.op == "call_function" else None
        if kind is None or node.kwargs:
            continue
        ts = member_tensors(node, kind)
        if ts is None:
            continue
        key = (kind.op, _input_key(node.args[0]), len(ts), tuple((t.dtype, t.device) for t in ts),
               kind.k_of(ts), kind.layout_of(ts), tuple(node.args[i] for i in kind.same_args))
        groups.setdefault(key, []).append((node, ts))

    fused = []
    for members in groups.values():
        kind = KINDS[members[0][0].target]
        run: list[tuple[fx.Node, list[torch.Tensor]]] = []
        for i, member in enumerate(members):
            run.append(member)
            if kind.n_of(member[1]) % kind.n_align == 0 and i + 1 < len(members):
                continue
            if len(run) >= 2:  # a member that ends a packing block short ends its run
                fused.append(_fuse_group(gm, kind, run))
            run = []
        del members[:]  # the originals are no longer needed here
    gm.graph.lint()
    gm.recompile()
    return fused


def _attr(gm: nn.Module, target: str) -> Any:
    owner, _, name = target.rpartition(".")
    return getattr(gm.get_submodule(owner) if owner else gm, name)


def _fuse_group(gm: fx.GraphModule, kind: Kind, members: list[tuple[fx.Node, list[torch.Tensor]]]) -> FusedGroup:
    nodes = [n for n, _ in members]
    sizes = [kind.n_of(ts) for _, ts in members]
    arg_nodes = [[n.args[i] for i, _ in kind.tensors if i < len(n.args) and n.args[i] is not None] for n in nodes]
    with torch.no_grad():
        cats = concat_members(kind, [ts for _, ts in members])
    first = nodes[0]
    graph = gm.graph
    fake_mode = torch._guards.detect_fake_mode([_fake(first.args[0])])
    tensors, new_args = [], list(first.args)
    with graph.inserting_before(first):
        for i, (cat, (index, dim)) in enumerate(zip(cats, kind.tensors)):
            targets = [a[i].target for a in arg_nodes]
            owner_path, name = _owner_and_name(targets)
            owner = gm.get_submodule(owner_path) if owner_path else gm
            if hasattr(owner, name):
                raise RuntimeError(f"fuse_linears: {owner_path or 'the module'} already has an attribute {name!r}")
            if all(type(_attr(gm, t)) is nn.Parameter for t in targets):
                owner.register_parameter(name, nn.Parameter(cat, requires_grad=False))
            else:
                owner.register_buffer(name, cat)
            for t in targets:  # the package carries the fused copy only
                mod_path, _, attr = t.rpartition(".")
                delattr(gm.get_submodule(mod_path) if mod_path else gm, attr)
            full = f"{owner_path}.{name}" if owner_path else name
            getter = graph.get_attr(full)
            if fake_mode is not None:
                getter.meta["val"] = fake_mode.from_tensor(cat, static_shapes=True)
            new_args[index] = getter
            tensors.append({"name": full, "members": targets, "dim": dim})
        op = graph.call_function(first.target, tuple(new_args))
        split = graph.call_function(aten.split_with_sizes.default, (op, sizes, -1))
        pieces = [graph.call_function(operator.getitem, (split, i)) for i in range(len(nodes))]
        if fake_mode is not None and all(_fake(n) is not None for n in nodes):
            # The fused result is the members' results side by side. Computed so, not by calling
            # the op: aten.linear's composite kernel calls numel() on a symbolic prefill length
            # under torch 2.11's fake mode (RuntimeError), where cat has a meta function.
            with fake_mode:
                op.meta["val"] = aten.cat.default([_fake(n) for n in nodes], -1)
                split.meta["val"] = list(aten.split_with_sizes.default(op.meta["val"], sizes, -1))
            for i, p in enumerate(pieces):
                p.meta["val"] = split.meta["val"][i]
    for node, piece, args in zip(nodes, pieces, arg_nodes):
        node.replace_all_uses_with(piece)
        x = node.args[0]
        graph.erase_node(node)
        for a in args:
            graph.erase_node(a)
        # A member's own reshape of the shared input is dead now (the fused op reads the first's).
        if isinstance(x, fx.Node) and x is not first.args[0] and not x.users and x.target in _VIEWS:
            graph.erase_node(x)
    return FusedGroup(tensors[0]["name"], tensors[0]["members"], sizes, kind.op, tensors)
