"""Graphs of the grammar (rules and the rules they refer to; a DFA's states): depth-first
post-order and the nodes on cycles (Tarjan's strongly connected components), over any hashable
names. The walk is in C (`_graphs.c`); `_tarjan` and `_components_in_python` are its reference."""

from __future__ import annotations

from strictgen.errors import StrictgenError

from . import _graphs


def post_order(graph: dict) -> list:
    """Every node of `graph` (node -> the nodes it refers to) after the nodes it refers to, but
    on cycles: a depth-first post-order from each node in the graph's order, children sorted."""
    order: list = []
    seen: set = set()
    for top in graph:
        if top in seen:
            continue
        seen.add(top)
        stack = [(top, iter(sorted(graph[top])))]
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            if child is None:
                stack.pop()
                order.append(node)
            elif child not in seen:
                seen.add(child)
                stack.append((child, iter(sorted(graph[child]))))
    return order


def cyclic_rules(graph: dict) -> set:
    """The names on a cycle of `graph` (rule -> the rules it refers to; any hashable names, a
    DFA's states too; Tarjan's SCC, iterative); a reference to a rule not in it is an error.
    The set does not depend on the order the references are walked in: they are not sorted (the
    sorts were a third of the time on a multipleOf's 3,000 rules, asked three times a compile)."""
    return _components(graph, False)[1]


def post_order_and_cycles(graph: dict) -> tuple[list, set]:
    """`post_order(graph)` and `cyclic_rules(graph)` from one walk (the rule-size planning of a
    schema grammar asks both of every compile: two walks were a fifth of it on the median schemas)."""
    return _components(graph, True)


def _components(graph: dict, sorted_children: bool) -> tuple[list, set]:
    """Tarjan's SCC over any hashable names: (the order the nodes finish in, the nodes on a
    cycle), from `_tarjan`'s walk on the nodes numbered in the graph's order. With
    `sorted_children`, the walk is post_order's (from each node in the graph's order, children
    sorted, a node entered when first met), so the finish order is post_order's order. In C
    (`_graphs.components`: the numbering and the walk in Python were ~1% of a median bench
    schema's compile); `_components_in_python` is the reference."""
    try:
        return _graphs.components(graph if type(graph) is dict else dict(graph), sorted_children)
    except KeyError:
        undefined = next(((name, r) for name, refs in graph.items() for r in refs if r not in graph), None)
        if undefined is None:
            raise
        raise StrictgenError(f"rule {undefined[0]!r} refers to undefined rule {undefined[1]!r}") from None


def _components_in_python(graph: dict, sorted_children: bool) -> tuple[list, set]:
    """`_components` in Python: the reference the C walk is tested against."""
    number = {name: i for i, name in enumerate(graph)}
    succ = []
    for name, refs in graph.items():
        try:
            succ.append([number[r] for r in (sorted(refs) if sorted_children else refs)])
        except KeyError:
            ref = next(r for r in refs if r not in number)
            raise StrictgenError(f"rule {name!r} refers to undefined rule {ref!r}") from None
    names = list(graph)
    finished, cyclic = _tarjan(succ)
    return [names[i] for i in finished], {names[i] for i, c in enumerate(cyclic) if c}


def states_on_cycles(succ: list[list[int]]) -> list[bool]:
    """For each node 0..n-1 of a graph given as successor lists (a DFA's states): is it on a
    cycle? (`cyclic_rules` on numbered nodes, without naming them: a multipleOf's product has
    thousands of states.) `_tarjan`'s walk, in C (`_graphs.cycles`)."""
    return _graphs.cycles(succ if type(succ) is list else list(succ))


def _tarjan(succ: list[list[int]]) -> tuple[list[int], list[bool]]:
    """Tarjan's SCC, iterative, on lists indexed by node (dicts and sets keyed by names were a
    third of allany9's front end): (the order the nodes finish in, each node on a cycle?). Each
    root in node order, children in list order; a node is on a cycle when its component has two
    nodes or more, or it refers to itself. The reference of `_graphs.c`, which walks the same."""
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    cyclic = [False] * n
    stack: list[int] = []
    finished: list[int] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, iter(succ[root]))]
        while work:
            node, it = work[-1]
            for child in it:  # up to the first child not met yet, which is entered
                if index[child] < 0:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack[child] = True
                    work.append((child, iter(succ[child])))
                    break
                if on_stack[child] and index[child] < low[node]:
                    low[node] = index[child]
            else:  # every child done: node's component is settled here when it is its root
                work.pop()
                finished.append(node)
                if work:
                    parent = work[-1][0]
                    if low[node] < low[parent]:
                        low[parent] = low[node]
                if low[node] == index[node]:
                    w = stack.pop()
                    on_stack[w] = False
                    if w == node:
                        cyclic[node] = node in succ[node]
                        continue
                    cyclic[w] = True
                    while w != node:
                        w = stack.pop()
                        on_stack[w] = False
                        cyclic[w] = True
    return finished, cyclic
