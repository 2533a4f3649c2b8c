"""Control flow inside kernels: loops, branches, and device-side printing.

Every helper closes the MLIR region it opens, even when the body raises:

* ``for i in for_range(n)``: a counted loop (``scf.for``) with no carried values.
* ``@fori(lo, hi, carry=init)``: a counted loop whose body returns the next carry;
  the decorated name becomes the final carry (``scf.for`` with ``iter_args``).
* ``with when(cond) as branch:`` ... ``with branch.otherwise():`` (``scf.if``).
* ``cond(pred, then_fn, else_fn)``: a branch that yields values (``scf.if`` with results).

Carries and branch results may be nested tuples, lists and dicts of Values.
"""

from __future__ import annotations

import re
import weakref

from mlir import ir
from mlir.dialects import gpu, llvm, scf

from .. import dtypes as dt
from ..errors import TraceError, user_location
from .context import at_user_line, current, current_kernel, mlir_location
from .ranges import Affine, Atom, fitting
from .values import Value, _common_int, _constant, as_value, convert, python_number


def _loop_bounds(start, stop, step):
    start, stop, step = (python_number(v) for v in (start, stop, step))
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, Value):
            if not v.dtype.is_int:
                raise TraceError(f"loop {name} is a {v.dtype.name} value; loop bounds must be integers",
                                 code="bad-loop",
                                 hint="convert the bound to an integer first, e.g. n.to(nvdsl.int32)",
                                 loc=user_location())
        elif not isinstance(v, int) or isinstance(v, bool):
            raise TraceError(f"loop {name}={v!r} must be a Python int or a traced integer",
                             code="bad-loop",
                             hint="pass a Python int or a traced integer such as ctx.block_id.x", loc=user_location())
    if isinstance(step, int) and step <= 0:
        raise TraceError(f"loop step={step} must be positive", code="bad-loop",
                         hint="use a positive step such as 1; to count down, loop up and use stop - 1 - i",
                         loc=user_location())
    values = [v for v in (start, stop, step) if isinstance(v, Value)]
    dtype = values[0].dtype if values else dt.index
    for v in values[1:]:
        common = _common_int(dtype, v.dtype)
        if common is None:
            raise TraceError(f"loop bounds mix {dtype.name} and {v.dtype.name}", code="type-mismatch",
                             hint="convert them to one integer type with .to(...)", loc=user_location())
        dtype = common
    bounds = [convert(v, dtype) if isinstance(v, Value) else _constant(v, dtype)
              for v in (start, stop, step)]
    return bounds, dtype


def _trips(bounds: list[Value], loc) -> Atom | None:
    """The trip number of a loop over ``bounds`` (start, stop, step) where they are constants and it runs."""
    forms = [b.exact for b in bounds]
    if any(f is None or f.terms for f in forms):
        return None
    start, stop, step = (f.constant for f in forms)
    trips = -((start - stop) // step) if step > 0 else 0
    line = f"line {loc.line}" if loc is not None else "an unknown line"
    return Atom(f"the index of the loop at {line}", trips, start, step) if trips > 0 else None


def _induction(op, dtype, trips: Atom | None) -> Value:
    """The loop's index, with its form where its trips are known."""
    return Value(op.induction_variable, dtype, exact=fitting(Affine.of_atom(trips), dtype) if trips else None)


def for_range(start, stop=None, step=1):
    """Iterate a counted loop on the GPU: ``for i in nvdsl.for_range(lo, hi, step)``.

    The body is traced once into an ``scf.for``; ``i`` is a traced integer
    (``index`` for Python-int bounds, else the bounds' dtype; unsigned bounds
    compare unsigned). ``break`` and ``return`` inside the body are errors.
    To carry values across iterations use :func:`fori`.
    """
    ctx = current_kernel("nvdsl.for_range")
    if stop is None:
        start, stop = 0, start
    with at_user_line():
        (lo, hi, st), dtype = _loop_bounds(start, stop, step)
        op = scf.ForOp(lo.ir, hi.ir, st.ir)
        if not dtype.is_signed:
            op.attributes["unsignedCmp"] = ir.UnitAttr.get()
    trace = current("nvdsl.for_range")
    trips = _trips([lo, hi, st], user_location())
    # the body's region, entered when the for-statement starts the loop
    region = (ir.InsertionPoint.current.block, op.body, () if trips else None)
    loop = _loop_body(op, _induction(op, dtype, trips), user_location(), trace, ctx.wgmma_bound_at_loop(op.body),
                      ctx, region)
    # A body that raises leaves this generator suspended inside the loop's insertion point; the trace
    # closes it (see TraceContext.close_open_loops) before it unwinds past that insertion point. A weak
    # reference, so that a `break` still closes it at once.
    trace.open_loops.append(weakref.ref(loop))
    return loop


def _loop_body(op, index, loop_loc, trace, after_body, ctx, region):
    depth = ctx.enter_region(*region)
    finished = False
    try:
        with ir.InsertionPoint(op.body):
            yield index
            with mlir_location(loop_loc):
                scf.yield_([])
        finished = True
        after_body()
    finally:
        ctx.leave_region(depth)
        trace.open_loops.pop()
        if not finished:
            # The for-statement stopped early (break, return or an exception): the
            # loop body was traced once, so there is nothing sensible to emit.
            trace.defer(TraceError(
                "the body of an nvdsl.for_range loop left early (break, return or an exception)",
                code="bad-loop", hint="a traced loop body runs to its end; use nvdsl.when for conditions",
                loc=loop_loc))


def fori(start, stop, step=1, *, carry):
    """Decorate ``def body(i, carry) -> new_carry``: a counted loop with loop-carried values.

    The decorated name is bound to the carry after the last iteration::

        @nvdsl.fori(0, k, carry=nvdsl.constant(0.0, nvdsl.float32))
        def total(i, acc):
            return acc + x[i]
    """
    ctx = current_kernel("nvdsl.fori")

    def decorate(body):
        leaves, tree = _flatten(carry, "fori carry")
        with at_user_line():
            (lo, hi, st), dtype = _loop_bounds(start, stop, step)
            op = scf.ForOp(lo.ir, hi.ir, st.ir, [v.ir for v in leaves])
            if not dtype.is_signed:
                op.attributes["unsignedCmp"] = ir.UnitAttr.get()
        after_body = ctx.wgmma_bound_at_loop(op.body)
        trips = _trips([lo, hi, st], user_location())
        depth = ctx.enter_region(ir.InsertionPoint.current.block, op.body, () if trips else None)
        try:
            with ir.InsertionPoint(op.body):
                inner = _unflatten(tree, [v._rebuild(a) for a, v in zip(op.inner_iter_args, leaves)])
                result = body(_induction(op, dtype, trips), inner)
                with at_user_line():
                    new_leaves = _match(result, tree, leaves, f"the body of fori '{body.__name__}'")
                    scf.yield_([v.ir for v in new_leaves])
        finally:
            ctx.leave_region(depth)
        after_body()
        # Rebuilt from what the body returned, so that what a value knows of itself (an accumulator's
        # product still in flight) holds for the loop's result.
        return _unflatten(tree, [v._rebuild(r) for r, v in zip(op.results, new_leaves)])
    return decorate


class when:
    """``with nvdsl.when(cond) as branch:`` runs its body where ``cond`` holds (``scf.if``).

    ``with branch.otherwise():`` right after adds the else side.
    """

    def __init__(self, condition):
        self._ctx = current_kernel("nvdsl.when")
        if not (isinstance(condition, Value) and condition.dtype.is_bool):
            raise TraceError(f"nvdsl.when needs a traced bool condition, got {condition!r}",
                             code="bad-condition",
                             hint="compare traced values, e.g. nvdsl.when(tid < n); a Python bool "
                                  "is known while tracing: use a plain Python 'if'",
                             loc=user_location())
        with at_user_line():
            self._op = scf.IfOp(condition.ir, [], has_else=True)
            with ir.InsertionPoint(self._op.else_block):
                scf.yield_([])
        self._parent, self._condition = ir.InsertionPoint.current.block, condition.exact
        self._ip = self._depth = None

    def __enter__(self) -> "when":
        self._ip = ir.InsertionPoint(self._op.then_block)
        self._ip.__enter__()
        self._depth = self._ctx.enter_region(self._parent, self._op.then_block, self._condition)
        return self

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                with at_user_line():
                    scf.yield_([])
        finally:
            self._ctx.leave_region(self._depth)
            self._ip.__exit__(*exc)

    def otherwise(self) -> "_Otherwise":
        """The else side of this branch, as a context manager."""
        return _Otherwise(self._op)


class _Otherwise:
    def __init__(self, op):
        self._op = op
        self._ip = None

    def __enter__(self):
        block = self._op.else_block
        terminator = block.operations[len(block.operations) - 1]
        self._ip = ir.InsertionPoint(terminator)  # insert before the else side's scf.yield
        self._ip.__enter__()
        return self

    def __exit__(self, *exc):
        self._ip.__exit__(*exc)


def cond(predicate, then_fn, else_fn):
    """``then_fn()`` if ``predicate`` else ``else_fn()``, as traced values (``scf.if`` with results).

    Both functions take no arguments and return the same structure of values
    (Python numbers take the dtype of the other side); register tiles and vectors of one layout
    may be returned too (e.g. a tile masked only on the blocks that need it).
    """
    current_kernel("nvdsl.cond")
    if not (isinstance(predicate, Value) and predicate.dtype.is_bool):
        raise TraceError(f"nvdsl.cond needs a traced bool predicate, got {predicate!r}",
                         code="bad-condition",
                         hint="pass a traced comparison such as ctx.thread_id.x < n; for a Python bool, use an "
                              "ordinary if", loc=user_location())
    with at_user_line():
        draft = scf.IfOp(predicate.ir, [], has_else=True)
    with ir.InsertionPoint(draft.then_block):
        then_result = then_fn()
    with ir.InsertionPoint(draft.else_block):
        else_result = else_fn()
    then_leaves, tree = _flatten(then_result, "the then-branch of nvdsl.cond", allow_numbers=True)
    else_leaves, else_tree = _flatten(else_result, "the else-branch of nvdsl.cond", allow_numbers=True)
    if tree != else_tree:
        raise TraceError("the branches of nvdsl.cond return different structures",
                         code="branch-mismatch",
                         hint="return the same structure (the same tuple, list or dict shape) from both branches",
                         loc=user_location())
    with at_user_line():
        pairs = []
        for a, b in zip(then_leaves, else_leaves):
            if _is_fragment(a) or _is_fragment(b):  # register tiles and vectors
                if type(a) is not type(b) or getattr(a, "layout", None) != getattr(b, "layout", None) or \
                        a.dtype != b.dtype:
                    raise TraceError(f"the branches of nvdsl.cond return {a!r} and {b!r} at the same place",
                                     code="branch-mismatch",
                                     hint="return tiles of one type, layout and dtype from both branches at each place",
                                     loc=user_location())
                pairs.append((a, b))
                continue
            if not isinstance(a, Value) and not isinstance(b, Value):
                raise TraceError("both branches of nvdsl.cond return a Python number at the same place; "
                                 "its dtype is unknown", code="branch-mismatch",
                                 hint="wrap one in nvdsl.constant(value, dtype)", loc=user_location())
            dtype = (a if isinstance(a, Value) else b).dtype
            with ir.InsertionPoint(draft.then_block):  # a Python number becomes a constant in its branch
                a = as_value(a, dtype, "the then-branch of nvdsl.cond")
            with ir.InsertionPoint(draft.else_block):
                b = as_value(b, dtype, "the else-branch of nvdsl.cond")
            pairs.append((a, b))
        with ir.InsertionPoint(draft.then_block):
            then_values = [a.ir for a, _ in pairs]   # a tile's .ir packs its values here, in its branch
            scf.yield_(then_values)
        with ir.InsertionPoint(draft.else_block):
            scf.yield_([b.ir for _, b in pairs])
        final = scf.IfOp(predicate.ir, [v.type for v in then_values], has_else=True,
                         ip=ir.InsertionPoint(draft))
        for source, target in ((draft.then_block, final.then_block), (draft.else_block, final.else_block)):
            for operation in list(source.operations):
                operation.detach_from_parent()
                ir.InsertionPoint(target).insert(operation)
        draft.erase()
        results = [a._rebuild(r) if _is_fragment(a) else Value(r, a.dtype)
                   for r, (a, _) in zip(final.results, pairs)]
    return _unflatten(tree, results)


def _is_fragment(x) -> bool:
    """A register tile or vector (or accumulator): one MLIR value to carry, rebuilt by ``_rebuild``."""
    return hasattr(x, "_rebuild") and not isinstance(x, Value)


# A C conversion such as %d, %5.2f, %lld or %s (a '%' before a space, a digit run and such is text).
_C_SPECIFIER = re.compile(r"%[-+#0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[diouxXeEfFgGcs]")
_PRINTF_SPEC = {"i": {8: "%d", 16: "%d", 32: "%d", 64: "%lld"},
                "u": {8: "%u", 16: "%u", 32: "%u", 64: "%llu"}}


def print_(fmt: str, *values) -> None:
    """Device-side printf: ``nvdsl.print("block {} thread {}", ctx.block_id.x, ctx.thread_id.x)``.

    Each ``{}`` takes the next argument: a traced value (printed by its dtype)
    or a Python object (formatted while tracing). Every thread that reaches
    the call prints.
    """
    current_kernel("nvdsl.print")
    if not isinstance(fmt, str):
        raise TraceError("nvdsl.print needs a format string first", code="bad-print",
                         hint="pass the format string first: nvdsl.print('i={}', i)", loc=user_location())
    specifier = _C_SPECIFIER.search(fmt)
    if specifier:
        raise TraceError(f"nvdsl.print's format string holds the C specifier '{specifier.group()}', which would "
                         "print literally", code="bad-print",
                         hint="mark each value with {} (its dtype picks the format): "
                              "nvdsl.print(\"i={} x={}\", i, x)", loc=user_location())
    pieces = fmt.split("{}")
    if len(pieces) - 1 != len(values):
        raise TraceError(f"the format string has {len(pieces) - 1} '{{}}' but {len(values)} values were given",
                         code="bad-print",
                         hint="give exactly one value per {} in the format string", loc=user_location())
    with at_user_line():
        out, operands = pieces[0].replace("%", "%%"), []
        for value, piece in zip(values, pieces[1:]):
            value = python_number(value)
            if isinstance(value, Value):
                spec, operand = _printf_operand(value)
                out += spec
                operands.append(operand)
            else:
                out += str(value).replace("%", "%%")
            out += piece.replace("%", "%%")
        gpu.printf(out + "\n", *operands)


def report_and_trap(fmt: str, *values) -> None:
    """Print a report with :func:`print_` (``{}`` per value), then stop the kernel with ``trap;``: the
    launch fails with a CudaError, and the report is on stdout. For device-side checks of misuse."""
    print_(fmt, *values)
    with at_user_line():
        llvm.intr_trap()


def _printf_operand(v: Value):
    d = v.dtype
    if d.is_float:
        return "%f", convert(v, dt.float64).ir
    if d.is_bool:
        return "%d", convert(v, dt.int32).ir
    if d.kind == "index":
        return "%lld", convert(v, dt.int64).ir
    if d.bits < 32:
        return _PRINTF_SPEC[d.kind][32], convert(v, dt.int32 if d.is_signed else dt.uint32).ir
    return _PRINTF_SPEC[d.kind][d.bits], v.ir


def _flatten(tree, what: str, allow_numbers: bool = False):
    """Leaves (Values) and a hashable structure description of a nested carry."""
    leaves = []

    def walk(node):
        node = python_number(node)
        if isinstance(node, Value) or hasattr(node, "_rebuild"):  # Values, register tiles and vectors
            leaves.append(node)
            return "*"
        if allow_numbers and isinstance(node, (bool, int, float)):
            leaves.append(node)
            return "*"
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return (type(node), tuple(walk(x) for x in node))
        if isinstance(node, (tuple, list)):
            return (type(node), tuple(walk(x) for x in node))
        if isinstance(node, dict):
            keys = tuple(node)
            return (dict, keys, tuple(walk(node[k]) for k in keys))
        raise TraceError(f"{what} holds {type(node).__name__} {node!r}; only traced values and "
                         "tuples, lists and dicts of them can be carried", code="bad-carry",
                         hint="make numbers traced with nvdsl.constant(value, dtype)", loc=user_location())
    return leaves, walk(tree)


def _unflatten(tree, leaves):
    it = iter(leaves)

    def build(node):
        if node == "*":
            return next(it)
        if node[0] is dict:
            return {k: build(n) for k, n in zip(node[1], node[2])}
        kind, children = node
        items = [build(n) for n in children]
        if hasattr(kind, "_fields"):
            return kind(*items)
        return kind(items)
    return build(tree)


def _match(result, tree, leaves, what: str):
    new_leaves, new_tree = _flatten(result, what, allow_numbers=True)
    if new_tree != tree:
        raise TraceError(f"{what} returned a different structure than the carry it was given",
                         code="bad-carry",
                         hint="return the carry in the structure it was given (the same tuple, list or dict shape)",
                         loc=user_location())
    matched = []
    for new, old in zip(new_leaves, leaves):
        if isinstance(old, Value):
            matched.append(as_value(new, old.dtype, what))
        elif type(new) is type(old) and new.ir.type == old.ir.type and \
                getattr(new, "layout", None) == getattr(old, "layout", None):  # register tiles: one layout
            matched.append(new)
        else:
            raise TraceError(f"{what} returned {new!r} where the carry holds {old!r}", code="bad-carry",
                             hint="at each place of the carry, return a value of its dtype or a tile of its type and "
                                  "layout", loc=user_location())
    return matched
