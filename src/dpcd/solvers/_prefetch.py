"""Software prefetch for the kernels that read rows at random (``llvm.prefetch``).

Rows drawn by Poisson sampling are far apart in memory: once X outgrows the
caches each one costs a memory round trip. The kernels know their next rows
before they need them (the sampling is drawn ahead), so they hint the CPU to
fetch them early. A hint only: results do not depend on it.
"""
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


def _emit(builder, ptr):
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch")
    # read, high temporal locality, data cache
    builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])


@intrinsic
def prefetch(typingctx, arr, i):
    """Hint the CPU to fetch the cache line of ``arr[i]`` (1-d array)."""
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        _emit(builder, cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch2(typingctx, arr, i, j):
    """Hint the CPU to fetch the cache line of ``arr[i, j]`` (2-d array)."""
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        _emit(builder, cgutils.get_item_pointer(context, builder, aryty, ary,
                                                [args[1], args[2]]))
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always")
def prefetch_row(X, i):
    """Prefetch every cache line of row ``i`` of C-ordered ``X`` (8 doubles a line;
    a row not aligned to a line spills into one more, hence the last element)."""
    p = X.shape[1]
    for j in range(0, p, 8):
        prefetch2(X, i, j)
    prefetch2(X, i, p - 1)
