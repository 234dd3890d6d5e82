"""A prefetch hint for compiled loops that read rows out of order.

A loop over rows drawn at random (Pegasos' steps) waits on memory for each row: its data and
indices are far apart and not in any cache. Asking for a row some steps before it is read
(``llvm.prefetch``) lets those loads overlap the steps in between; the hint changes no value.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

READ, KEEP_IN_ALL_LEVELS, DATA = 0, 3, 1  # llvm.prefetch's rw, locality and cache type


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (a 1-d array) will be read soon; returns None."""

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, args[0])
        address = cgutils.get_item_pointer(context, builder, array_type, data, [args[1]])
        byte_pointer, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]),
            "llvm.prefetch.p0i8",
        )
        builder.call(
            hint,
            [builder.bitcast(address, byte_pointer), i32(READ), i32(KEEP_IN_ALL_LEVELS), i32(DATA)],
        )
        return context.get_dummy_value()

    return types.none(array, index), codegen
